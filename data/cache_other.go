//go:build !unix

package data

import (
	"fmt"
	"io"
	"os"
)

// mapFile reads the first size bytes of f into memory, where the system
// has no mmap through package syscall. Go allocates a block of this size
// (a multiple of 64 bytes) at an address aligned to at least 8, as the
// int64 arrays pointed into it need.
func mapFile(f *os.File, size int) ([]byte, error) {
	mem := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, int64(size)), mem); err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	return mem, nil
}

func unmapFile([]byte) {}
