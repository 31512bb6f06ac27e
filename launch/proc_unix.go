//go:build unix

package launch

import (
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// A job's processes. Run starts the job as the leader of a session of its
// own (setsid), not only of a process group: Open MPI puts each rank in a
// process group of its own, but every process the job starts on this host
// stays in the session. So the job, whole, is the session: what Run ends
// (killJob) and watches for stopped processes (jobProcs, where the system
// lists them).
//
// The launcher itself may die without ending the job — killed by SIGKILL,
// or by the machine's OOM killer. So that the job does not outlive it, the
// leader is given a parent-death signal where the system has one (Linux):
// SIGTERM when the launcher dies, however it dies, passed on once to the
// job's command (see leaderCommand). mpirun ends its ranks at it, here and
// on other hosts, and kills those that have not ended after its own
// timeout; a training process stops cleanly at it. (SIGTERM rather than
// SIGKILL: mpirun killed outright leaves its ranks running, orphaned.)

// ownSession makes c the leader of a session of its own, with the
// parent-death signal where there is one.
func ownSession(c *exec.Cmd) { c.SysProcAttr = sessionAttr() }

// terminate asks the attempt to stop: SIGTERM to its leader (mpirun, which
// passes it on to every rank, or the one process).
func terminate(c *exec.Cmd) { c.Process.Signal(syscall.SIGTERM) }

// killJob kills what is left of the attempt: its leader's process group
// and every process of its session, and waits (up to goneWithin) until
// none of them runs any more — each gone, or a zombie all of whose threads
// have ended — so that a restart finds what the job held (its checkpoint
// folder's lock) let go; and a little more (up to reapWithin) for the
// zombies to be reaped: a rank that mpirun killed as it exited is an
// orphan that init reaps, and until then its process id still names a
// process, to which the restarted job would take the temporary file of a
// checkpoint it was writing for a live writer's, and leave it.
func killJob(c *exec.Cmd) {
	if c.Process == nil {
		return
	}
	sid := c.Process.Pid
	syscall.Kill(-sid, syscall.SIGKILL)
	start := time.Now()
	for {
		procs, ok := jobProcs(sid)
		live := 0
		for _, p := range procs {
			if p.state != 'Z' || p.threads > 1 {
				syscall.Kill(p.pid, syscall.SIGKILL)
				live++
			}
		}
		waited := time.Since(start)
		if !ok || len(procs) == 0 || live == 0 && waited > reapWithin || waited > goneWithin {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// goneWithin bounds how long killJob waits for a killed job's processes
// to end: SIGKILL ends them at once, unless one is in the kernel's
// uninterruptible sleep (a hung network file system). reapWithin bounds
// how long it waits for their zombies to be reaped: at once by a system's
// init, within a second or so by a container's, never by some.
const (
	goneWithin = 10 * time.Second
	reapWithin = 2 * time.Second
)

// signalOf names the signal that ended an attempt ("" if none did): its
// leader's, or, as the leader shell reports its child's and mpirun one of
// its ranks' by the exit status 128 + N, the command's or a rank's.
func signalOf(ee *exec.ExitError) string {
	if s, ok := signalNumber(ee); ok {
		return signalName(s)
	}
	return ""
}

// signalNumber returns the signal that ended an attempt: its leader's, or
// the 128 + N of its exit status (a shell's, or mpirun's for a rank).
func signalNumber(ee *exec.ExitError) (syscall.Signal, bool) {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal(), true
	}
	if code := ee.ExitCode(); code > 128 && code < 128+65 {
		return syscall.Signal(code - 128), true
	}
	return 0, false
}

// stopSignal reports whether an attempt ended by a signal that asks a
// process to stop — SIGINT (Ctrl-C), SIGTERM (a scheduler, kill), SIGHUP
// (a closed terminal) — rather than one of a crash or of the kernel's
// (SIGKILL, SIGSEGV, SIGBUS, SIGABRT).
func stopSignal(ee *exec.ExitError) bool {
	s, ok := signalNumber(ee)
	return ok && (s == syscall.SIGINT || s == syscall.SIGTERM || s == syscall.SIGHUP)
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
