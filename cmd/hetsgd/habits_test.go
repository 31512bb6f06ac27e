package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/runlog"
)

// withStdin runs f with the process's standard input reading text.
func withStdin(t *testing.T, text string, f func()) {
	t.Helper()
	r, w, err := os.Pipe()
	must(t, err)
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	go func() {
		io.WriteString(w, text)
		w.Close()
	}()
	f()
}

// "-" is the standard input wherever a command reads one data file: data
// stats, predict and eval score what it holds as they would the file.
func TestStdinData(t *testing.T) {
	dir := t.TempDir()
	text := "2 3 2\n0 0:1 1:1\n1 2:1\n"
	file := filepath.Join(dir, "points.txt")
	must(t, os.WriteFile(file, []byte(text), 0o644))
	model := smallModel(t, dir, modelConfig3x2)
	for _, args := range [][]string{
		{"data", "stats"},
		{"predict", "--model", model, "--data"},
		{"eval", "--model", model, "--data"},
	} {
		code, want, errs := runCLI(t, append(args, file)...)
		if code != 0 {
			t.Fatalf("%v FILE: exit %d, %s", args, code, errs)
		}
		var got string
		withStdin(t, text, func() { code, got, errs = runCLI(t, append(args, "-")...) })
		if code != 0 || strings.ReplaceAll(want, file, "standard input") != got {
			t.Errorf("%v -: exit %d, %s\n%q\nwant what the file gives:\n%q", args, code, errs, got, want)
		}
	}
}

// eval without --data scores the test set the model's run scored it on,
// saying so: the same figures as the run's own evaluation, whether the
// model is read from its checkpoint folder or from its export, whose card
// records it.
func TestEvalDefaultsToTheRunsData(t *testing.T) {
	dir := t.TempDir()
	ck, archive := filepath.Join(dir, "ck"), filepath.Join(dir, "m.npz")
	if code, _, errs := runCLI(t, "train", "--epochs", "1", "--hidden", "16", "--checkpoint", ck, "--progress", "off"); code != 0 {
		t.Fatalf("train: exit %d, %s", code, errs)
	}
	if code, _, errs := runCLI(t, "export", "--model", ck, "--which", "best", "--out", archive); code != 0 {
		t.Fatalf("export: exit %d, %s", code, errs)
	}
	_, want, _ := runCLI(t, "eval", "--model", ck, "--which", "best", "--data", "bundled:bibtex")
	for _, args := range [][]string{{"eval", "--model", ck, "--which", "best"}, {"eval", "--model", archive}} {
		code, out, errs := runCLI(t, args...)
		if code != 0 || out != want || !strings.Contains(errs, "scoring on bundled:bibtex, the test set the model's run scored it on (--data scores another)") {
			t.Errorf("%v: exit %d, %q, %s; want %q", args, code, out, errs, want)
		}
	}
}

// eval scores PSP@k with the propensities of the training split of the
// folder --data names, or of --train's file: the run's own last figures.
// A test file alone scores no PSP@k, and a training set of other labels
// is refused.
func TestEvalScoresPropensities(t *testing.T) {
	dir := t.TempDir()
	set, ck, log, other := filepath.Join(dir, "set"), filepath.Join(dir, "ck"), filepath.Join(dir, "run.jsonl"), filepath.Join(dir, "other")
	for _, args := range [][]string{
		{"data", "gen", "--like", "profile:bibtex", "--scale", "0.1", "--out", set},
		{"data", "gen", "--like", "profile:bibtex", "--scale", "0.3", "--out", other},
		{"train", "--data", set, "--epochs", "2", "--hidden", "16", "--checkpoint", ck, "--log", log, "--progress", "off", "--propensity", "amazon"},
	} {
		if code, _, errs := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d, %s", args, code, errs)
		}
	}
	evals, err := runlog.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	last := evals.Evals[len(evals.Evals)-1]
	want := fmt.Sprintf("PSP@1 %.4f  PSP@3 %.4f  PSP@5 %.4f", last.PSP1, last.PSP3, last.PSP5)
	testFile := filepath.Join(set, "test.txt")
	for _, args := range [][]string{{"--data", set}, {"--data", testFile, "--train", filepath.Join(set, "train.txt")}} {
		code, out, errs := runCLI(t, append([]string{"eval", "--model", ck, "--propensity", "amazon"}, args...)...)
		if code != 0 || !strings.Contains(out, want) || last.PSP1 == 0 {
			t.Errorf("eval %v: exit %d, %q, %s; want %q, the run's last", args, code, out, errs, want)
		}
	}
	if code, out, errs := runCLI(t, "eval", "--model", ck, "--data", testFile); code != 0 || strings.Contains(out, "PSP@") {
		t.Errorf("eval of a test file alone: exit %d, %q, %s; want no PSP@k", code, out, errs)
	}
	if code, _, errs := runCLI(t, "eval", "--model", ck, "--data", testFile, "--train", filepath.Join(other, "train.txt")); code == 0 || !strings.Contains(errs, "labels") {
		t.Errorf("eval with a training set of other labels: exit %d, %s", code, errs)
	}
}

