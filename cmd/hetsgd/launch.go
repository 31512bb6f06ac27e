package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hetsgd/hetsgd/launch"
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
	job, err := train.ParseJob(command)
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
