//go:build unix && !(darwin || freebsd || netbsd)

package data

import (
	"os"
	"syscall"
)

// sysSource adds the change time, inode and device of a file to its
// identity.
func sysSource(s *source, fi os.FileInfo) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ctime = st.Ctim.Nano()
		s.ino, s.dev = uint64(st.Ino), uint64(st.Dev)
	}
}
