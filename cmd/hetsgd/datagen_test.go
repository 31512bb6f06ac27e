package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// data gen refuses, before any work, to write over what it reads: --out
// holding the --like folder's files (or a link to them), --save-fit
// naming the --like fit file, or one of the --out set's files; absurd
// sizes are refused with the bytes they would take; and nothing the
// refusals name is changed.
func TestDataGenRefusesToReplaceItsInputs(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if code, _, errs := runCLI(t, "data", "gen", "--like", "bibtex", "--scale", "0.05", "--out", real); code != 0 {
		t.Fatalf("data gen: exit %d %s", code, errs)
	}
	fit := filepath.Join(base, "fit.json")
	train := filepath.Join(real, "train.txt")
	before, err := os.ReadFile(train)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(fit, []byte("{}"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--like", real, "--out", real, "--force", "--fit-speed=false"}, "--out " + train + " is the --like"},
		{[]string{"--like", real, "--out", link, "--force", "--fit-speed=false"}, "is the --like"},
		{[]string{"--like", train, "--out", real, "--force", "--fit-speed=false"}, "is the --like"},
		{[]string{"--like", real, "--save-fit", train, "--force", "--fit-speed=false"}, "--save-fit " + train + " is the --like"},
		{[]string{"--like", fit, "--save-fit", fit, "--out", filepath.Join(base, "y"), "--force"}, "--save-fit " + fit + " is the --like"},
		{[]string{"--like", real, "--save-fit", filepath.Join(base, "z", "train.txt"), "--out", filepath.Join(base, "z"), "--fit-speed=false"}, "is the --out set's train.txt"},
		{[]string{"--like", "amazon-670k", "--points", "2000000000", "--out", filepath.Join(base, "huge")}, "--points 2000000000: too large to write: the sets would take about"},
		// A fit is refused once the set is measured, before its searches.
		{[]string{"--like", real, "--points", "2000000000", "--out", filepath.Join(base, "huge")}, "--points 2000000000: too large to write: the sets would take about"},
	} {
		code, _, errs := runCLI(t, append([]string{"data", "gen"}, c.args...)...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("data gen %s: exit %d, %q; want %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
	if after, _ := os.ReadFile(train); string(after) != string(before) {
		t.Errorf("%s changed", train)
	}
	if b, _ := os.ReadFile(fit); string(b) != "{}" {
		t.Errorf("%s changed: %q", fit, b)
	}
	for _, dir := range []string{"huge", "y", "z"} {
		if _, err := os.Stat(filepath.Join(base, dir)); err == nil {
			t.Errorf("a refused data gen made %s", dir)
		}
	}
}

// The commands that report their stages refuse a --progress they do not
// know, before any work.
func TestProgressModeRefused(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"data", "gen", "--like", "bibtex", "--scale", "0.05", "--out", filepath.Join(dir, "d"), "--progress", "yes"},
		{"calibrate", "--quick", "--progress", "yes"},
		{"bench", "--out", filepath.Join(dir, "b"), "--quick", "--progress", "yes"},
		{"tune", "--strategies", "sync", "--lrs", "1", "--epochs", "0.1", "--progress", "yes"},
	} {
		code, out, errs := runCLI(t, args...)
		if code != 1 || !strings.Contains(errs, `--progress "yes": want auto, on or off`) || out != "" {
			t.Errorf("%s: exit %d, %q %q", strings.Join(args, " "), code, out, errs)
		}
	}
	for _, d := range []string{"d", "b"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
			t.Errorf("a refused command made %s", d)
		}
	}
}
