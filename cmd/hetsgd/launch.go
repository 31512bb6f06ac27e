package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/launch"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/train"
)

// runLaunch is "hetsgd launch": it runs a train job — under mpirun or in
// one process — and restarts it from its last checkpoint when it fails,
// as torchrun's --max-restarts does. The job's command follows "--"; it
// must give the job a checkpoint folder (--checkpoint, or --resume). A
// restart is the same command with --resume of that folder added (and
// --config and the job's rank faults taken out: the checkpoint holds the
// settings, and the faults struck the job that failed); before the first
// checkpoint, the command again, the failed attempt's log kept beside its
// own as LOG.failed-N. With --min-ranks, an attempt that fails before its
// first step (a machine that is gone cannot start its rank) is followed by
// one on a rank fewer, down to the minimum: a resumed job keeps its
// devices, shared over fewer ranks.
func runLaunch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("launch", "launch [--max-restarts N] [--min-ranks M] [--grace SECONDS] -- [mpirun …] hetsgd train --checkpoint DIR …\n\n"+
		"Runs a training job and restarts it from its last checkpoint when it fails: a rank or a host\n"+
		"that dies, a process that stalls and is ended. Every failure and restart is said on stderr and\n"+
		"written into the run log (a restart record, with the work lost and the time to recover).", stderr)
	maxRestarts := fs.Int("max-restarts", 3, "restarts at most, before giving up")
	minRanks := fs.Int("min-ranks", 0, "under mpirun: after an attempt that fails before its first step, restart on a rank fewer, down to this many (0: always as many)")
	grace := fs.Float64("grace", 10, "`seconds` a job has to stop after SIGTERM (a Ctrl-C of the launcher) before it is killed")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	command := fs.Args()
	switch {
	case *maxRestarts < 0 || *maxRestarts > 1<<20:
		return fmt.Errorf("--max-restarts %d: need a whole number in [0, 1048576]", *maxRestarts)
	case *minRanks < 0:
		return fmt.Errorf("--min-ranks %d: need a whole number ≥ 0", *minRanks)
	case !(*grace >= 0 && *grace <= 3600):
		return fmt.Errorf("--grace %v: need seconds in [0, 3600]", *grace)
	case len(command) == 0:
		fmt.Fprintln(stderr, "hetsgd launch: give the job's command after --, e.g. hetsgd launch -- mpirun -np 4 ./hetsgd-mpi train --checkpoint ck")
		return errUsage
	}
	job, err := parseJob(command, stderr)
	if err != nil {
		return err
	}
	job.minRanks = *minRanks
	j := &launch.Job{Command: command, Next: job.next, MaxRestarts: *maxRestarts, Grace: time.Duration(*grace * 1e9),
		Stdout: stdout, Stderr: stderr, Say: func(line string) { fmt.Fprintf(stderr, "hetsgd launch: %s\n", line) }}
	err = j.Run(ctx)
	if errors.Is(err, launch.ErrStopped) {
		return fmt.Errorf("%w: %v", errInterrupted, err)
	}
	return err
}

// launchJob is what the launcher knows of its job's command: where its
// train arguments are, its checkpoint folder and log, and its ranks.
type launchJob struct {
	command  []string
	train    int    // index of "train" in command
	ckDir    string // the checkpoint folder a restart resumes
	log      string
	np       int  // index of mpirun's rank count in command (0: none)
	perRank  int  // devices a rank holds
	fewer    bool // a restart runs on fewer ranks than the job began on
	minRanks int
	bools    map[string]bool // train's switches, which take no separate value
}

