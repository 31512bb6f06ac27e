package main

import (
	"context"
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

// plotMetric is a value of an eval record that plot draws (--y).
type plotMetric struct {
	name, label string
	value       func(runlog.Eval) float64
}

var plotMetrics = []plotMetric{
	{"p1", "P@1", func(e runlog.Eval) float64 { return e.P1 }},
	{"p3", "P@3", func(e runlog.Eval) float64 { return e.P3 }},
	{"p5", "P@5", func(e runlog.Eval) float64 { return e.P5 }},
	{"ndcg1", "nDCG@1", func(e runlog.Eval) float64 { return e.NDCG1 }},
	{"ndcg3", "nDCG@3", func(e runlog.Eval) float64 { return e.NDCG3 }},
	{"ndcg5", "nDCG@5", func(e runlog.Eval) float64 { return e.NDCG5 }},
	{"loss", "test loss (cross-entropy)", func(e runlog.Eval) float64 { return e.Loss }},
	{"train_loss", "training loss (cross-entropy)", func(e runlog.Eval) float64 { return e.TrainLoss }},
}

// plotBatch is --y batch: the per-device batch sizes of a log's merge
// records rather than a value of its eval records.
const plotBatch = "batch"

// plotAxis is a value of --x: an eval record's position in the run.
type plotAxis struct {
	name  string
	short string // for titles
	label string // the axis's; for time, the clock's unit follows
	value func(runlog.Eval) float64
}

var plotAxes = []plotAxis{
	{"time", "time", "training time", func(e runlog.Eval) float64 { return e.TrainSeconds }},
	{"epoch", "epochs", "epochs (passes over the training set)", func(e runlog.Eval) float64 { return e.Epoch }},
	{"samples", "samples", "samples (training points processed)", func(e runlog.Eval) float64 { return float64(e.Samples) }},
}

func runPlot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	names := make([]string, 0, len(plotMetrics)+1)
	for _, m := range plotMetrics {
		names = append(names, m.name)
	}
	names = append(names, plotBatch)
	var axes []string
	for _, a := range plotAxes {
		axes = append(axes, a.name)
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
	i := slices.IndexFunc(plotAxes, func(a plotAxis) bool { return a.name == *xName })
	if i < 0 {
		return fmt.Errorf("--x %q: want %s or %s", *xName, strings.Join(axes[:len(axes)-1], ", "), axes[len(axes)-1])
	}
	axis := plotAxes[i]
	var metric *plotMetric
	for i := range plotMetrics {
		if plotMetrics[i].name == *yName {
			metric = &plotMetrics[i]
		}
	}
	switch {
	case metric == nil && *yName != plotBatch:
		return fmt.Errorf("--y %q: want one of %s", *yName, strings.Join(names, ", "))
	case *yName == plotBatch && len(logs) > 1:
		return fmt.Errorf("--y batch draws the devices of one log; give one LOG, not %d", len(logs))
	case *yName == plotBatch && axis.name != "time":
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

	runs := make([]*runlog.Run, len(logs))
	for i, l := range logs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if runs[i], err = runlog.ReadFile(l); err != nil {
			return err
		}
	}
	clock, err := plotClock(runs, logs, *xName)
	if err != nil {
		return err
	}
	xLabel := axis.label
	if axis.name == "time" {
		xLabel += " (" + clockUnit(clock) + ")"
	}

	var p report.Plot
	if *yName == plotBatch {
		if p, err = batchPlot(runs[0], logs[0], clock); err != nil {
			return err
		}
	} else {
		labels := legendLabels(runs, logs)
		for i, r := range runs {
			if len(r.Evals) == 0 {
				return fmt.Errorf("%s has no eval records, so nothing to plot: the run ended or was stopped before its first evaluation (see --eval-every of hetsgd train)", logs[i])
			}
			s := report.Series{Name: labels[i]}
			for _, e := range r.Evals {
				s.X = append(s.X, axis.value(e))
				s.Y = append(s.Y, metric.value(e))
			}
			p.Series = append(p.Series, s)
		}
		p.Title = shortMetric(metric) + " against " + axis.short
		if d := commonData(runs); d != "" {
			p.Title = d + ": " + p.Title
		}
		p.X, p.Y = xLabel, metric.label
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

// plotClock returns the clock of the logs' seconds ("virtual", "real", or
// "" when no log says). Against time, logs of both clocks are an error, not
// a figure: virtual seconds are the cost model's account of the simulated
// devices and real seconds are this machine's, so one axis would compare
// what cannot be compared. Against epochs or samples the clocks do not
// matter.
func plotClock(runs []*runlog.Run, logs []string, x string) (string, error) {
	clock, from := "", ""
	for i, r := range runs {
		if r.Config == nil || r.Config.Clock == "" {
			continue
		}
		switch {
		case clock == "":
			clock, from = r.Config.Clock, logs[i]
		case r.Config.Clock != clock && x == "time":
			return "", fmt.Errorf("%s ran on the %s clock and %s on the %s clock: their seconds cannot share an axis; plot them against --x epoch or --x samples, or in separate figures",
				from, clock, logs[i], r.Config.Clock)
		}
	}
	return clock, nil
}

// clockUnit names the seconds of a clock for an axis label.
func clockUnit(clock string) string {
	switch clock {
	case "virtual":
		return "virtual seconds"
	case "real":
		return "wall-clock seconds, evaluation excluded"
	}
	return "seconds"
}

// shortMetric is a metric's name for a title: its label without the unit.
func shortMetric(m *plotMetric) string {
	s, _, _ := strings.Cut(m.label, " (")
	return s
}

// legendLabels names each run by its Label, and a log without a config
// record by its file's name (dashboardNames: the path as given when two
// files share a name). Runs whose labels are equal, such as two runs of
// one strategy, get that name too.
func legendLabels(runs []*runlog.Run, logs []string) []string {
	files := dashboardNames(logs)
	labels := make([]string, len(runs))
	count := map[string]int{}
	for i, r := range runs {
		if r.Config == nil {
			labels[i] = files[i]
		} else {
			labels[i] = r.Label()
		}
		count[labels[i]]++
	}
	for i := range labels {
		if count[labels[i]] > 1 && labels[i] != files[i] {
			labels[i] += " (" + files[i] + ")"
		}
	}
	return labels
}

// commonData returns the dataset all runs trained on, for the title, or ""
// when they differ or do not say.
func commonData(runs []*runlog.Run) string {
	d := ""
	for i, r := range runs {
		if r.Config == nil || r.Config.Data == "" || (i > 0 && r.Config.Data != d) {
			return ""
		}
		d = r.Config.Data
	}
	return d
}

// batchPlot draws one log's per-device batch sizes at each merge against
// the merge's time (the Adaptive SGD paper's Fig. 12).
func batchPlot(r *runlog.Run, log, clock string) (report.Plot, error) {
	var series []report.Series
	for _, m := range r.Merges {
		if m.MergeRecord == nil {
			continue
		}
		for d, b := range m.BatchSizes {
			for len(series) <= d {
				series = append(series, report.Series{Name: fmt.Sprintf("device %d", len(series))})
			}
			series[d].X = append(series[d].X, m.Time)
			series[d].Y = append(series[d].Y, float64(b))
		}
	}
	if len(series) == 0 {
		return report.Plot{}, fmt.Errorf("%s has no merge records with batch sizes: only strategies that merge replicas (elastic, adaptive, ...) write them", log)
	}
	if c := r.Config; c != nil && len(c.Speeds) == len(series) {
		for d := range series {
			series[d].Name += fmt.Sprintf(" (speed %g)", c.Speeds[d])
		}
	}
	title := legendLabels([]*runlog.Run{r}, []string{log})[0]
	if r.Config != nil && r.Config.Data != "" {
		title = r.Config.Data + ", " + title
	}
	return report.Plot{
		Title:  title + ": batch size per device at each merge",
		X:      "merge time (" + clockUnit(clock) + ")",
		Y:      "batch size (samples)",
		Series: series,
	}, nil
}
