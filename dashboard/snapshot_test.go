//go:build unix

package dashboard_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/dashboard"
)

// A snapshot is one file that draws the logs as they stand, with no
// server: plain headless Chromium, the way a screenshot is taken, loads it
// and the page it dumps at its load event holds every evaluation's point,
// the runs' table and nothing waiting; the file asks for nothing else.
func TestSnapshotDrawsTheLogs(t *testing.T) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		if path, err = exec.LookPath("chromium-browser"); err != nil {
			t.Skip("chromium is not installed (Debian: apt-get install chromium); the snapshot's browser test needs it")
		}
	}
	logs := []string{"testdata/adaptive.jsonl", "testdata/gem.jsonl"}
	var page bytes.Buffer
	if err := dashboard.WriteSnapshot(&page, logs, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), nil); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{`src="`, `href="style.css"`, `href="favicon.svg"`} {
		if strings.Contains(page.String(), ref) {
			t.Errorf("the snapshot refers to another file: %s", ref)
		}
	}
	file := filepath.Join(t.TempDir(), "snap.html")
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The deadline only catches a hang: a dump takes a few seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-extensions", "--disable-background-networking", "--user-data-dir="+t.TempDir(),
		"--dump-dom", "file://"+file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	var want []string
	for run, log := range logs {
		for _, r := range records(t, readLog(t, log), "eval") {
			want = append(want, point(run, r["train_seconds"], r["p1"]))
		}
	}
	if got := chartPoints(t, string(dom), "p1-time"); !slices.Equal(got, canonical(t, want)) {
		t.Errorf("the snapshot draws P@1 against time at\n%q\nthe logs hold\n%q", got, canonical(t, want))
	}
	for _, w := range []string{"snapshot of 2026-05-01 12:00:00 UTC", `class="status snapshot"`, "adaptive.jsonl", "gem.jsonl"} {
		if !strings.Contains(string(dom), w) {
			t.Errorf("the snapshot's page lacks %q", w)
		}
	}
	if !regexp.MustCompile(`<p id="empty" class="empty" hidden="">`).MatchString(string(dom)) {
		t.Error("the snapshot's page still says it waits for records")
	}
}

// chartPoints returns the points (run, x, y) of the circles of the chart
// named chart in a dumped page.
func chartPoints(t *testing.T, dom, chart string) []string {
	t.Helper()
	i := strings.Index(dom, `data-chart="`+chart+`"`)
	if i < 0 {
		t.Fatalf("the page has no chart %s", chart)
	}
	fig := dom[i:]
	if j := strings.Index(fig, "</figure>"); j >= 0 {
		fig = fig[:j]
	}
	var got []string
	for _, m := range regexp.MustCompile(`<circle [^>]*data-run="(\d+)"[^>]*data-x="([^"]+)" data-y="([^"]+)"`).FindAllStringSubmatch(fig, -1) {
		got = append(got, m[1]+" "+m[2]+" "+m[3])
	}
	return canonical(t, got)
}

// When no log can be read, or none is a run log, as the dashboard starts,
// it is refused at once, before anything is served: the page would wait
// forever. A snapshot of such a log is refused too.
func TestServeLogsRefusesUnreadable(t *testing.T) {
	dir := t.TempDir()
	notLog := filepath.Join(dir, "notes.txt")
	os.WriteFile(notLog, []byte("a note\n"), 0o644)
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.jsonl"), "no such file"},
		{notLog, "not a run log"},
		{dir, "is a directory"},
	} {
		served := false
		err := dashboard.ServeLogs(context.Background(), "127.0.0.1:0", []string{c.path, c.path}, func(string) { served = true }, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || served {
			t.Errorf("%s: %v (served %v), want %q", c.path, err, served, c.want)
		}
		if err := dashboard.WriteSnapshot(&bytes.Buffer{}, []string{c.path}, time.Now(), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("a snapshot of %s: %v", c.path, err)
		}
	}
}
