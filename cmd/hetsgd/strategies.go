package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/all"
	"github.com/hetsgd/hetsgd/train"
)

func runStrategies(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("strategies", "strategies [-v] [--devices N] [--batch B] [NAME ...]", stderr)
	verbose := fs.Bool("v", false, "print each strategy's effective settings and options")
	devices := fs.Int("devices", 4, "devices the derived defaults are computed for (-v)")
	batch := fs.Int("batch", 0, "batch size the derived defaults are computed for (-v; default: the strategy's)")
	points := fs.Int("points", train.BundledPoints, "training points the derived defaults are computed for (-v; default: the bundled "+train.BundledDefault+"'s)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if err := train.CheckRanges(fs, engine.Ranges); err != nil {
		return err
	}
	if *devices < 1 || *batch < 0 || *points < 0 {
		return fmt.Errorf("--devices %d --batch %d --points %d: need at least one device, a batch ≥ 0 and points ≥ 0", *devices, *batch, *points)
	}
	list := strategy.List()
	if fs.NArg() > 0 {
		list = list[:0]
		for _, name := range fs.Args() {
			info, err := strategy.Lookup(name)
			if err != nil {
				return err
			}
			list = append(list, info)
		}
		*verbose = true
	}
	if *verbose {
		// The derived defaults depend on these: say for what they are shown.
		b := "each strategy's batch"
		if *batch > 0 {
			b = fmt.Sprintf("batches of %d", *batch)
		}
		fmt.Fprintf(stdout, "Settings as a run of %d device(s), %s and %d training points would have them (--devices, --batch, --points; hetsgd train runs on 1 device unless given --devices).\n\n",
			*devices, b, *points)
	}
	for _, info := range list {
		fmt.Fprintf(stdout, "%-14s %s\n", info.Name, info.Summary)
		if !*verbose {
			continue
		}
		cfg := engine.Config{Strategy: info.Name, Devices: *devices, Batch: *batch}
		if err := train.DescribeStrategy(stdout, "    ", cfg, *points, nil); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	return nil
}
