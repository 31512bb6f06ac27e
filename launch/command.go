package launch

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/checkpoint"
)

// Command is a training job's command line as its restarts rewrite it
// (its Next is a Job's): the command again, without the arguments Drop
// takes out; once the job has a checkpoint, resuming it (Resume's
// arguments added); before that, starting over, the failed attempt's log
// set aside (SetAside). Under mpirun, with MinRanks, an attempt that failed
// before its first step is followed by one on a rank fewer, down to
// MinRanks: a machine that is gone cannot start its rank.
//
// The launcher renames only what its job made. Before each attempt (its
// Before is a Job's) it refuses a checkpoint folder that another process
// is using — a job already running there, whose log the restart would set
// aside — and one that holds checkpoints the job does not resume (its run
// would be refused them, and a restart must not resume another run's); and
// it notes the log as it is, so that a restart sets aside only a log the
// failed attempt wrote, never a file it left as it was.
//
// Command knows how a command line is built — flags with their values,
// mpirun's rank count — and what a checkpoint folder holds; the training
// program's own flags are its caller's, through Switches, Drop and Resume.
type Command struct {
	// Args is the job's command: [mpirun …] PROGRAM SUBCOMMAND ARGS….
	Args []string
	// Sub is the index in Args of the training program's subcommand; the
	// arguments after it are rewritten, those up to it kept.
	Sub int
	// Ranks is the index in Args of mpirun's rank count (0: not under
	// mpirun; see RankCount), MinRanks the fewest ranks a restart runs on
	// (0: always as many as the job began on).
	Ranks, MinRanks int
	// Checkpoint is the folder of checkpoints a restart resumes; Log the
	// job's run log ("": none).
	Checkpoint, Log string
	// Switches are the training program's flags that take no separate
	// value (booleans): "--force x" is a switch and an argument.
	Switches map[string]bool
	// Drop says whether a restart leaves out flag name (without its
	// dashes) given value: resumed says whether the restart resumes the
	// checkpoint folder, fewer whether it runs on fewer ranks than the job
	// began on. nil keeps every argument.
	Drop func(name, value string, resumed, fewer bool) bool
	// Resume (required) returns the arguments that make a restart resume
	// dir, on fewer ranks than the job began on when fewer.
	Resume func(dir string, fewer bool) []string
	// Resumes says the job's own command resumes Checkpoint: the
	// checkpoints in it are the job's.
	Resumes bool

	fewer     bool        // a restart has run on fewer ranks than the job began on
	started   bool        // Before was called: an attempt started
	logBefore fs.FileInfo // the log before the last attempt (nil: none)
}

// Before checks, before an attempt, that the checkpoint folder is the
// job's to use (see Command), and notes the log as it is then.
func (c *Command) Before() error {
	if err := checkpoint.Dir(c.Checkpoint).InUse(); err != nil {
		return fmt.Errorf("launch: not starting the job: %w; the launcher starts no job on a folder in use, and sets aside no log of another job's", err)
	}
	if last, err := checkpoint.Latest(c.Checkpoint); err == nil && !c.Resumes && !c.started {
		return fmt.Errorf("launch: not starting the job: its checkpoint folder %s holds checkpoints already (the last %s), which a new run is refused: to continue them, give the job --resume %s rather than --checkpoint; else name another folder", c.Checkpoint, filepath.Base(last), c.Checkpoint)
	}
	c.started = true
	c.logBefore = nil
	if fi, err := os.Lstat(c.Log); c.Log != "" && err == nil {
		c.logBefore = fi
	}
	return nil
}

// madeByAttempt reports whether the log is a regular file that the last
// attempt wrote: none was there before it, or another file, or the same
// one written since (a job given --force writes its log over the file in
// place). A file the attempt left as it was — its job refused it — is not
// the attempt's to set aside.
func (c *Command) madeByAttempt() bool {
	fi, err := os.Lstat(c.Log)
	if c.Log == "" || err != nil || !fi.Mode().IsRegular() {
		return false
	}
	b := c.logBefore
	return b == nil || !os.SameFile(fi, b) || fi.Size() != b.Size() || !fi.ModTime().Equal(b.ModTime())
}

