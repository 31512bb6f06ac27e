package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// "auto" asks the writer the command was given, not the process's stderr.
func TestProgressAutoAsksTheWriter(t *testing.T) {
	if on, err := progressWanted("auto", &bytes.Buffer{}); err != nil || on {
		t.Fatalf("auto on a buffer: %v, %v; want no bar", on, err)
	}
}

// Without an epoch limit the bar is never full and the epoch has no total.
func TestProgressWithoutEpochLimit(t *testing.T) {
	var b bytes.Buffer
	bar := newProgressBar(&b, 0, 0)
	bar.Step(3.5, 100, 1, 0.5)
	if s := b.String(); !strings.Contains(s, "3.50/∞") || strings.Contains(s, "█") {
		t.Fatalf("drawn %q", s)
	}
	b.Reset()
	bar = newProgressBar(&b, 4, 0)
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
	bar := newProgressBar(&b, 10, 0)
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
	bar = newProgressBar(&b, 0, 100) // a time budget alone
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
