//go:build unix && !linux

package launch

import "syscall"

// sessionAttr: no parent-death signal here (it is Linux's and FreeBSD's,
// and Go offers it on Linux only).
func sessionAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// leaderCommand is cmd itself: without a parent-death signal there is no
// signal to pass on once.
func leaderCommand(cmd []string) []string { return cmd }

type proc struct {
	pid     int
	comm    string
	state   byte
	threads int
}

// jobProcs cannot list a session's processes here: killJob kills the
// leader's group, and stopped processes go unseen (--hang-timeout sees
// the job's progress stop).
func jobProcs(int) ([]proc, bool) { return nil, false }
