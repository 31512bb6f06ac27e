package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/report"
	"github.com/hetsgd/hetsgd/runlog"
)

// plotBatch is --y batch: one log's batch sizes per device at each merge
// (report.BatchPlot) rather than a metric of its eval records.
const plotBatch = "batch"

func runPlot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var names, axes []string
	for _, m := range report.Metrics {
		names = append(names, m.Name)
	}
	names = append(names, plotBatch)
	for _, a := range report.Axes {
		axes = append(axes, a.Name)
	}
	fs := newFlagSet("plot", "plot [--x "+strings.Join(axes, "|")+"] [--y "+strings.Join(names, "|")+"] [--title T] --out FIG LOG...\n\n"+
		"Draws one line per run log (hetsgd train --log, a bench report's runs/*.jsonl) of the metric --y\n"+
		"against --x, into FIG.svg and FIG.png (FIG may end in .svg or .png; both are written).\n"+
		"Existing figures of those names are replaced. Flags may come before or after the logs.", stderr)
	xName := fs.String("x", "time", "horizontal axis: "+strings.Join(axes, ", ")+" (time: train_seconds, in the logs' clock: logs of the virtual and the real clock cannot share it)")
	yName := fs.String("y", "p1", "metric: "+strings.Join(names, ", ")+" (batch: one log's per-device batch sizes at each merge, against merge time)")
	title := fs.String("title", "", "figure `title` (default: the dataset and what is drawn)")
	out := fs.String("out", "", "the figure: `FIG`.svg and FIG.png are written")
	logs, err := parseLogArgs(fs, args)
	if err != nil {
		return err
	}
	if len(logs) == 0 || *out == "" {
		fmt.Fprintln(stderr, "hetsgd plot: give --out FIG and at least one LOG")
		fs.Usage()
		return errUsage
	}
	x := slices.IndexFunc(report.Axes, func(a report.Axis) bool { return a.Name == *xName })
	y := slices.IndexFunc(report.Metrics, func(m report.Metric) bool { return m.Name == *yName })
	switch {
	case x < 0:
		return fmt.Errorf("--x %q: want %s or %s", *xName, strings.Join(axes[:len(axes)-1], ", "), axes[len(axes)-1])
	case y < 0 && *yName != plotBatch:
		return fmt.Errorf("--y %q: want one of %s", *yName, strings.Join(names, ", "))
	case *yName == plotBatch && len(logs) > 1:
		return fmt.Errorf("--y batch draws the devices of one log; give one LOG, not %d", len(logs))
	case *yName == plotBatch && *xName != "time":
		return fmt.Errorf("--y batch is drawn against the merges' time: leave --x at time")
	}
	base, err := figureBase(*out)
	if err != nil {
		return err
	}
	in := &atomicfile.Inputs{}
	for _, l := range logs {
		in.Add("log", l)
	}
	for _, ext := range []string{".svg", ".png"} {
		if err := in.Check("--out", base+ext); err != nil {
			return err
		}
	}
	runs, err := runlog.ReadFiles(ctx, logs)
	if err != nil {
		return err
	}
	var p report.Plot
	if *yName == plotBatch {
		p, err = report.BatchPlot(runs[0])
	} else {
		p, err = report.RunsPlot(runs, report.Axes[x], report.Metrics[y])
	}
	switch {
	case errors.Is(err, report.ErrMixedClocks):
		return fmt.Errorf("%w; plot them against --x epoch or --x samples, or in separate figures", err)
	case errors.Is(err, report.ErrNoEvals):
		return fmt.Errorf("%w (see --eval-every of hetsgd train)", err)
	case err != nil:
		return err
	}
	if *title != "" {
		p.Title = *title
	}
	if err := p.SaveSVGAndPNG(base); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wrote %s.svg and %s.png\n", base, base)
	return err
}

// parseLogArgs parses the flags, which may come before, between or after
// the logs (the flag package stops at the first argument that is not a
// flag, and "plot a.jsonl b.jsonl --out fig" is how one writes it), and
// returns the logs. Everything after "--" is a log.
func parseLogArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var logs []string
	for {
		if err := parseArgs(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(logs, rest...), nil
		}
		if len(rest) == 0 {
			return logs, nil
		}
		logs = append(logs, rest[0])
		args = rest[1:]
	}
}

// figureBase returns the figure's path without its extension: --out may
// name either format, and both are written. Another figure format is an
// error rather than a name to append to, so that --out fig.pdf does not
// quietly write fig.pdf.svg; any other dot (fig-lr0.1) is part of the name.
func figureBase(out string) (string, error) {
	ext := filepath.Ext(out)
	switch strings.ToLower(ext) {
	case ".svg", ".png":
		return strings.TrimSuffix(out, ext), nil
	case ".pdf", ".eps", ".jpg", ".jpeg", ".tif", ".tiff", ".tex":
		return "", fmt.Errorf("--out %s: plot writes an SVG and a PNG; name FIG, FIG.svg or FIG.png", out)
	}
	if strings.HasSuffix(out, "/") || strings.HasSuffix(out, string(filepath.Separator)) {
		return "", fmt.Errorf("--out %s: name a figure file, not a folder (FIG writes FIG.svg and FIG.png)", out)
	}
	return out, nil
}