// parseJob reads the job's command as hetsgd train would read its
// arguments (a config file's too), to find its checkpoint folder and log.
func parseJob(command []string, stderr io.Writer) (*launchJob, error) {
	j := &launchJob{command: command, train: -1}
	for i, a := range command {
		if i > 0 && a == "train" {
			j.train = i
			break
		}
	}
	if j.train < 0 {
		return nil, fmt.Errorf("the job's command %q runs no hetsgd train", strings.Join(command, " "))
	}
	var f trainFlags
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse(command[j.train+1:]); err != nil {
		return nil, fmt.Errorf("the job's train arguments: %v", err)
	}
	j.bools = map[string]bool{}
	fs.VisitAll(func(fl *flag.Flag) {
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			j.bools[fl.Name] = true
		}
	})
	if f.Config != "" {
		if err := train.ApplyConfig(fs, f.Config, visited(fs), strategy.List()); err != nil {
			return nil, err
		}
	}
	switch {
	case f.Checkpoint != "":
		j.ckDir = f.Checkpoint
	case f.Resume != "":
		j.ckDir = f.Resume
		if !isDir(f.Resume) {
			j.ckDir = filepath.Dir(f.Resume)
		}
	default:
		return nil, errors.New("the job has no checkpoint folder to restart from: give its train --checkpoint DIR")
	}
	j.log = f.Log
	j.perRank = f.DevicesPerRank
	for i := 1; i < j.train; i++ {
		if slices.Contains([]string{"-np", "-n", "--np", "-c"}, command[i]) && i+1 < j.train {
			if n, err := strconv.Atoi(command[i+1]); err == nil {
				j.np = i + 1
				if visited(fs)["devices"] && n > 0 && f.Devices%n == 0 {
					j.perRank = f.Devices / n
				}
			}
		}
	}
	return j, nil
}

// next is the command of a restart (see runLaunch).
func (j *launchJob) next(attempt int, f *launch.Restart, started bool) ([]string, error) {
	cmd := slices.Clone(j.command[:j.train+1])
	if j.np > 0 {
		n, _ := strconv.Atoi(cmd[j.np])
		if !started && n > j.minRanks && j.minRanks > 0 {
			n-- // it could not start on as many: a machine may be gone
			cmd[j.np] = strconv.Itoa(n)
			j.command[j.np] = cmd[j.np]
			j.fewer = true
		}
		f.Ranks = n
	}
	args := j.command[j.train+1:]
	_, err := checkpoint.Latest(j.ckDir)
	fresh := err != nil
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") {
			cmd = append(cmd, args[i])
			continue
		}
		takesValue := !j.bools[name]
		if !hasValue && takesValue && i+1 < len(args) {
			value = args[i+1]
		}
		drop := false
		switch name {
		case "fault":
			x, err := engine.ParseFault(value)
			drop = err == nil && x.OnRank // it struck the job that failed
		case "config", "resume":
			drop = !fresh // the checkpoint holds the settings; --resume is added
		case "devices", "devices-per-rank":
			drop = j.fewer && !fresh // given below, for the ranks left
		}
		if !drop {
			cmd = append(cmd, args[i])
			if !hasValue && takesValue && i+1 < len(args) {
				cmd = append(cmd, args[i+1])
			}
		}
		if !hasValue && takesValue {
			i++
		}
	}
	if !fresh {
		if j.fewer {
			// Each rank left holds as many devices as each did: the run
			// goes on from its model on fewer devices.
			cmd = append(cmd, "--devices-per-rank", strconv.Itoa(j.perRank))
		}
		return append(cmd, "--resume", j.ckDir), nil
	}
	// No checkpoint yet: the job starts again; the failed attempt's log
	// is kept beside the new one's.
	if j.log != "" && isRegular(j.log) {
		// A name no file has (an earlier launcher's LOG.failed-1 is kept).
		aside := fmt.Sprintf("%s.failed-%d", j.log, attempt)
		for k := 1; exists(aside); k++ {
			aside = fmt.Sprintf("%s.failed-%d.%d", j.log, attempt, k)
		}
		if err := os.Rename(j.log, aside); err != nil {
			return nil, fmt.Errorf("keeping the failed attempt's log: %w", err)
		}
	}
	return cmd, nil
}
