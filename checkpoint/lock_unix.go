//go:build unix

package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

var errLocked = errors.New("locked by another process")

// lockFileNB takes an exclusive lock on f without waiting: errLocked when
// another process holds it.
func lockFileNB(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLocked
		}
		return err
	}
}

func fileID(fi fs.FileInfo) *FileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return &FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
	}
	return nil
}
