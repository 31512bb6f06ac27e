package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/all"
)

func runStrategies(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("strategies", "strategies [-v] [--devices N] [--batch B] [NAME ...]", stderr)
	verbose := fs.Bool("v", false, "print each strategy's effective settings and options")
	devices := fs.Int("devices", 4, "devices the derived defaults are computed for (-v)")
	batch := fs.Int("batch", 0, "batch size the derived defaults are computed for (-v; default: the strategy's)")
	points := fs.Int("points", bundledPoints, "training points the derived defaults are computed for (-v; default: the bundled "+bundledDefault+"'s)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if err := checkRanges(fs, engine.Ranges); err != nil {
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
// each with its value for this run, the formula of a derived default, and
// where it departs from the paper. points is the number of training points
// (0: not known yet); given names the settings the user gave.
func describeStrategy(w io.Writer, indent string, cfg engine.Config, points int, given map[string]bool) error {
	info, err := strategy.Lookup(cfg.Strategy)
	if err != nil {
		return err
	}
	asked := cfg
	if cfg, err = cfg.WithDefaults(); err != nil {
		return err
	}
	src := func(flag string) string {
		if given[flag] {
			return "given"
		}
		if cfg.Paper {
			return "paper"
		}
		return "default"
	}
	opt, optNote := cfg.Optimizer.Name, src("optimizer")
	if info.OwnUpdate {
		optNote += "; the commits' own update Δ = −lr·g, no local optimizer runs"
	} else if opt == "momentum" {
		opt += fmt.Sprintf(" %g", cfg.Optimizer.Momentum)
	}
	if cfg.Optimizer.WeightDecay != 0 {
		opt += fmt.Sprintf(", weight decay %g", cfg.Optimizer.WeightDecay)
	}
	lr := strconv.FormatFloat(cfg.LR, 'g', 6, 64)
	if asked.LR == 0 {
		if _, formula := info.SettingsFor(cfg.Paper).RateFor(cfg.Batch, cfg.Devices); formula != "" {
			lr = formula + " = " + lr
		}
	}
	fmt.Fprintf(w, "%s%-16s %-28s %s\n", indent, "--optimizer", opt, optNote)
	fmt.Fprintf(w, "%s%-16s %-28s %s\n", indent, "--lr", lr, src("lr"))
	fmt.Fprintf(w, "%s%-16s %-28d %s\n", indent, "--batch", cfg.Batch, src("batch"))
	vals, err := info.Describe(strategy.Config{Devices: cfg.Devices, Batch: cfg.Batch, LR: cfg.LR, DatasetSize: points, Options: cfg.Options})
	if err != nil {
		return err
	}
	width := 16 // the option flags' names line up with the settings' above
	for _, v := range vals {
		width = max(width, len(info.Name)+len(v.Name)+3)
	}
	for _, v := range vals {
		name := "--" + info.Name + "." + v.Name
		val := strconv.FormatFloat(v.Value, 'g', 6, 64)
		switch {
		case v.Formula != "" && points == 0 && strings.Contains(v.Formula, "N "):
			val = v.Formula + ", once the data is loaded"
		case v.Formula != "":
			val = v.Formula + " = " + val
		}
		usage := v.Usage + "; " + v.Range.String()
		if len(val) > 28 {
			fmt.Fprintf(w, "%s%-*s %s\n%s%-*s %-28s %s\n", indent, width, name, val, indent, width, "", "", usage)
		} else {
			fmt.Fprintf(w, "%s%-*s %-28s %s\n", indent, width, name, val, usage)
		}
		if v.Paper != "" && !v.Given {
			fmt.Fprintf(w, "%s%-*s %-28s differs from the paper: %s\n", indent, width, "", "", v.Paper)
		}
	}
	if p := info.Paper; p != nil && !cfg.Paper {
		fmt.Fprintf(w, "%s--paper: %s\n", indent, presetText(info.Name, p))
	}
	return nil
}

// presetText says what --paper sets.
func presetText(name string, p *strategy.Preset) string {
	var parts []string
	if s := p.Settings; s.Optimizer != "" {
		t := fmt.Sprintf("--optimizer %s --lr %g --batch %d", s.Optimizer, s.LR, s.Batch)
		if s.Momentum != 0 {
			t += fmt.Sprintf(" --momentum %g", s.Momentum)
		}
		if s.WeightDecay != 0 {
			t += fmt.Sprintf(" --weight-decay %g", s.WeightDecay)
		}
		parts = append(parts, t)
	}
	var keys []string
	for k := range p.Options {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("--%s.%s %g", name, k, p.Options[k]))
	}
	return strings.Join(parts, " ") + " (" + p.Source + ")"
}
