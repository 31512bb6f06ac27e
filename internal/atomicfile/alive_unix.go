//go:build unix

package atomicfile

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// alive reports whether a process with id pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// umask is the process's file mode creation mask, read once: Linux shows
// it in /proc/self/status; elsewhere it is read by setting it and setting it
// back, at start-up, before any other goroutine creates a file.
var umask = func() os.FileMode {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return os.FileMode(m)
				}
			}
		}
	}
	m := syscall.Umask(0o022)
	syscall.Umask(m)
	return os.FileMode(m)
}()

// noFollow makes an open fail on a symbolic link (ELOOP) rather than
// follow it.
const noFollow = syscall.O_NOFOLLOW

// links returns the number of names (hard links) of a file.
func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
