package launch

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

func sessionAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
}

// The parent-death signal is sent at each death of the thread the child
// is a child of: when the launcher's threads die one after another, its
// child is handed to the next and signalled again, and a child of many
// threads is signalled once for each. mpirun, which Open MPI ends in an
// orderly way at a first SIGTERM (its ranks sent SIGCONT, SIGTERM, then
// SIGKILL), takes a second as "stop now" and exits at once, leaving its
// ranks running; a training process takes a second as "stop at once" too,
// without its last checkpoint. So the job's leader is a shell (one thread)
// that runs the job's command as its child, passes on the first SIGTERM it
// gets — its parent-death signal, or the launcher's own stop — and no
// other, and exits with the child's status (128 + N for a child a signal
// ended).
//
// The shell's own messages ("Killed", of a child a signal ended) go
// nowhere: the job's stderr is the child's alone.
//
// The trap is set before the child starts, so that a signal that comes
// while it starts is not lost: it is passed on once the child's id is
// known.
const leaderScript = `exec 3>&2 2>/dev/null
trap '[ -n "$stopping" ] || { stopping=1; [ -z "$pid" ] || kill -TERM $pid; }' TERM
"$@" 2>&3 3>&- & pid=$!
[ -z "$stopping" ] || kill -TERM $pid
while :; do wait $pid; st=$?; kill -0 $pid || exit $st; done`

// leaderCommand is the command that runs cmd under the leader shell.
func leaderCommand(cmd []string) []string {
	return append([]string{"/bin/sh", "-c", leaderScript, "hetsgd-launch"}, cmd...)
}

// proc is a process as /proc/PID/stat describes it.
type proc struct {
	pid   int
	comm  string // its program's name, at most 15 bytes
	state byte   // R, S, D, T (stopped by a signal), t (stopped by a debugger), Z…
	// threads is how many threads it has: a process whose first thread
	// has ended shows Z while its others still end (and hold its files).
	threads int
}

// jobProcs lists the processes of session sid (the job's), from /proc;
// false where it cannot be read.
func jobProcs(sid int) ([]proc, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // ended since the listing
		}
		// pid (comm) state ppid pgrp session …: comm may hold spaces and
		// parentheses, so the fields are read after its last ')'.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 4 {
			continue
		}
		if session, err := strconv.Atoi(f[3]); err == nil && session == sid && len(f[0]) == 1 {
			threads := 1
			if len(f) > 17 {
				threads, _ = strconv.Atoi(f[17])
			}
			out = append(out, proc{pid: pid, comm: s[open+1 : end], state: f[0][0], threads: threads})
		}
	}
	return out, true
}
