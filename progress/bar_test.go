package progress

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/runlog"
)

// Without an epoch limit the bar is never full and the epoch has no total.
func TestProgressWithoutEpochLimit(t *testing.T) {
	var b bytes.Buffer
	bar := New(&b, 0, 0)
	bar.Step(3.5, 100, 1, 0.5)
	if s := b.String(); !strings.Contains(s, "3.50/∞") || strings.Contains(s, "█") {
		t.Fatalf("drawn %q", s)
	}
	b.Reset()
	bar = New(&b, 4, 0)
	bar.Step(2, 100, 1, 0.5)
	if s := b.String(); !strings.Contains(s, "2.00/4") || strings.Count(s, "█") != 12 {
		t.Fatalf("drawn %q", s)
	}
}

// The bar shows the wall time since the start and the time left, from the
// share of the run done since this process took it up (a resumed run's
// start does not count) or of the time budget, whichever is further.
func TestProgressElapsedAndETA(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(1000, 0)
	bar := New(&b, 10, 0)
	bar.start, bar.now = now, func() time.Time { return now }
	bar.Step(4, 100, 1, 0.5) // a resumed run, at epoch 4
	if s := b.String(); !strings.Contains(s, "0:00, ETA –") {
		t.Fatalf("at the start: %q", s)
	}
	now = now.Add(90 * time.Second)
	b.Reset()
	bar.Step(7, 200, 2, 0.5) // 3 epochs in 90 s: 3 more take 90 s
	if s := b.String(); !strings.Contains(s, "1:30, ETA 1:30") {
		t.Fatalf("half-way: %q", s)
	}
	bar = New(&b, 0, 100) // a time budget alone
	bar.start, bar.now = now, func() time.Time { return now }
	bar.Step(1, 100, 0, 0.5)
	now = now.Add(time.Hour)
	b.Reset()
	bar.Step(2, 200, 25, 0.5) // a quarter of the budget in an hour
	if s := b.String(); !strings.Contains(s, "1:00:00, ETA 3:00:00") {
		t.Fatalf("a budget: %q", s)
	}
	if got := clock(65 * time.Minute); got != "1:05:00" {
		t.Fatalf("clock: %q", got)
	}
}

// printer writes, into the bar's writer, what a run prints besides the bar.
type printer struct{ w *bytes.Buffer }

func (p printer) Step(float64, int64, float64, float64) { p.w.WriteString("step!") }
func (p printer) Eval(r runlog.Eval)                    { fmt.Fprintf(p.w, "eval %g\n", r.Epoch) }
func (p printer) Warn(w runlog.Warning)                 { fmt.Fprintf(p.w, "warning: %s\n", w.Text) }

// The Observer clears the bar before each line the printer prints and
// draws it again after, gives the printer no steps, and leaves no bar
// behind at the end.
func TestObserverNeverInterleaves(t *testing.T) {
	var b bytes.Buffer
	o := &Observer{Printer: printer{&b}, Bar: New(&b, 2, 0)}
	o.Step(1, 100, 1, 0.5)
	o.Eval(runlog.Eval{Epoch: 1, Fields: metric.Fields{P1: 0.25}})
	o.Warn(runlog.Warning{Text: "slow"})
	o.Finish()
	// Each drawing of the bar starts with "\r\033[K"; name them.
	got := strings.ReplaceAll(b.String(), "\r\033[K", "|")
	got = regexp.MustCompile(`\| epoch [^|\n]*`).ReplaceAllString(got, "|bar")
	if want := "|bar|eval 1\n|bar|warning: slow\n|bar|"; got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
	if !strings.Contains(b.String(), "P@1 0.2500") {
		t.Fatalf("the bar after the evaluation does not show its P@1: %q", b.String())
	}
}

// A printer that does not warn is not given warnings; the bar is still
// drawn again.
func TestObserverPrinterWithoutWarn(t *testing.T) {
	var b bytes.Buffer
	o := &Observer{Printer: struct{ engine.Observer }{printer{&b}}, Bar: New(&b, 2, 0)}
	o.Warn(runlog.Warning{Text: "slow"})
	if s := b.String(); strings.Contains(s, "slow") || !strings.Contains(s, " epoch ") {
		t.Fatalf("wrote %q", s)
	}
}
