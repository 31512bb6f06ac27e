//go:build darwin || freebsd || netbsd

package data

import (
	"os"
	"syscall"
)

// sysSource adds the change time, inode and device of a file to its
// identity (these systems name the change time Ctimespec).
func sysSource(s *source, fi os.FileInfo) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ctime = st.Ctimespec.Nano()
		s.ino, s.dev = uint64(st.Ino), uint64(st.Dev)
	}
}
