// Package atomicfile writes files so that a name holds either its whole new
// content or what it held before: never half a file.
//
// A File is written under a temporary name beside its target and renamed
// onto it by Commit, after an fsync; Abort (or a crash, or kill -9) leaves
// the target untouched. Temporary files of processes that died are removed
// by the next Create of the same target, so killed writers leave nothing
// behind for long. Create also refuses to replace what is not a regular
// file (a device node, a symbolic link, a FIFO, a folder), and Inputs
// checks that an output is none of a command's inputs.
//
// The package is internal: its errors name the file and what is wrong, not
// the package, and its callers wrap them with what they were writing.
package atomicfile
