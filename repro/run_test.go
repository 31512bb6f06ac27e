package repro_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/report"
	"github.com/hetsgd/hetsgd/repro"
)

// LoadSet gives bibtex from the binary and a synthetic set generated at its
// scale, with notes for the report; a set of the data directory that is
// not there is nil, an unknown name an error naming the known ones.
func TestLoadSet(t *testing.T) {
	ctx := context.Background()
	if got := strings.Join(repro.SetNames(), ","); got != "amazon-synth,bibtex,delicious,delicious-200k-synth" {
		t.Errorf("SetNames: %s", got)
	}
	bibtex, err := repro.LoadSet(ctx, "bibtex", "", 1)
	if err != nil || bibtex.Name != "bibtex" || bibtex.Train.Len() != 4880 || !strings.Contains(bibtex.Note, "bundled") {
		t.Fatalf("bibtex: %+v, %v", bibtex, err)
	}
	synth, err := repro.LoadSet(ctx, "delicious-200k-synth", "", 3)
	if err != nil || synth.Name != "delicious-200k-synth" || synth.Train.Len() != 3932 || !strings.Contains(synth.Note, "--scale 0.02 --seed 3") {
		t.Fatalf("delicious-200k-synth: %+v, %v", synth, err)
	}
	for _, dir := range []string{"", t.TempDir()} {
		for _, name := range []string{"delicious", "mnist", "amazon-670k"} {
			if set, err := repro.LoadSet(ctx, name, dir, 1); set != nil || err != nil {
				t.Errorf("%s from %q, which does not hold it: %v, %v", name, dir, set, err)
			}
		}
	}
	if _, err := repro.LoadSet(ctx, "eurlex", "", 1); err == nil || !strings.Contains(err.Error(), `"eurlex" (want amazon-synth, bibtex, delicious, delicious-200k-synth, or a paper's set: amazon-670k, delicious-200k)`) {
		t.Errorf("an unknown set: %v", err)
	}
}

// LoadSet reads Delicious from its folder of the data directory.
func TestLoadSetFromFolder(t *testing.T) {
	dir := filepath.Dir(testdata.Dir(t, "delicious"))
	set, err := repro.LoadSet(context.Background(), "delicious", dir, 1)
	if err != nil || set == nil || set.Train.Len() != 12920 || !strings.Contains(set.Note, "standard split") {
		t.Fatalf("delicious: %+v, %v", set, err)
	}
}

// Run refuses a study it does not know and GEM without MNIST, and stops
// before a study when its context is done, writing nothing of it.
func TestRunRefusals(t *testing.T) {
	dir := t.TempDir()
	rep, err := report.Create(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Abort()
	ctx := context.Background()
	if err := repro.Run(ctx, rep, []string{"adaptive", "slide"}, repro.Inputs{}, repro.Options{Quick: true}); err == nil || !strings.Contains(err.Error(), `"slide"`) {
		t.Errorf("an unknown study: %v", err)
	}
	if err := repro.Run(ctx, rep, []string{"gem"}, repro.Inputs{}, repro.Options{Quick: true}); err == nil || !strings.Contains(err.Error(), "MNIST") {
		t.Errorf("GEM without MNIST: %v", err)
	}
	if err := repro.Run(ctx, rep, []string{"paper"}, repro.Inputs{}, repro.Options{Quick: true}); err == nil || !strings.Contains(err.Error(), "amazon-670k, delicious-200k") {
		t.Errorf("the paper study without a paper's set: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = repro.Run(cancelled, rep, []string{"heterogeneity", "adaptive"}, repro.Inputs{}, repro.Options{Quick: true})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "before the adaptive study") {
		t.Errorf("a cancelled run: %v", err)
	}
	if runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*")); len(runs) != 0 || slices.Contains(testdata.Entries(t, dir), "report.md") {
		t.Errorf("a cancelled run wrote %v", testdata.Entries(t, dir))
	}
}

// The heterogeneity study's device counts on the bundled Bibtex, in quick
// mode (a smoke test, not a result), into a report folder.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "repro-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	bibtex, err := repro.LoadSet(ctx, "bibtex", "", 1)
	if err != nil {
		panic(err)
	}
	rep, err := report.Create(filepath.Join(dir, "report"), false)
	if err != nil {
		panic(err)
	}
	defer rep.Abort() // drops an unfinished report; nothing once it is closed
	opt := repro.Options{Quick: true, Seed: 1, Parts: []string{"devices"}}
	if err := repro.Run(ctx, rep, []string{"heterogeneity"}, repro.Inputs{Sets: []repro.Set{*bibtex}}, opt); err != nil {
		panic(err)
	}
	if err := rep.Close(); err != nil {
		panic(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report", "report.md"))
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Contains(string(md), "### 1 to 16 devices"))
	// Output: true
}
