package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/train"
	"github.com/hetsgd/hetsgd/tune"
	"github.com/hetsgd/hetsgd/workload"
)

func runTune(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("tune", "tune [--data DIR] [--strategies LIST] [--lrs A:B|LIST|default] [--batches LIST] [--seeds LIST] [flags]", stderr)
	// The settings every run of the grid shares, as train declares them,
	// some with tune's defaults: a grid is compared on the virtual clock.
	var set train.Settings
	set.RegisterSome(fs, map[string]any{"devices": 4, "time": "virtual", "epochs": 10, "eval-every": 0.5},
		"data", "train", "test", "cache", "devices", "speeds", "time", "epochs", "time-budget", "eval-every", "hidden", "dropout")
	strategies := fs.String("strategies", "all", "strategies to compare, comma-separated, or all; a strategy with settings in brackets is a variant of its own: its options, optimizer=NAME and lr=RATE, e.g. adaptive[gamma=0.5,optimizer=adam,lr=0.01]")
	lrs := fs.String("lrs", "1e-3:10", "learning rates: a list, A:B for the powers of ten and half steps from A to B, or default for each strategy's own (with --optimizer strategy, or a variant's optimizer= and lr=)")
	batches := fs.String("batches", "128", "batch sizes per device, comma-separated")
	seeds := fs.String("seeds", "1", "seeds of each point, comma-separated (results are averaged over them)")
	optimizer := fs.String("optimizer", "sgd", "local optimizer of every strategy, or \"strategy\" for each strategy's own (parameter servers always commit Δ = −lr·g)")
	target := fs.Float64("target", 0, "P@1 of time-to-accuracy (0: 90% of the best mean P@1 of the grid)")
	logPath := fs.String("log", "", "write every run and the summary as JSON Lines to `file`")
	force := fs.Bool("force", false, "overwrite an existing --log file")
	mode := fs.String("progress", stage.Auto, progressHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := train.CheckRanges(fs, engine.Ranges); err != nil {
		return err
	}
	g := tune.Grid{}
	if *strategies == "all" {
		for _, i := range strategy.List() {
			g.Strategies = append(g.Strategies, i.Name)
		}
	} else {
		g.Strategies = tune.SplitStrategies(*strategies)
	}
	if g.LRs, err = tune.ParseRates(*lrs); err != nil {
		return err
	}
	var bl train.IntList
	if err := bl.Set(*batches); err != nil || len(bl) == 0 {
		return fmt.Errorf("--batches %q: want positive integers, comma-separated", *batches)
	}
	g.Batches = bl
	if g.Seeds, err = tune.ParseSeeds(*seeds); err != nil {
		return err
	}
	if err := g.Validate(); err != nil {
		return err
	}
	devices, clock, epochs := set.Devices, set.Clock, set.Epochs
	base := engine.Config{Devices: devices, Clock: engine.Clock(clock), Epochs: epochs, TimeBudget: set.TimeBudget,
		EvalEvery: set.EvalEvery, Noise: engine.DefaultNoise, Cost: cost.Default(), Net: comm.Model{Intra: comm.DefaultNetwork, Inter: comm.DefaultNetwork, AllReduce: comm.Ring}}
	if len(set.Speeds) > 0 {
		base.Speeds = set.Speeds
	}
	if *optimizer != "strategy" {
		base.Optimizer = optim.Config{Name: strings.ToLower(*optimizer)}
		if _, err := optim.New(base.Optimizer, 0); err != nil {
			return fmt.Errorf("--optimizer: %w", err)
		}
	}
	if !(*target >= 0 && *target <= 1) {
		return fmt.Errorf("--target %v: need a P@1 in [0, 1]", *target)
	}
	if err := g.CheckVariants(base); err != nil { // before any data is loaded
		return err
	}
	line, err := stage.NewLine(stderr, *mode, "hetsgd tune")
	if err != nil {
		return err
	}
	defer line.Close()
	cacheMode, err := data.ParseCacheMode(set.Cache)
	if err != nil {
		return fmt.Errorf("--cache: %w", err)
	}
	var in atomicfile.Inputs
	in.Add("--train file", set.TrainPath)
	in.Add("--test file", set.TestPath)
	in.Add("--data", set.DataDir)
	if err := in.Check("--log", *logPath); err != nil {
		return err
	}
	line.Stage("reading the data", 0, "")
	trainSet, testSet, source, err := train.LoadData(data.Loader{Format: data.Auto, Cache: cacheMode, Log: line, Context: ctx, Opened: in.Opened}, set.TrainPath, set.TestPath, set.DataDir)
	if err != nil {
		return err
	}
	maxBatch := 256
	for _, b := range g.Batches {
		maxBatch = max(maxBatch, b)
	}
	w, err := workload.NewXML(trainSet, testSet, set.Hidden, set.Dropout, 0, maxBatch)
	if err != nil {
		return err
	}
	var log *runlog.Log
	if *logPath != "" {
		if err := in.Check("--log", *logPath); err != nil { // the data's caches are known now
			return err
		}
		if log, err = runlog.CreateLog(*logPath, *force, in.Paths()...); err != nil {
			return err
		}
		defer func() {
			if cerr := log.Close(); err == nil || errors.Is(err, errInterrupted) {
				err = errors.Join(err, cerr)
			}
		}()
	}
	opt := *optimizer
	if opt == "strategy" {
		opt = "each strategy's own optimizer"
	}
	line.Print(func() {
		fmt.Fprintf(stdout, "hetsgd tune: %s — %d strategies × %d rates × %d batches × %d seeds = %d runs; %d devices, %s time, %g epochs; %s\n",
			source, len(g.Strategies), len(g.LRs), len(g.Batches), len(g.Seeds), g.Size(), devices, clock, epochs, opt)
	})
	if err := log.Write(tune.ConfigRecord{Event: "tune-config", Version: version, Data: source, Grid: g, Optimizer: *optimizer,
		Devices: devices, Speeds: base.Speeds, Clock: clock, Epochs: epochs, TimeBudget: set.TimeBudget, EvalEvery: set.EvalEvery,
		Hidden: set.Hidden, Dropout: set.Dropout}); err != nil {
		return err
	}
	each := func(r tune.Result) error { return log.Write(tune.RunRecord{Event: "tune-run", Result: r}) }
	results, err := tune.Run(ctx, base, w, g, each, line)
	line.Close()
	if errors.Is(err, context.Canceled) {
		err = fmt.Errorf("%w after %d of %d runs", errInterrupted, len(results), g.Size())
	}
	if err != nil && len(results) == 0 {
		return err
	}
	sum := tune.Summarize(results, *target)
	sum.Write(stdout, g) // a failed write is the standard output's, which mainCode reports
	if werr := log.Write(sum); werr != nil && err == nil {
		err = werr
	}
	return err
}
