package report_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/report"
	"github.com/hetsgd/hetsgd/runlog"
)

// readRun reads a run log held in a string, named path.
func readRun(t testing.TB, path, log string) *runlog.Run {
	t.Helper()
	r, err := runlog.Read(strings.NewReader(log), path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const (
	adaptiveLog = `{"event":"config","strategy":"adaptive","devices":2,"speeds":[1,0.5],"data":"bibtex","clock":"virtual"}
{"event":"merge","time":1.5,"batch_sizes":[128,64]}
{"event":"merge","time":3,"batch_sizes":[120,70]}
{"event":"eval","epoch":1,"samples":4880,"train_seconds":2.5,"p1":0.31,"loss":4.5}
{"event":"eval","epoch":2,"samples":9760,"train_seconds":5,"p1":0.38,"loss":4.1}
`
	syncLog = `{"event":"config","strategy":"sync","devices":1,"data":"bibtex","clock":"virtual"}
{"event":"eval","epoch":1,"samples":4880,"train_seconds":4,"p1":0.35,"loss":4.2}
`
)

// axis and metric look one up by its name, as hetsgd plot's flags give it.
func axis(name string) report.Axis {
	for _, a := range report.Axes {
		if a.Name == name {
			return a
		}
	}
	panic(name)
}

func metric(name string) report.Metric {
	for _, m := range report.Metrics {
		if m.Name == name {
			return m
		}
	}
	panic(name)
}

// A run log's P@1 against training time: the title names the dataset
// and what is drawn, the axis the clock's seconds, the line the run.
func ExampleRunsPlot() {
	log := `{"event":"config","strategy":"adaptive","devices":4,"data":"bibtex","clock":"virtual"}
{"event":"eval","epoch":1,"train_seconds":2.5,"p1":0.31}
{"event":"eval","epoch":2,"train_seconds":5,"p1":0.38}
`
	run, err := runlog.Read(strings.NewReader(log), "adaptive.jsonl") // or runlog.ReadFile
	if err != nil {
		panic(err)
	}
	p, err := report.RunsPlot([]*runlog.Run{run}, report.Axes[0], report.Metrics[0])
	if err != nil {
		panic(err)
	}
	// p.SaveSVGAndPNG("fig") would write fig.svg and fig.png.
	fmt.Println(p.Title)
	fmt.Println(p.X, "|", p.Y)
	for _, s := range p.Series {
		fmt.Println(s.Name, s.X, s.Y)
	}
	// Output:
	// bibtex: P@1 against time
	// training time (virtual seconds) | P@1
	// adaptive ×4 [2.5 5] [0.31 0.38]
}

// Runs are named by their labels, told apart by their files' names when
// the labels are equal; a log without a config record is named by its
// file's name, or its path when two files share a name. The title names
// the dataset only when every run says the same one.
func TestRunsPlotLegend(t *testing.T) {
	noConfig := `{"event":"eval","epoch":1,"samples":10,"train_seconds":1,"p1":0.1}` + "\n"
	runs := []*runlog.Run{
		readRun(t, "a/sync.jsonl", syncLog),
		readRun(t, "b/again.jsonl", syncLog),
		readRun(t, "runs/adaptive.jsonl", adaptiveLog),
		readRun(t, "x/run.jsonl", noConfig),
		readRun(t, "y/run.jsonl", noConfig),
	}
	p, err := report.RunsPlot(runs, axis("epoch"), metric("loss"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range p.Series {
		names = append(names, s.Name)
	}
	want := []string{"sync ×1 (sync.jsonl)", "sync ×1 (again.jsonl)", "adaptive ×2", "x/run.jsonl", "y/run.jsonl"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("legend %q, want %q", names, want)
	}
	if p.Title != "test loss against epochs" || p.X != "epochs (passes over the training set)" || p.Y != "test loss (cross-entropy)" {
		t.Errorf("title %q, axes %q and %q", p.Title, p.X, p.Y)
	}
	if s := p.Series[2]; fmt.Sprint(s.X, s.Y) != "[1 2] [4.5 4.1]" {
		t.Errorf("adaptive's series %v %v", s.X, s.Y)
	}
}

// Against time, runs of both clocks are an error naming both logs; against
// samples they share the axis. A log without evaluations is an error
// naming it. Either can be told apart, for a caller to say what to do.
func TestRunsPlotErrors(t *testing.T) {
	realRun := readRun(t, "real.jsonl", strings.Replace(syncLog, `"clock":"virtual"`, `"clock":"real"`, 1))
	virtual := readRun(t, "virtual.jsonl", syncLog)
	_, err := report.RunsPlot([]*runlog.Run{virtual, realRun}, axis("time"), metric("p1"))
	want := "virtual.jsonl ran on the virtual clock and real.jsonl on the real clock: their seconds cannot share an axis"
	if !errors.Is(err, report.ErrMixedClocks) || err.Error() != want {
		t.Fatalf("mixed clocks: %v, want %q", err, want)
	}
	if p, err := report.RunsPlot([]*runlog.Run{virtual, realRun}, axis("samples"), metric("p1")); err != nil || p.X != "samples (training points processed)" {
		t.Errorf("mixed clocks against samples: %q, %v", p.X, err)
	}
	if p, err := report.RunsPlot([]*runlog.Run{realRun}, axis("time"), metric("p1")); err != nil || p.X != "training time (wall-clock seconds, evaluation excluded)" {
		t.Errorf("the real clock: %q, %v", p.X, err)
	}
	configOnly := readRun(t, "config-only.jsonl", strings.SplitAfter(syncLog, "\n")[0])
	if _, err := report.RunsPlot([]*runlog.Run{virtual, configOnly}, axis("time"), metric("p1")); !errors.Is(err, report.ErrNoEvals) || !strings.HasPrefix(err.Error(), "config-only.jsonl has no eval records, so nothing to plot") {
		t.Errorf("no evaluations: %v", err)
	}
}

// BatchPlot draws a line per device, named with its speed, against the
// merges' time; a run that merges nothing is an error naming its log.
func TestBatchPlot(t *testing.T) {
	p, err := report.BatchPlot(readRun(t, "adaptive.jsonl", adaptiveLog))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(p.Title, "|", p.X, "|", p.Y)
	if want := "bibtex, adaptive ×2: batch size per device at each merge|merge time (virtual seconds)|batch size (samples)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(p.Series) != 2 || p.Series[1].Name != "device 1 (speed 0.5)" || fmt.Sprint(p.Series[1].X, p.Series[1].Y) != "[1.5 3] [64 70]" {
		t.Errorf("series %+v", p.Series)
	}
	if _, err := report.BatchPlot(readRun(t, "sync.jsonl", syncLog)); err == nil || !strings.HasPrefix(err.Error(), "sync.jsonl has no merge records") {
		t.Errorf("no merges: %v", err)
	}
}
