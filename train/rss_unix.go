//go:build unix

package train

import (
	"runtime"
	"syscall"
)

// maxRSS returns the peak resident memory of the process in bytes, 0 when
// unknown.
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes there, KiB elsewhere
	}
	return int64(ru.Maxrss) * 1024
}
