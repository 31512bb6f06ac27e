// Package reexec restarts the process as itself, once, with variables
// added to its environment that must be there before it starts: those a C
// library reads as it loads (OpenBLAS's kernels) or that the C runtime
// reads at its first allocation (malloc's arenas). Whatever needs such a
// variable says so (kernel.BLASEnv, memory.StartEnv), and the command's
// main hands them all to With first thing, so that the process restarts
// at most once.
package reexec
