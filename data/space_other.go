//go:build !(linux || darwin || freebsd)

package data

// freeBytes is not known here: the free space is not checked.
func freeBytes(string) (uint64, bool) { return 0, false }
