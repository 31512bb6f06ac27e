package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

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
	fs.Usage = func() { trainUsage(&f, fs, stderr) }
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

// trainUsage is "train --help": the run's effective settings for the
// strategy chosen so far on the command line (sync unless --strategy came
// before --help), then the flags, with only that strategy's options.
func trainUsage(f *train.Settings, fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: hetsgd train [flags]\n\n")
	info, err := strategy.Lookup(f.Strategy)
	if err != nil {
		info, _ = strategy.Lookup("sync")
	}
	set := train.Visited(fs)
	cfg := engine.Config{Strategy: info.Name, Devices: f.Devices, Paper: f.Paper, Options: f.GivenOptions(info.Name)}
	if set["batch"] {
		cfg.Batch = f.Batch
	}
	if set["lr"] {
		cfg.LR = f.LR
	}
	if set["optimizer"] {
		cfg.Optimizer.Name = strings.ToLower(f.Optimizer)
	}
	fmt.Fprintf(w, "Settings of --strategy %s on %d device(s) (hetsgd strategies -v lists every strategy):\n", info.Name, f.Devices)
	points := 0 // known once the data is loaded
	if f.DataDir == "" && f.TrainPath == "" {
		points = train.BundledPoints
	}
	if err := describeStrategy(w, "  ", cfg, points, set); err != nil {
		fmt.Fprintf(w, "  %v\n", err)
	}
	fmt.Fprintf(w, "\nFlags:\n")
	show := flag.NewFlagSet("train", flag.ContinueOnError)
	show.SetOutput(w)
	fs.VisitAll(func(fl *flag.Flag) {
		if _, isOption := f.Options[fl.Name]; isOption && !strings.HasPrefix(fl.Name, info.Name+".") {
			return // another strategy's option
		}
		show.Var(fl.Value, fl.Name, fl.Usage)
		show.Lookup(fl.Name).DefValue = fl.DefValue
	})
	show.PrintDefaults()
}
