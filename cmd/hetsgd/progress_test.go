package main

import (
	"bytes"
	"strings"
	"testing"
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
	bar := newProgressBar(&b, 0)
	bar.Step(3.5, 100, 1, 0.5)
	if s := b.String(); !strings.Contains(s, "3.50/∞") || strings.Contains(s, "█") {
		t.Fatalf("drawn %q", s)
	}
	b.Reset()
	bar = newProgressBar(&b, 4)
	bar.Step(2, 100, 1, 0.5)
	if s := b.String(); !strings.Contains(s, "2.00/4") || strings.Count(s, "█") != 12 {
		t.Fatalf("drawn %q", s)
	}
}
