package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
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
// devices, shared over fewer ranks. A failure no restart can fix (a usage
// error, settings or a folder refused, a deliberate stop, mpirun's own
// refusals) ends the launcher at once, naming the fix; a job stopped or
// hung is ended and restarted (see package launch).
func runLaunch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("launch", "launch [--max-restarts N] [--min-ranks M] [--grace S] [--stop-timeout S] [--hang-timeout S] -- [mpirun …] hetsgd train --checkpoint DIR …\n\n"+
		"Runs a training job and restarts it from its last checkpoint when it fails: a rank or a host\n"+
		"that dies, a process that stalls, is stopped or hangs and is ended. A failure no restart can fix\n"+
		"(a usage error, settings or a folder refused before the first step, a stop by SIGINT or SIGTERM,\n"+
		"mpirun's too few slots) ends it at once, naming the fix. Every failure and restart is said on\n"+
		"stderr and written into the run log (a restart record, with the work lost and the time to recover).", stderr)
	maxRestarts := fs.Int("max-restarts", 3, "restarts at most, before giving up")
	minRanks := fs.Int("min-ranks", 0, "under mpirun: after an attempt that fails before its first step, restart on a rank fewer, down to this many (0: always as many)")
	grace := fs.Float64("grace", 10, "`seconds` a job has to stop after SIGTERM (a Ctrl-C of the launcher) before it is killed")
	stopAfter := fs.Float64("stop-timeout", 30, "`seconds` one of the job's processes on this host may stay stopped (SIGSTOP) before the job is taken for failed, ended and restarted (0: never)")
	hangAfter := fs.Float64("hang-timeout", 0, "`seconds` the job may go without progress after its first step before it is taken for hung, ended and restarted (0: never); set it above the longest evaluation or checkpoint, which report none")
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
	case !(*stopAfter >= 0 && *stopAfter <= 1e6) || !(*hangAfter >= 0 && *hangAfter <= 1e6):
		return fmt.Errorf("--stop-timeout %v, --hang-timeout %v: need seconds in [0, 1000000] (0: never)", *stopAfter, *hangAfter)
	case len(command) == 0:
		fmt.Fprintln(stderr, "hetsgd launch: give the job's command after --, e.g. hetsgd launch -- mpirun -np 4 ./hetsgd-mpi train --checkpoint ck")
		return errUsage
	}
	job, err := parseJob(command, stderr)
	if err != nil {
		return err
	}
	job.MinRanks = *minRanks
	j := &launch.Job{Command: command, Next: job.Next, Before: job.Before, MaxRestarts: *maxRestarts, Grace: time.Duration(*grace * 1e9),
		MPI: launch.UnderMPI(command[:job.Sub]), StopTimeout: time.Duration(*stopAfter * 1e9), HangTimeout: time.Duration(*hangAfter * 1e9), Checkpoint: job.Checkpoint,
		Stdout: stdout, Stderr: stderr, Say: func(line string) { fmt.Fprintf(stderr, "hetsgd launch: %s\n", line) }}
	err = j.Run(ctx)
	if errors.Is(err, launch.ErrStopped) {
		return fmt.Errorf("%w: %v", errInterrupted, err)
	}
	return err
}

// launchJob is the launcher's job: its command, which launch.Command
// rewrites for each restart by the rules of train's flags (see runLaunch).
type launchJob struct {
	launch.Command
	perRank int // devices a rank holds
}

// parseJob reads the job's command as hetsgd train would read its
// arguments (a config file's too), to find its checkpoint folder and log,
// and refuses at once what train would refuse before any work and a
// restart could not change: settings out of range, and a log or folder
// naming one of the job's inputs (the log a restart would set aside).
func parseJob(command []string, stderr io.Writer) (*launchJob, error) {
	j := &launchJob{Command: launch.Command{Args: command, Sub: -1}}
	for i, a := range command {
		if i > 0 && a == "train" {
			j.Sub = i
			break
		}
	}
	if j.Sub < 0 {
		return nil, fmt.Errorf("the job's command %q runs no hetsgd train", strings.Join(command, " "))
	}
	var f train.Settings
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse(command[j.Sub+1:]); err != nil {
		return nil, fmt.Errorf("the job's train arguments: %v", err)
	}
	j.Switches = map[string]bool{}
	fs.VisitAll(func(fl *flag.Flag) {
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			j.Switches[fl.Name] = true
		}
	})
	if f.Config != "" {
		if err := train.ApplyConfig(fs, f.Config, train.Visited(fs), strategy.List()); err != nil {
			return nil, err
		}
	}
	in := f.Inputs(nil)
	in.Add("checkpoint being resumed", f.Resume)
	if err := errors.Join(train.CheckRanges(fs, engine.Ranges), f.CheckOutputs(in)); err != nil {
		return nil, fmt.Errorf("the job's train arguments: %w", err)
	}
	resumed := f.Resume // the folder of the checkpoint it resumes
	if resumed != "" && !atomicfile.IsDir(resumed) {
		resumed = filepath.Dir(resumed)
	}
	switch {
	case f.Checkpoint != "":
		j.Checkpoint = f.Checkpoint
	case f.Resume != "":
		j.Checkpoint = resumed
	default:
		return nil, errors.New("the job has no checkpoint folder to restart from: give its train --checkpoint DIR")
	}
	// Its checkpoint folder's checkpoints are the job's when it resumes one
	// of them, not when it branches off another folder's into it.
	j.Log, j.Resumes = f.Log, resumed != "" && atomicfile.SameFile(resumed, j.Checkpoint)
	j.perRank = f.DevicesPerRank
	if i, n := launch.RankCount(command[:j.Sub]); i > 0 {
		j.Ranks = i
		if train.Visited(fs)["devices"] && n > 0 && f.Devices%n == 0 {
			j.perRank = f.Devices / n
		}
	}
	j.Drop = func(name, value string, resumed, fewer bool) bool {
		switch name {
		case "fault":
			x, err := engine.ParseFault(value)
			return err == nil && x.OnRank // it struck the job that failed
		case "config", "resume":
			return resumed // the checkpoint holds the settings; --resume is added
		case "devices", "devices-per-rank":
			return fewer && resumed // given below, for the ranks left
		}
		return false
	}
	j.Resume = func(dir string, fewer bool) []string {
		if fewer {
			// Each rank left holds as many devices as each did: the run
			// goes on from its model on fewer devices.
			return []string{"--devices-per-rank", strconv.Itoa(j.perRank), "--resume", dir}
		}
		return []string{"--resume", dir}
	}
	return j, nil
}
