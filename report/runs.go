package report

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hetsgd/hetsgd/runlog"
)

// The errors of RunsPlot that a caller may want to tell apart, to say how
// to draw the runs in its own terms (the axis to pick instead, the
// setting that makes a run evaluate).
var (
	// ErrNoEvals: a run has no eval records to draw.
	ErrNoEvals = errors.New("no eval records")
	// ErrMixedClocks: runs of the virtual and the real clock against time.
	ErrMixedClocks = errors.New("their seconds cannot share an axis")
)

// A Metric is a value of a run's eval records that RunsPlot draws.
type Metric struct {
	Name  string // what a user picks it by: "p1", "train_loss"
	Label string // the vertical axis's label, with its unit
	Value func(runlog.Eval) float64
}

// Metrics are the values of an eval record a figure can draw.
var Metrics = []Metric{
	{"p1", "P@1", func(e runlog.Eval) float64 { return e.P1 }},
	{"p3", "P@3", func(e runlog.Eval) float64 { return e.P3 }},
	{"p5", "P@5", func(e runlog.Eval) float64 { return e.P5 }},
	{"ndcg1", "nDCG@1", func(e runlog.Eval) float64 { return e.NDCG1 }},
	{"ndcg3", "nDCG@3", func(e runlog.Eval) float64 { return e.NDCG3 }},
	{"ndcg5", "nDCG@5", func(e runlog.Eval) float64 { return e.NDCG5 }},
	{"psp1", "PSP@1 (propensity-scored)", func(e runlog.Eval) float64 { return e.PSP1 }},
	{"psp3", "PSP@3 (propensity-scored)", func(e runlog.Eval) float64 { return e.PSP3 }},
	{"psp5", "PSP@5 (propensity-scored)", func(e runlog.Eval) float64 { return e.PSP5 }},
	{"psndcg1", "PSnDCG@1 (propensity-scored)", func(e runlog.Eval) float64 { return e.PSNDCG1 }},
	{"psndcg3", "PSnDCG@3 (propensity-scored)", func(e runlog.Eval) float64 { return e.PSNDCG3 }},
	{"psndcg5", "PSnDCG@5 (propensity-scored)", func(e runlog.Eval) float64 { return e.PSNDCG5 }},
	{"loss", "test loss (cross-entropy)", func(e runlog.Eval) float64 { return e.Loss }},
	{"train_loss", "training loss (cross-entropy)", func(e runlog.Eval) float64 { return e.TrainLoss }},
}

// short is the metric's name for a title: its label without the unit.
func (m Metric) short() string {
	s, _, _ := strings.Cut(m.Label, " (")
	return s
}

// An Axis is an eval record's position in its run, which RunsPlot draws the
// metric against.
type Axis struct {
	Name  string // what a user picks it by: "time", "epoch", "samples"
	Short string // for titles: "P@1 against epochs"
	Label string // the horizontal axis's label; for seconds, the clock's unit follows
	// Seconds: the value is a time in the log's clock, which the label
	// names and which runs of another clock cannot share.
	Seconds bool
	Value   func(runlog.Eval) float64
}

// Axes are the positions a figure can draw against. Time is a run's
// train_seconds, in its log's clock.
var Axes = []Axis{
	{"time", "time", "training time", true, func(e runlog.Eval) float64 { return e.TrainSeconds }},
	{"epoch", "epochs", "epochs (passes over the training set)", false, func(e runlog.Eval) float64 { return e.Epoch }},
	{"samples", "samples", "samples (training points processed)", false, func(e runlog.Eval) float64 { return float64(e.Samples) }},
}

