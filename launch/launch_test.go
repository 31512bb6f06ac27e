package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/internal/testdata"
)

// A job that fails twice, then succeeds, is restarted twice with the
// commands Next gives, each told of the failure it recovers from; one that
// keeps failing stops when its restarts are spent, naming each failure.
func TestRunRestarts(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	// The job: count its attempts; fail (killed) until the third; the
	// third checks it was told it is the second restart.
	script := `n=$(($(cat ` + count + ` 2>/dev/null || echo 0) + 1)); echo $n > ` + count + `
if [ "$n" -lt 3 ]; then kill -9 $$; fi
case "$HETSGD_RESTART" in *'"attempt":2'*) exit 0;; esac; exit 5`
	var said []string
	var got []int
	j := &Job{Command: []string{"sh", "-c", script}, MaxRestarts: 3, Grace: time.Second,
		Next: func(attempt int, f *Restart, started bool) ([]string, error) {
			got = append(got, attempt)
			if !strings.Contains(f.Failure, "SIGKILL") || started {
				t.Errorf("restart %d after %+v (started %v)", attempt, f, started)
			}
			return []string{"sh", "-c", script}, nil
		},
		Say: func(line string) { said = append(said, line) }}
	if err := j.Run(context.Background()); err != nil {
		t.Fatalf("%v; said %q", err, said)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("restarts %v, want 1 and 2", got)
	}
	// Failing after its first step: a restart may fix it.
	step := `printf '{"samples":10,"first_step":1,"checkpoint":-1}' > "$HETSGD_LAUNCH/progress.json"; `
	j = &Job{Command: []string{"sh", "-c", step + "exit 3"}, MaxRestarts: 2,
		Next: func(int, *Restart, bool) ([]string, error) { return []string{"sh", "-c", step + "exit 4"}, nil }}
	err := j.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "failed 3 times; its restarts are spent (2)") || !strings.Contains(err.Error(), "exit status 4") {
		t.Fatalf("a job that keeps failing: %v", err)
	}
}

// The job's progress reports say how much work a failure lost: what it
// did since its last checkpoint, or, before its first, since its start
// (the checkpoint it resumed, which it reports as its last, or the run's
// start).
func TestRunCountsLostWork(t *testing.T) {
	for _, c := range []struct {
		progress string
		samples  int64
		seconds  float64
		said     string
	}{
		{`{"samples":900,"train_seconds":9,"first_step":1,"checkpoint":600,"checkpoint_seconds":6}`, 300, 3, "300 samples (3.00 s of training) since its last checkpoint are lost"},
		{`{"samples":900,"train_seconds":9,"first_step":1,"checkpoint":-1}`, 900, 9, "before its first checkpoint: all 900 samples (9.00 s of training) since its start are lost"},
	} {
		script := `printf '` + c.progress + `' > "$HETSGD_LAUNCH/progress.json"; exit 1`
		var f *Restart
		var said []string
		j := &Job{Command: []string{"sh", "-c", script}, MaxRestarts: 1, Say: func(l string) { said = append(said, l) },
			Next: func(_ int, r *Restart, started bool) ([]string, error) {
				f = r
				if !started {
					t.Error("a job that reported its first step counted as not started")
				}
				return []string{"true"}, nil
			}}
		if err := j.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if f == nil || f.LostSamples != c.samples || f.LostSeconds != c.seconds {
			t.Errorf("%s: restart %+v, want %d samples and %g s lost", c.progress, f, c.samples, c.seconds)
		}
		if len(said) == 0 || !strings.Contains(said[0], c.said) {
			t.Errorf("%s: said %q, want %q", c.progress, said, c.said)
		}
	}
}

// A launcher stopped stops its job — SIGTERM, then SIGKILL after the grace
// — and leaves no process of it behind, however deep.
func TestRunStopsTheWholeJob(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	// A job whose leader ignores SIGTERM and whose child sleeps on.
	script := `trap '' TERM; sleep 1000 & echo $! > ` + pids + `; wait`
	ctx, cancel := context.WithCancel(context.Background())
	j := &Job{Command: []string{"sh", "-c", script}, Grace: 200 * time.Millisecond, Stderr: &bytes.Buffer{}}
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	testdata.Until(t, "the job's start", func() bool {
		b, err := os.ReadFile(pids)
		return err == nil && len(b) > 0
	})
	cancel()
	if err := testdata.Recv(t, done, "the stopped launcher's return"); !errors.Is(err, ErrStopped) {
		t.Fatalf("a stopped launcher: %v", err)
	}
	// SIGKILL has been sent to the whole group: the child ends however
	// busy the machine is, or never (a sleep of 1000 s outlives the wait).
	b, _ := os.ReadFile(pids)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	testdata.Until(t, fmt.Sprintf("the end of the job's child %d", pid), func() bool {
		return syscall.Kill(pid, 0) != nil || zombie(pid)
	})
}

// zombie reports whether process pid has ended and waits to be reaped (in
// a container whose first process reaps nobody, it may wait for ever).
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}

// A Reporter without a launcher does nothing; with one, it writes the
// first step at once and later steps at most every reportEvery.
func TestReporter(t *testing.T) {
	t.Setenv(EnvDir, "")
	NewReporter().Step(1, 1) // nil: nothing
	dir := t.TempDir()
	t.Setenv(EnvDir, dir)
	r := NewReporter()
	r.Resumed(100, 1)
	first := time.Now()
	r.Step(110, 1.1)
	p := readProgress(dir)
	if p == nil || p.Samples != 110 || p.FirstStep == 0 || p.Checkpoint != 100 {
		t.Fatalf("after the first step: %+v", p)
	}
	r.Step(120, 1.2)
	// Within reportEvery of the first: not written. A machine busy enough
	// to hold this goroutine up for longer leaves nothing to check.
	if within := time.Since(first) < reportEvery; within {
		if p := readProgress(dir); p.Samples != 110 {
			t.Errorf("a step within %v was written: %+v", reportEvery, p)
		}
	} else {
		t.Logf("the second step came %v after the first: not within %v", time.Since(first), reportEvery)
	}
	r.Checkpoint(130, 1.3)
	if p := readProgress(dir); p.Checkpoint != 130 || p.Samples != 130 {
		t.Errorf("after a checkpoint: %+v", p)
	}
}
