//go:build linux || darwin || freebsd

package data

import "syscall"

// freeBytes returns the bytes an unprivileged writer may still use on the
// file system of path.
func freeBytes(path string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
