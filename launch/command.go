package launch

import (
	"fmt"
	"os"
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

	fewer bool // a restart has run on fewer ranks than the job began on
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
	// No checkpoint yet: the job starts again; the failed attempt's log
	// is kept beside the new one's.
	if fi, err := os.Stat(c.Log); c.Log != "" && err == nil && fi.Mode().IsRegular() {
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
