//go:build unix

package engine

import (
	"os"
	"syscall"
)

// killSelf ends this process as a failing machine would end it: at once,
// by SIGKILL, with no deferred function run.
func killSelf() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
