package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plotLogs trains two short virtual-clock runs on the bundled Bibtex, sync
// on one device and adaptive on four (which logs merges), and returns
// their logs.
func plotLogs(t *testing.T) (syncLog, adaptiveLog string) {
	t.Helper()
	dir := t.TempDir()
	syncLog, adaptiveLog = filepath.Join(dir, "sync.jsonl"), filepath.Join(dir, "adaptive.jsonl")
	for _, args := range [][]string{
		{"--log", syncLog},
		{"--log", adaptiveLog, "--strategy", "adaptive", "--devices", "4", "--optimizer", "sgd", "--lr", "1", "--hidden", "32"},
	} {
		args = append([]string{"train", "--time", "virtual", "--epochs", "2", "--eval-every", "0.5", "--progress", "off"}, args...)
		if code, _, errs := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	return syncLog, adaptiveLog
}

func plot(args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	err = runPlot(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

// checkFigure checks that base.svg holds every text in want and that
// base.png is a PNG of a readable size.
func checkFigure(t *testing.T, base string, want ...string) {
	t.Helper()
	svg, err := os.ReadFile(base + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(svg), ">"+w+"<") {
			t.Errorf("%s.svg has no text %q", base, w)
		}
	}
	f, err := os.Open(base + ".png")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s.png: %v", base, err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 500 {
		t.Errorf("%s.png is %d×%d pixels", base, b.Dx(), b.Dy())
	}
}

// hetsgd plot draws one line per log, named by the run's label, with its
// axes labelled in their units, into FIG.svg and FIG.png, whichever of the
// three forms --out takes; flags may follow the logs.
func TestPlotLogs(t *testing.T) {
	syncLog, adaptiveLog := plotLogs(t)
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		base string
		want []string
	}{
		{[]string{"--out", filepath.Join(dir, "p1"), syncLog, adaptiveLog}, filepath.Join(dir, "p1"),
			[]string{"sync ×1", "adaptive ×4", "training time (virtual seconds)", "P@1", "bundled bibtex: P@1 against time"}},
		{[]string{syncLog, adaptiveLog, "--x", "epoch", "--y", "ndcg5", "--out", filepath.Join(dir, "ndcg.svg")}, filepath.Join(dir, "ndcg"),
			[]string{"sync ×1", "adaptive ×4", "epochs (passes over the training set)", "nDCG@5"}},
		{[]string{"--x", "samples", "--y", "train_loss", "--title", "Training loss", "--out", filepath.Join(dir, "loss.png"), "--", adaptiveLog}, filepath.Join(dir, "loss"),
			[]string{"adaptive ×4", "samples (training points processed)", "training loss (cross-entropy)", "Training loss"}},
		{[]string{"--y", "batch", "--out", filepath.Join(dir, "batch"), adaptiveLog}, filepath.Join(dir, "batch"),
			[]string{"device 0 (speed 1)", "device 3 (speed 1)", "merge time (virtual seconds)", "batch size (samples)"}},
	} {
		out, errs, err := plot(c.args...)
		if err != nil {
			t.Fatalf("plot %v: %v\n%s", c.args, err, errs)
		}
		if want := "wrote " + c.base + ".svg and " + c.base + ".png\n"; out != want {
			t.Errorf("plot %v printed %q, want %q", c.args, out, want)
		}
		checkFigure(t, c.base, c.want...)
	}
	// An existing figure is replaced.
	if _, errs, err := plot("--out", filepath.Join(dir, "p1.svg"), "--y", "p5", syncLog); err != nil {
		t.Fatalf("over an existing figure: %v\n%s", err, errs)
	}
	checkFigure(t, filepath.Join(dir, "p1"), "P@5")
}

