//go:build unix

package launch

import (
	"os/exec"
	"strconv"
	"syscall"
)

// ownGroup makes c the leader of a process group of its own, which mpirun's
// ranks on this host join: the group is the attempt, ended as one.
func ownGroup(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// terminate asks the attempt to stop: SIGTERM to its leader (mpirun, which
// passes it on to every rank, or the one process).
func terminate(c *exec.Cmd) { c.Process.Signal(syscall.SIGTERM) }

// killGroup kills what is left of the attempt's process group.
func killGroup(c *exec.Cmd) {
	if c.Process != nil {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
}

// signalOf names the signal that ended an attempt ("" if none did): its
// leader's, or, as mpirun reports one of its ranks' by its exit status
// 128 + N, a rank's.
func signalOf(ee *exec.ExitError) string {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return signalName(ws.Signal())
	}
	if code := ee.ExitCode(); code > 128 && code < 128+65 {
		return signalName(syscall.Signal(code-128)) + " (exit status " + strconv.Itoa(code) + ")"
	}
	return ""
}

// signalName names a signal as kill -l does: SIGKILL.
func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT",
		syscall.SIGHUP: "SIGHUP", syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS"}
	if n, ok := names[s]; ok {
		return n
	}
	return "signal " + strconv.Itoa(int(s)) + " (" + s.String() + ")"
}
