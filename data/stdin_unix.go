//go:build unix

package data

import (
	"os"
	"syscall"
)

// stdin returns a copy of the standard input's descriptor, so that closing
// it (a load does, to stop a blocked read) leaves the process's own open.
func stdin() (*os.File, error) {
	fd, err := syscall.Dup(int(os.Stdin.Fd()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), stdinName), nil
}
