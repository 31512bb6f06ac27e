//go:build !unix

package reexec

// With cannot restart a process here: it does nothing.
func With(env ...string) {}
