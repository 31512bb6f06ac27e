package launch

import (
	"fmt"
	"os/exec"
)

// cause is how an attempt ended, as the launcher tells it.
type cause struct {
	// text is what happened: "exit status 1", "killed by SIGKILL", or the
	// watch's account of a stopped or hung job.
	text string
	// final says no restart of the same command can fix it; why and fix
	// then say what it was and what to do.
	final    bool
	why, fix string
}

// classify tells a failed attempt's cause from its exit (ee), whether it
// got to its first step (began), whether it said it was called wrongly
// (usage: NoteUsageError), what the watch found (watched: nil when
// it did not end the attempt) and what mpirun said (sc: nil when the job
// is not under mpirun). A restart cannot fix (final):
//
//   - a refusal of mpirun's (mpiRefusals), which names its fix;
//   - a deliberate stop: the job ended by SIGINT, SIGTERM or SIGHUP, or,
//     having handled one, with the shell's status for it (130, 143, 129) —
//     someone, or a scheduler, stopped it;
//   - a usage error of the job's command: exit status 2 with the job's
//     word for it (NoteUsageError; without it, 2 is Go's runtime failing:
//     a panic, memory run out);
//   - an error of the job's own (an exit status of 1 to 125, not a signal's)
//     before its first step: its settings, data or folder were refused, and
//     would be again. Under mpirun only when mpirun says a rank exited with
//     an error status: mpirun's own failures (a host that cannot start its
//     rank, which --min-ranks restarts on fewer) exit 1 too.
//
// Anything else — a crash, a kill, a lost rank or host, a stopped or hung
// job, an error after the first step — is restarted.
func classify(ee *exec.ExitError, began, usage bool, watched *cause, sc *scanner, checkpoint string) cause {
	if watched != nil {
		return *watched
	}
	c := cause{text: describe(ee)}
	refusal, rankError := (*mpiRefusal)(nil), false
	if sc != nil {
		refusal, rankError = sc.seen()
	}
	resume := "launch it again with --resume of its checkpoint folder in the job's command"
	if checkpoint != "" {
		resume = "launch it again with --resume " + checkpoint + " in the job's command"
	}
	code := ee.ExitCode()
	switch {
	case refusal != nil:
		c.final, c.why, c.fix = true, refusal.why, refusal.fix
	case stopSignal(ee):
		c.final, c.why, c.fix = true, "it was stopped by a signal that asks a process to stop (someone, or a job scheduler, sent it): a deliberate stop is not restarted", "to go on, "+resume
	case code == 2 && usage:
		c.final, c.why, c.fix = true, "its command has a usage error (exit status 2; its message is above), which a restart would repeat", "fix the job's flags"
	case code >= 1 && code <= 125 && code != 2 && !began && (sc == nil || rankError):
		c.final, c.why, c.fix = true, fmt.Sprintf("it stopped on an error of its own before its first step (exit status %d; its message is above): its settings, data or checkpoint folder were refused, and would be again", code), "fix what its message names"
	}
	return c
}

// describe says how an attempt ended.
func describe(ee *exec.ExitError) string {
	if s := signalOf(ee); s != "" {
		return "killed by " + s
	}
	return fmt.Sprintf("exit status %d", ee.ExitCode())
}
