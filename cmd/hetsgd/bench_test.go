package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hetsgd/hetsgd/internal/testdata"
)

// cancelOnWrite cancels a context at its first write: a Ctrl-C as the
// first run ends.
type cancelOnWrite struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancel()
	return w.buf.Write(p)
}

// An interrupted bench stops at its next run with an error wrapping the
// context's, and leaves no report.md of its own and no temporary file: a
// complete report from before stays as it was.
func TestBenchInterrupted(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "report.md")
	os.WriteFile(md, []byte("# An earlier, complete report\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := &cancelOnWrite{cancel: cancel}
	err := runBench(ctx, []string{"--out", dir, "--force", "--quick", "--sets", "bibtex", "--study", "adaptive"}, stdout, new(bytes.Buffer))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted bench: %v, want an error wrapping context.Canceled", err)
	}
	if n := strings.Count(stdout.buf.String(), "\n"); n != 1 {
		t.Errorf("%d runs reported after the interruption at the first:\n%s", n, stdout.buf.String())
	}
	if b, _ := os.ReadFile(md); string(b) != "# An earlier, complete report\n" {
		t.Fatalf("report.md after an interrupted bench: %q", b)
	}
	for _, name := range testdata.Entries(t, dir) {
		if strings.HasPrefix(name, ".") || strings.Contains(name, "partial") {
			t.Errorf("an interrupted bench left %s", name)
		}
	}
}

// A bench that fails on its input fails before it writes anything.
func TestBenchBadInputWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	err := runBench(context.Background(), []string{"--out", dir, "--quick", "--sets", "bibtex", "--network", filepath.Join(t.TempDir(), "missing.json")}, new(bytes.Buffer), new(bytes.Buffer))
	if err == nil {
		t.Fatal("a missing --network file was accepted")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed bench made its folder: %v %v", testdata.Entries(t, dir), err)
	}
}

// A section the heterogeneity study does not have is an error naming the
// flag, before any data is read or report begun.
func TestBenchBadParts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	err := runBench(context.Background(), []string{"--out", dir, "--quick", "--study", "heterogeneity", "--sets", "amazon-synth", "--parts", "devices,speeds"}, new(bytes.Buffer), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), `--parts "speeds"`) {
		t.Fatalf("error %v, want one naming --parts and the bad section", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed bench made its folder: %v", err)
	}
	// The paper study's parts are known to it alone, and a study without
	// parts refuses the flag.
	for _, c := range []struct{ study, parts, want string }{
		{"heterogeneity", "scaling", `--parts "scaling": want spreads, protocols, devices, local`},
		{"adaptive", "devices", "only the heterogeneity and paper studies have parts"},
	} {
		err := runBench(context.Background(), []string{"--out", dir, "--quick", "--study", c.study, "--sets", "amazon-synth", "--parts", c.parts}, new(bytes.Buffer), new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--study %s --parts %s: %v, want %q", c.study, c.parts, err, c.want)
		}
	}
}

// The paper study takes the papers' sets from --data and refuses to run
// without one, and the other studies refuse them, before anything is
// written; --study all skips the paper study when --data holds none.
func TestBenchPaperSets(t *testing.T) {
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--study", "paper", "--data", empty}, "--study paper needs a stand-in of a paper's set in a --data folder"},
		{[]string{"--study", "paper", "--data", empty, "--sets", "delicious-200k"}, "--sets delicious-200k: no --data folder holds delicious-200k/"},
		{[]string{"--study", "adaptive", "--sets", "bibtex,amazon-670k"}, "--sets amazon-670k: a paper's set at full scale, which only --study paper runs"},
		{[]string{"--study", "paper", "--sets", "bibtex,amazon-670k"}, "--sets bibtex: --study paper runs only the papers' sets"},
	} {
		dir := filepath.Join(t.TempDir(), "report")
		err := runBench(context.Background(), append([]string{"--out", dir, "--quick"}, c.args...), new(bytes.Buffer), new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v: a failed bench made its folder: %v", c.args, err)
		}
	}
	// --study all without the papers' sets goes on without the paper
	// study (to stop here at GEM's MNIST, which --data lacks too).
	var stderr bytes.Buffer
	err := runBench(context.Background(), []string{"--out", filepath.Join(t.TempDir(), "report"), "--quick", "--study", "all", "--sets", "bibtex", "--data", empty}, new(bytes.Buffer), &stderr)
	if err == nil || !strings.Contains(err.Error(), "MNIST") || !strings.Contains(stderr.String(), "skipping the paper study") {
		t.Errorf("--study all without the papers' sets: %v\n%s", err, stderr.String())
	}
}
