package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

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

// plotAxes are the values of --x: an eval record's position in the run.
var plotAxes = map[string]func(runlog.Eval) float64{
	"time":    func(e runlog.Eval) float64 { return e.TrainSeconds },
	"epoch":   func(e runlog.Eval) float64 { return e.Epoch },
	"samples": func(e runlog.Eval) float64 { return float64(e.Samples) },
}

func runPlot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	names := make([]string, 0, len(plotMetrics)+1)
	for _, m := range plotMetrics {
		names = append(names, m.name)
	}
	names = append(names, plotBatch)
	fs := newFlagSet("plot", "plot [--x time|epoch|samples] [--y "+strings.Join(names, "|")+"] [--title T] --out FIG LOG...\n\n"+
		"Draws one line per run log (hetsgd train --log, a bench report's runs/*.jsonl) of the metric --y\n"+
		"against --x, into FIG.svg and FIG.png (FIG may end in .svg or .png; both are written).\n"+
		"Existing figures of those names are replaced. Flags may come before or after the logs.", stderr)
	xName := fs.String("x", "time", "horizontal axis: time (train_seconds, in the logs' clock: logs of the virtual and the real clock cannot share it), epoch or samples")
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
	xOf, ok := plotAxes[*xName]
	if !ok {
		return fmt.Errorf("--x %q: want time, epoch or samples", *xName)
	}
	var metric *plotMetric
	for i := range plotMetrics {
		if plotMetrics[i].name == *yName {
			metric = &plotMetrics[i]
		}
	}
	if metric == nil && *yName != plotBatch {
		return fmt.Errorf("--y %q: want one of %s", *yName, strings.Join(names, ", "))
	}
	base, err := figureBase(*out)
	if err != nil {
		return err
	}
	for _, l := range logs {
		for _, ext := range []string{".svg", ".png"} {
			if samePath(l, base+ext) {
				return fmt.Errorf("--out %s would overwrite the log %s", *out, l)
			}
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
	xLabel := map[string]string{
		"time":    "training time (" + clockUnit(clock) + ")",
		"epoch":   "epochs (passes over the training set)",
		"samples": "samples (training points processed)",
	}[*xName]

	var p report.Plot
	if *yName == plotBatch {
		if p, err = batchPlot(runs[0], logs, *xName, clock); err != nil {
			return err
		}
	} else {
		labels := legendLabels(runs)
		for i, r := range runs {
			if len(r.Evals) == 0 {
				return fmt.Errorf("%s has no eval records, so nothing to plot: the run ended or was stopped before its first evaluation (see --eval-every of hetsgd train)", logs[i])
			}
			s := report.Series{Name: labels[i]}
			for _, e := range r.Evals {
				s.X = append(s.X, xOf(e))
				s.Y = append(s.Y, metric.value(e))
			}
			p.Series = append(p.Series, s)
		}
		short := map[string]string{"time": "time", "epoch": "epochs", "samples": "samples"}[*xName]
		p.Title = shortMetric(metric) + " against " + short
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

func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
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

// legendLabels names each run by its Label (a log without a config record
// by its file's name). Runs whose names are equal, such as two runs of one
// strategy, get their file's name too, and if that does not tell them
// apart (run.jsonl in two folders), the path as given.
func legendLabels(runs []*runlog.Run) []string {
	labels := make([]string, len(runs))
	for i, r := range runs {
		if labels[i] = r.Label(); labels[i] == r.Name {
			labels[i] = filepath.Base(r.Name)
		}
	}
	first := append([]string(nil), labels...)
	for _, file := range []func(*runlog.Run) string{
		func(r *runlog.Run) string { return filepath.Base(r.Name) },
		func(r *runlog.Run) string { return r.Name },
	} {
		count := map[string]int{}
		for _, l := range labels {
			count[l]++
		}
		for i, r := range runs {
			if count[labels[i]] > 1 {
				labels[i] = first[i] + " (" + file(r) + ")"
			}
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
func batchPlot(r *runlog.Run, logs []string, x, clock string) (report.Plot, error) {
	switch {
	case len(logs) > 1:
		return report.Plot{}, fmt.Errorf("--y batch draws the devices of one log; give one LOG, not %d", len(logs))
	case x != "time":
		return report.Plot{}, fmt.Errorf("--y batch is drawn against the merges' time: leave --x at time")
	}
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
		return report.Plot{}, fmt.Errorf("%s has no merge records with batch sizes: only strategies that merge replicas (elastic, adaptive, ...) write them", logs[0])
	}
	if c := r.Config; c != nil && len(c.Speeds) == len(series) {
		for d := range series {
			series[d].Name += fmt.Sprintf(" (speed %g)", c.Speeds[d])
		}
	}
	title := legendLabels([]*runlog.Run{r})[0]
	if d := commonData([]*runlog.Run{r}); d != "" {
		title = d + ", " + title
	}
	return report.Plot{
		Title:  title + ": batch size per device at each merge",
		X:      "merge time (" + clockUnit(clock) + ")",
		Y:      "batch size (samples)",
		Series: series,
	}, nil
}