// Next returns the command of restart attempt (1, 2, …) after failure f;
// started says whether the attempt that failed got to its first step. It
// sets f.Ranks to the ranks the restart runs on (under mpirun).
func (c *Command) Next(attempt int, f *Restart, started bool) ([]string, error) {
	cmd := slices.Clone(c.Args[:c.Sub+1])
	if c.Ranks > 0 {
		n, _ := strconv.Atoi(cmd[c.Ranks])
		if !started && n > c.MinRanks && c.MinRanks > 0 {
			n-- // it could not start on as many: a machine may be gone
			cmd[c.Ranks] = strconv.Itoa(n)
			c.Args[c.Ranks] = cmd[c.Ranks] // the next restart counts down from here
			c.fewer = true
		}
		f.Ranks = n
	}
	_, err := checkpoint.Latest(c.Checkpoint)
	resumed := err == nil
	args := c.Args[c.Sub+1:]
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") {
			cmd = append(cmd, args[i])
			continue
		}
		takesValue := !c.Switches[name]
		if !hasValue && takesValue && i+1 < len(args) {
			value = args[i+1]
		}
		if c.Drop == nil || !c.Drop(name, value, resumed, c.fewer) {
			cmd = append(cmd, args[i])
			if !hasValue && takesValue && i+1 < len(args) {
				cmd = append(cmd, args[i+1])
			}
		}
		if !hasValue && takesValue {
			i++
		}
	}
	if resumed {
		return append(cmd, c.Resume(c.Checkpoint, c.fewer)...), nil
	}
	// No checkpoint yet: the job starts again; the failed attempt's log,
	// if it made one, is kept beside the new one's — unless another
	// process took the folder meanwhile: the log may be its job's.
	if c.madeByAttempt() {
		if err := checkpoint.Dir(c.Checkpoint).InUse(); err != nil {
			return nil, fmt.Errorf("launch: not restarting the job: %w; the launcher sets aside no log of another job's", err)
		}
		if _, err := SetAside(c.Log, attempt); err != nil {
			return nil, err
		}
	}
	return cmd, nil
}

// SetAside renames the log of failed attempt (1, 2, …) to LOG.failed-N, or
// LOG.failed-N.K for the first K that names no file: an earlier launcher's
// failed log of that name is kept. It returns the new name.
func SetAside(log string, attempt int) (string, error) {
	aside := fmt.Sprintf("%s.failed-%d", log, attempt)
	for k := 1; ; k++ {
		if _, err := os.Stat(aside); err != nil {
			break
		}
		aside = fmt.Sprintf("%s.failed-%d.%d", log, attempt, k)
	}
	if err := os.Rename(log, aside); err != nil {
		return "", fmt.Errorf("keeping the failed attempt's log: %w", err)
	}
	return aside, nil
}

// UnderMPI reports whether launcher, the part of a job's command before
// the hetsgd program, starts it under an MPI launcher (mpirun, mpiexec,
// orterun), rather than under a wrapper such as env, nice or taskset, or
// none.
func UnderMPI(launcher []string) bool {
	return slices.ContainsFunc(launcher, func(a string) bool {
		switch filepath.Base(a) {
		case "mpirun", "mpiexec", "orterun":
			return true
		}
		return false
	})
}

// RankCount finds mpirun's rank count in a launcher's arguments (mpirun
// -np N …, or -n, --np, -c): its index, and the count; index 0 when there
// is none.
func RankCount(launcher []string) (index, n int) {
	for i := 1; i+1 < len(launcher); i++ {
		if slices.Contains([]string{"-np", "-n", "--np", "-c"}, launcher[i]) {
			if v, err := strconv.Atoi(launcher[i+1]); err == nil {
				index, n = i+1, v
			}
		}
	}
	return index, n
}
