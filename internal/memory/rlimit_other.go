//go:build !unix

package memory

// rlimits knows no resource limits here.
func rlimits(func(int64, string, string)) {}

// Reexec has nothing to do here.
func Reexec() {}
