package main

import (
	"context"
	"fmt"
	"io"
	"strings"

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
		if err := describeStrategy(stdout, "    ", cfg, *points, nil); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

// describeStrategy writes the effective settings of cfg's strategy — the
// optimizer, learning rate and batch, then every option the strategy takes —
// as flags, each with its value for this run, the formula of a derived
// default, and where it departs from the paper (engine.Config.Describe).
// points is the number of training points (0: not known yet); given names
// the settings the user gave.
func describeStrategy(w io.Writer, indent string, cfg engine.Config, points int, given map[string]bool) error {
	d, err := cfg.Describe(points, given)
	if err != nil {
		return err
	}
	for _, s := range d.Common {
		fmt.Fprintf(w, "%s%-16s %-28s %s\n", indent, "--"+s.Name, s.Value, s.Note)
	}
	width := 16 // the option flags' names line up with the settings' above
	for _, s := range d.Options {
		width = max(width, len(s.Name)+2)
	}
	for _, s := range d.Options {
		if len(s.Value) > 28 {
			fmt.Fprintf(w, "%s%-*s %s\n%s%-*s %-28s %s\n", indent, width, "--"+s.Name, s.Value, indent, width, "", "", s.Note)
		} else {
			fmt.Fprintf(w, "%s%-*s %-28s %s\n", indent, width, "--"+s.Name, s.Value, s.Note)
		}
		if s.Paper != "" {
			fmt.Fprintf(w, "%s%-*s %-28s differs from the paper: %s\n", indent, width, "", "", s.Paper)
		}
	}
	if d.Preset != nil {
		var flags []string
		for _, s := range d.Preset {
			flags = append(flags, "--"+s.Name+" "+s.Value)
		}
		fmt.Fprintf(w, "%s--paper: %s (%s)\n", indent, strings.Join(flags, " "), d.PresetSource)
	}
	return nil
}
