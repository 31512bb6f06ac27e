//go:build !unix

package memory

// rlimits knows no resource limits here.
func rlimits(func(int64, string, string)) {}

// StartEnv has nothing to ask for here.
func StartEnv() string { return "" }
