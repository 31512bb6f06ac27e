package repro

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/report"
)

// The Adaptive SGD study runs end to end in quick mode and writes a report
// with its sections, figures and run logs.
func TestAdaptiveStudyQuick(t *testing.T) {
	if raceEnabled {
		t.Skip("the engines' concurrency is covered by their own race tests")
	}
	tr, te, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rep, err := report.Create(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet("bibtex", tr, te, "")
	if err != nil {
		t.Fatal(err)
	}
	err = AdaptiveSGD(context.Background(), rep, []Set{set}, Options{Quick: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Close(); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"### Learning rate", "(Fig. 6, 7)", "Claims on 4 devices", "(Fig. 12)", "### Real time", "(Fig. 8)", "(Fig. 9–11)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*.jsonl"))
	svgs, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	if len(runs) < 20 || len(svgs) < 8 {
		t.Fatalf("%d run logs and %d figures", len(runs), len(svgs))
	}
}