// Two runs of the same label are told apart by their files' names.
func TestPlotSameLabel(t *testing.T) {
	syncLog, _ := plotLogs(t)
	other := filepath.Join(t.TempDir(), "again.jsonl")
	b, err := os.ReadFile(syncLog)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(other, b, 0o644)
	base := filepath.Join(t.TempDir(), "fig")
	if _, errs, err := plot("--out", base, syncLog, other); err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	checkFigure(t, base, "sync ×1 (sync.jsonl)", "sync ×1 (again.jsonl)")
}

// Errors say which file or flag is wrong and what to do; nothing is
// written.
func TestPlotErrors(t *testing.T) {
	syncLog, adaptiveLog := plotLogs(t)
	dir := t.TempDir()
	b, err := os.ReadFile(syncLog)
	if err != nil {
		t.Fatal(err)
	}
	configOnly := filepath.Join(dir, "config-only.jsonl")
	os.WriteFile(configOnly, b[:bytes.IndexByte(b, '\n')+1], 0o644)
	realLog := filepath.Join(dir, "real.jsonl")
	os.WriteFile(realLog, bytes.Replace(b, []byte(`"clock":"virtual"`), []byte(`"clock":"real"`), 1), 0o644)
	svgLog := filepath.Join(dir, "log.svg") // a log that --out would overwrite
	os.WriteFile(svgLog, b, 0o644)
	garbage := filepath.Join(dir, "garbage.jsonl")
	os.WriteFile(garbage, []byte("not a run log\n"), 0o644)
	out := filepath.Join(dir, "fig")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--out", out, configOnly}, []string{configOnly, "no eval records"}},
		{[]string{"--out", out, filepath.Join(dir, "missing.jsonl")}, []string{"missing.jsonl", "no such file"}},
		{[]string{"--out", out, garbage}, []string{garbage + ":1", "not a JSON record"}},
		{[]string{"--out", out, syncLog, realLog}, []string{syncLog, realLog, "virtual clock", "real clock", "--x epoch"}},
		{[]string{"--out", out, "--y", "p2", syncLog}, []string{`--y "p2"`, "p1, p3"}},
		{[]string{"--out", out, "--x", "steps", syncLog}, []string{`--x "steps"`, "time, epoch or samples"}},
		{[]string{"--out", out + ".pdf", syncLog}, []string{"fig.pdf", "FIG.svg or FIG.png"}},
		{[]string{"--out", out, "--y", "batch", syncLog}, []string{syncLog, "no merge records"}},
		{[]string{"--out", out, "--y", "batch", syncLog, adaptiveLog}, []string{"one LOG"}},
		{[]string{"--out", filepath.Join(dir, "log"), svgLog}, []string{"refusing to write over an input", svgLog}},
	} {
		_, _, err := plot(c.args...)
		if err == nil {
			t.Errorf("plot %v succeeded", c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("plot %v: %q does not say %q", c.args, err, w)
			}
		}
	}
	for _, ext := range []string{".svg", ".png"} {
		if _, err := os.Stat(out + ext); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a failed plot wrote %s%s", out, ext)
		}
	}
	// Mixed clocks are fine against epochs.
	if _, errs, err := plot("--x", "epoch", "--out", out, syncLog, realLog); err != nil {
		t.Fatalf("mixed clocks against epochs: %v\n%s", err, errs)
	}

	// Usage errors: no logs, no --out, an unknown flag (after a log too);
	// --help is no error.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", out}, "Usage: hetsgd plot"},
		{[]string{syncLog}, "Usage: hetsgd plot"},
		{[]string{syncLog, "--outt", out}, "unknown flag --outt"},
	} {
		if _, errs, err := plot(c.args...); !errors.Is(err, errUsage) || !strings.Contains(errs, c.want) {
			t.Errorf("plot %v: %v, want a usage error saying %q:\n%s", c.args, err, c.want, errs)
		}
	}
	if _, errs, err := plot("--help"); !errors.Is(err, flag.ErrHelp) || !strings.Contains(errs, "--out") {
		t.Errorf("plot --help: %v\n%s", err, errs)
	}
}