// RunsPlot draws metric y of each run's eval records against x: one line
// per run, named by its label (runlog.Run.Label; a run without a config
// record by its file's name, runlog.FileNames, and runs of one label by
// their files' names too). The title says what is drawn, after the dataset
// when every run says the same one. A run's Name is its log's path, which
// errors name.
//
// A run without eval records is an error (ErrNoEvals), and so are runs of
// the virtual and the real clock against time, an axis of Seconds
// (ErrMixedClocks): virtual seconds are the cost model's account of the
// simulated devices and real seconds a machine's, so one axis would
// compare what cannot be compared. Against epochs or samples the clocks do
// not matter.
func RunsPlot(runs []*runlog.Run, x Axis, y Metric) (Plot, error) {
	clock, err := runsClock(runs, x.Seconds)
	if err != nil {
		return Plot{}, err
	}
	p := Plot{Title: y.short() + " against " + x.Short, X: x.Label, Y: y.Label}
	if x.Seconds {
		p.X += " (" + clockUnit(clock) + ")"
	}
	if d := commonData(runs); d != "" {
		p.Title = d + ": " + p.Title
	}
	labels := legend(runs)
	for i, r := range runs {
		if len(r.Evals) == 0 {
			return Plot{}, fmt.Errorf("%s has %w, so nothing to plot: the run ended or was stopped before its first evaluation", r.Name, ErrNoEvals)
		}
		s := Series{Name: labels[i]}
		for _, e := range r.Evals {
			s.X = append(s.X, x.Value(e))
			s.Y = append(s.Y, y.Value(e))
		}
		p.Series = append(p.Series, s)
	}
	return p, nil
}

// BatchPlot draws one run's per-device batch sizes at each merge against
// the merge's time (the Adaptive SGD paper's Fig. 12), a line per device,
// with the devices' speeds when the config record gives them. A run
// without merge records that hold batch sizes is an error: only strategies
// that merge replicas write them.
func BatchPlot(r *runlog.Run) (Plot, error) {
	var series []Series
	for _, m := range r.Merges {
		if m.MergeRecord == nil {
			continue
		}
		for d, b := range m.BatchSizes {
			for len(series) <= d {
				series = append(series, Series{Name: fmt.Sprintf("device %d", len(series))})
			}
			series[d].X = append(series[d].X, m.Time)
			series[d].Y = append(series[d].Y, float64(b))
		}
	}
	if len(series) == 0 {
		return Plot{}, fmt.Errorf("%s has no merge records with batch sizes: only strategies that merge replicas (elastic, adaptive, ...) write them", r.Name)
	}
	if c := r.Config; c != nil && len(c.Speeds) == len(series) {
		for d := range series {
			series[d].Name += fmt.Sprintf(" (speed %g)", c.Speeds[d])
		}
	}
	title := legend([]*runlog.Run{r})[0]
	if r.Config != nil && r.Config.Data != "" {
		title = r.Config.Data + ", " + title
	}
	clock, _ := runsClock([]*runlog.Run{r}, false)
	return Plot{
		Title:  title + ": batch size per device at each merge",
		X:      "merge time (" + clockUnit(clock) + ")",
		Y:      "batch size (samples)",
		Series: series,
	}, nil
}

// runsClock returns the clock of the runs' seconds ("virtual", "real", or
// "" when no log says); runs of both are an error when their seconds are
// to share an axis (RunsPlot says why).
func runsClock(runs []*runlog.Run, sameAxis bool) (string, error) {
	clock, from := "", ""
	for _, r := range runs {
		if r.Config == nil || r.Config.Clock == "" {
			continue
		}
		switch {
		case clock == "":
			clock, from = r.Config.Clock, r.Name
		case r.Config.Clock != clock && sameAxis:
			return "", fmt.Errorf("%s ran on the %s clock and %s on the %s clock: %w", from, clock, r.Name, r.Config.Clock, ErrMixedClocks)
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

// legend names each run by its Label, and a log without a config record by
// its file's name (runlog.FileNames: the path as given when two files
// share a name). Runs whose labels are equal, such as two runs of one
// strategy, get that name too.
func legend(runs []*runlog.Run) []string {
	paths := make([]string, len(runs))
	for i, r := range runs {
		paths[i] = r.Name
	}
	files := runlog.FileNames(paths)
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
