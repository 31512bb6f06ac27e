//go:build unix

package data

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f, private and writable.
func mapFile(f *os.File, size int) ([]byte, error) {
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return mem, nil
}

func unmapFile(mem []byte) { syscall.Munmap(mem) }
