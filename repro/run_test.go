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

// runStages records the stages a study's runs tell a stage.Reporter: each
// run's stage, its first detail (the run's name) and its last work done.
type runStages struct {
	names, details []string
	total, last    []float64
}

func (r *runStages) Stage(name string, total float64, unit string) {
	r.names = append(r.names, name+" ("+unit+")")
	r.total, r.last, r.details = append(r.total, total), append(r.last, -1), append(r.details, "")
}

func (r *runStages) Update(done float64, detail string) {
	i := len(r.names) - 1
	if done < r.last[i] {
		panic(fmt.Sprintf("%s: done %v after %v", r.names[i], done, r.last[i]))
	}
	r.last[i] = done
	if r.details[i] == "" {
		r.details[i] = detail
	}
}

// Each run of a study is a stage of its own, in order, named by its
// number, told its name and its epochs (or, under a time budget, its
// seconds) as they are done.
func TestRunReportsEachRun(t *testing.T) {
	ctx := context.Background()
	bibtex, err := repro.LoadSet(ctx, "bibtex", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Create(filepath.Join(t.TempDir(), "report"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Abort()
	var got runStages
	var lines strings.Builder
	opt := repro.Options{Quick: true, Seed: 1, Parts: []string{"devices"}, Progress: &got, Log: &lines}
	if err := repro.Run(ctx, rep, []string{"heterogeneity"}, repro.Inputs{Sets: []repro.Set{*bibtex}}, opt); err != nil {
		t.Fatal(err)
	}
	if len(got.names) == 0 || len(got.names) != strings.Count(lines.String(), "\n") {
		t.Fatalf("%d stages for %d runs:\n%s", len(got.names), strings.Count(lines.String(), "\n"), lines.String())
	}
	for i, name := range got.names {
		if a, b := fmt.Sprintf("run %d (epochs)", i+1), fmt.Sprintf("run %d (s of virtual time)", i+1); name != a && name != b {
			t.Errorf("stage %d: %q, want %q or %q", i, name, a, b)
		}
		if got.details[i] == "" || !strings.Contains(lines.String(), got.details[i]) {
			t.Errorf("stage %d: told %q, not a run's name", i, got.details[i])
		}
		if !(got.last[i] > 0 && got.last[i] <= got.total[i]) {
			t.Errorf("stage %d: %v epochs done of %v", i, got.last[i], got.total[i])
		}
	}
}

// Select reads bench's lists: all the studies in order, the sets split by
// study, the papers' sets by default for the paper study, the sections of
// the studies chosen; a bad name is an error naming its flag.
func TestSelect(t *testing.T) {
	s, err := repro.Select("all", "bibtex,amazon-670k", true, "devices,scaling")
	if err != nil || !slices.Equal(s.Studies, repro.Studies) || s.NamedPaper || !slices.Equal(s.Sets, []string{"bibtex"}) ||
		!slices.Equal(s.Paper, []string{"amazon-670k"}) || !slices.Equal(s.Parts, []string{"devices", "scaling"}) {
		t.Fatalf("all: %+v, %v", s, err)
	}
	if s, err := repro.Select("paper", "bibtex", false, ""); err != nil || !s.NamedPaper || !slices.Equal(s.Paper, repro.PaperSetNames()) {
		t.Fatalf("paper, sets not given: %+v, %v", s, err)
	}
	if s, err := repro.Select("lsgd", "bibtex", true, ""); err != nil || !s.SetsIgnored {
		t.Fatalf("lsgd with --sets: %+v, %v", s, err)
	}
	for _, c := range []struct{ study, sets, parts, want string }{
		{"nope", "bibtex", "", `--study "nope"`},
		{"adaptive", "bibtex,,x", "", "an empty name"},
		{"adaptive", "bibtx", "", `unknown dataset "bibtx"`},
		{"adaptive", "amazon-670k", "", "which only --study paper runs"},
		{"paper", "bibtex,amazon-670k", "", "--study paper runs only the papers' sets"},
		{"adaptive", "bibtex", "devices", "only the heterogeneity and paper studies have parts"},
		{"heterogeneity", "bibtex", "scaling", `--parts "scaling": want spreads`},
	} {
		if _, err := repro.Select(c.study, c.sets, true, c.parts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--study %s --sets %s --parts %s: %v, want %q", c.study, c.sets, c.parts, err, c.want)
		}
	}
}
