package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/dashboard"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/train"
)

// errInterrupted ends a command stopped by a signal.
var errInterrupted = train.ErrInterrupted

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f train.Settings
	fs := newFlagSet("train", "train [flags]", stderr)
	f.Register(fs)
	fs.Usage = func() { f.Usage(fs, stderr) }
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.Config != "" {
		if f.Resume != "" {
			return errors.New("--config with --resume: a resumed run takes its settings from its checkpoint")
		}
		if err := train.ApplyConfig(fs, f.Config, train.Visited(fs), strategy.List()); err != nil {
			return err
		}
	}
	var res *train.Resumed
	if f.Resume != "" {
		f2, fs2, r, err := train.Resume(f.Resume, args, func() *flag.FlagSet { return newFlagSet("train", "train [flags]", stderr) }, parseFlags)
		if err != nil {
			return err
		}
		defer r.Close()
		f, fs, res = *f2, fs2, r
		if err := res.Place(&f); err != nil {
			return err
		}
	}
	if err := train.CheckRanges(fs, engine.Ranges); err != nil {
		return err
	}
	if err := f.CheckOutputFlags(fs); err != nil {
		return err
	}
	if err := f.StrategyOutput(fs); err != nil {
		return err
	}
	// Under mpirun every rank runs this command: rank 0 drives, evaluates and
	// writes; the others serve their devices and print only their errors.
	world, err := comm.OpenWorld()
	if err != nil {
		return err
	}
	clean := false // every rank got through the run: MPI may be finalized
	defer func() {
		if clean {
			world.Close()
		}
	}()
	showProgress := func() (bool, error) { return progressWanted(f.Progress, stderr) }
	dash := func(addr, name string) (*dashboard.Live, error) { return startDashboard(addr, name, stdout, stderr) }
	err = train.Run(ctx, &f, fs, res, world, train.Front{Stdout: stdout, Stderr: stderr, Version: version,
		Message: message, Progress: showProgress, Dashboard: dash})
	clean = err == nil || errors.Is(err, errInterrupted) || errors.Is(err, engine.ErrDiverged)
	return rankErr(world, err)
}