// Under an address-space limit (ulimit -v), what a run may use is counted
// the same at every start, so that one run is admitted every time or
// never, and the message gives the limit's figures and the fix, with no
// runtime dump.
func TestAddressSpaceLimitDeterministic(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector maps terabytes of shadow memory: no address-space limit leaves it room")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to set ulimit -v with")
	}
	run := func(kib int64, args ...string) string {
		cmd := exec.Command("bash", append([]string{"-c", fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, kib), os.Args[0]}, args...)...)
		cmd.Env = append(os.Environ(), asTool+"=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if strings.Contains(stderr.String(), "goroutine ") {
			t.Fatalf("a runtime dump under ulimit -v %d:\n%s", kib, stderr.String())
		}
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Fatalf("exit %d under ulimit -v %d: %s", code, kib, stderr.String())
		}
		return stderr.String()
	}
	// A model of 400 million parameters under 3 GiB: refused, with the
	// same figures every time.
	big := []string{"train", "--hidden", "200000", "--epochs", "1", "--progress", "off"}
	first := run(3<<20, big...)
	room := regexp.MustCompile(`more than the (.+) available \(the address-space limit \(ulimit -v\) of 3\.0 GiB, less the (.+) the Go runtime and its threads map themselves\): raise the limit, or bound the memory with \$HETSGD_MEMORY_LIMIT instead`).FindStringSubmatch(first)
	if room == nil {
		t.Fatalf("under ulimit -v 3 GiB: %s", first)
	}
	for range 4 {
		if again := run(3<<20, big...); again != first {
			t.Fatalf("the same run under the same limit, told otherwise:\n%s\n%s", first, again)
		}
	}
}

// dashboard --snapshot writes the page of its logs once, whole, and
// neither over an existing file unless --force, nor over a log.
func TestDashboardSnapshot(t *testing.T) {
	dir := t.TempDir()
	log := "../../dashboard/testdata/adaptive.jsonl"
	out := filepath.Join(dir, "snap.html")
	if code, _, errs := runCLI(t, "dashboard", "--snapshot", out, log); code != 0 {
		t.Fatalf("a snapshot: exit %d, %s", code, errs)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), `<script type="application/json" id="snapshot">`) || !strings.Contains(string(b), `"adaptive.jsonl"`) {
		t.Fatalf("the snapshot: %v\n%.300s", err, b)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dashboard", "--snapshot", out, log}, "already exists"},
		{[]string{"dashboard", "--snapshot", log, log}, "refusing to write over an input"},
		{[]string{"dashboard", "--force", log}, "--force applies with --snapshot only"},
	} {
		if code, _, errs := runCLI(t, c.args...); code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %s; want %q", c.args, code, errs, c.want)
		}
	}
	if code, _, errs := runCLI(t, "dashboard", "--snapshot", out, "--force", log); code != 0 {
		t.Errorf("--force: exit %d, %s", code, errs)
	}
}
