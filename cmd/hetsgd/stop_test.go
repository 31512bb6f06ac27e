package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/internal/race"
)

// startTool starts the test binary as the tool with args, its stdout and
// stderr in the buffers returned.
func startTool(t *testing.T, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // catches a hang only
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), asTool+"=1")
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out, &errb
}

// waitFor polls until ready says so or the process ends (a generous
// deadline catches a hang only); false when the process ended first.
func waitFor(t *testing.T, cmd *exec.Cmd, exited <-chan struct{}, ready func() bool) bool {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); !ready(); time.Sleep(2 * time.Millisecond) {
		select {
		case <-exited:
			return false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never got there")
		}
	}
	return true
}

// lastEvalLine returns the last eval record of a run log, as written.
func lastEvalLine(t *testing.T, log string) string {
	t.Helper()
	evals := records(t, log, "eval")
	if len(evals) == 0 {
		t.Fatalf("%s holds no evaluation", log)
	}
	return evals[len(evals)-1]
}

var stops = flag.Int("stops", 8, "TestSignalSavesTheRun: how many runs to stop (8: each kind of run once)")

// SIGINT and SIGTERM save the run as it stands when it keeps checkpoints,
// wherever the signal lands — between batches, during an evaluation, a
// merge or a checkpoint's write — and --resume goes on from there: a
// virtual-clock run resumed ends with the uninterrupted run's final
// evaluation, its log whole; a real-clock run resumed reaches its budget.
// The moments are drawn at random (seeded): the signal lands where the
// machine's pace puts it, and every place must do.
func TestSignalSavesTheRun(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(46, 1))
	type job struct {
		clock, strategy string
		devices         int
	}
	jobs := []job{{"virtual", "adaptive", 4}, {"virtual", "elastic", 2}, {"virtual", "gem", 3}, {"real", "sync", 2},
		{"real", "elastic", 2}, {"virtual", "sync", 2}, {"real", "adaptive", 4}, {"virtual", "crossbow", 2}}
	want := map[job]string{} // the uninterrupted virtual runs' last evaluations
	runs := make([]int, *stops)
	for i := range runs {
		runs[i] = i
	}
	if race.Enabled && !flagSet("stops") {
		// Under the race detector, three: a virtual run (one goroutine
		// trains; the stop comes from the signal's) and two real ones
		// (devices on goroutines of their own), under both signals. The
		// ordinary stage stops one of each kind.
		runs = []int{0, 3, 6}
	}
	stopped := 0
	for _, i := range runs {
		j := jobs[i%len(jobs)]
		sig := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]
		name := fmt.Sprintf("%d-%s-%s", i, j.clock, j.strategy)
		args := []string{"train", "--time", j.clock, "--strategy", j.strategy, "--devices", fmt.Sprint(j.devices),
			"--hidden", "32", "--epochs", "12", "--eval-every", "0.5", "--progress", "off"}
		if _, ok := want[j]; !ok && j.clock == "virtual" {
			log := filepath.Join(dir, name+"-whole.jsonl")
			if code, _, errs := runCLI(t, append(args, "--log", log)...); code != 0 {
				t.Fatalf("%s: %s", name, errs)
			}
			want[j] = lastEvalLine(t, log)
		}
		ck, log := filepath.Join(dir, name), filepath.Join(dir, name+".jsonl")
		cmd, _, errb := startTool(t, append(args, "--checkpoint", ck, "--checkpoint-every", "2", "--log", log)...)
		exited := make(chan struct{})
		var werr error
		go func() { werr = cmd.Wait(); close(exited) }()
		// Wait for a drawn number of evaluations, then for a drawn moment
		// after: half the time while a checkpoint is being written, if the
		// signal can catch one.
		evals := 1 + rng.IntN(14)
		during := rng.IntN(2) == 0
		if !waitFor(t, cmd, exited, func() bool {
			b, _ := os.ReadFile(log)
			return bytes.Count(b, []byte(`"event":"eval"`)) >= evals
		}) {
			t.Fatalf("%s ended before its evaluation %d: %v %s", name, evals, werr, errb.String())
		}
		if during {
			waitFor(t, cmd, exited, func() bool {
				tmp, _ := filepath.Glob(filepath.Join(ck, ".checkpoint-*"))
				return len(tmp) > 0
			})
		} else {
			time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		}
		cmd.Process.Signal(sig)
		<-exited
		code := cmd.ProcessState.ExitCode()
		if code == 0 {
			// The run ended before the signal: nothing to resume.
			t.Logf("%s: ended before the signal", name)
			continue
		}
		if code != 128+int(sig) || !strings.Contains(errb.String(), "saved the stopped run in") {
			t.Fatalf("%s stopped by %v: exit %d, %s", name, sig, code, errb.String())
		}
		stopped++
		resumed, _ := runCLIOut(t, "train", "--resume", ck, "--progress", "off")
		for _, l := range strings.Split(strings.TrimSpace(string(mustRead(t, log))), "\n") {
			if !json.Valid([]byte(l)) {
				t.Fatalf("%s: a log line is not a whole record: %q", name, l)
			}
		}
		if n := len(records(t, log, "config")); n != 1 || len(records(t, log, "done")) != 1 {
			t.Fatalf("%s: the resumed log holds %d config and %d done records", name, n, len(records(t, log, "done")))
		}
		if j.clock == "virtual" {
			if got := lastEvalLine(t, log); got != want[j] {
				t.Errorf("%s stopped by %v after %d evaluations, resumed: last evaluation\n%s\nwant\n%s", name, sig, evals, got, want[j])
			}
		} else if !strings.Contains(resumed, "epoch  12.") {
			t.Errorf("%s: the resumed real-clock run did not reach its budget:\n%s", name, resumed)
		}
	}
	// A run the signal came too late for (a checkpoint's write waited for
	// that never came) proves nothing: most must have been stopped.
	if stopped < (len(runs)+1)/2 {
		t.Fatalf("only %d of %d runs were stopped before they ended", stopped, len(runs))
	}
}

// flagSet reports whether the test binary's flag name was given.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// runCLIOut runs the tool in this process and fails the test unless it
// exits 0; it returns stdout and stderr.
func runCLIOut(t *testing.T, args ...string) (string, string) {
	t.Helper()
	code, out, errs := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	return out, errs
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A second signal ends the process at once, as the first one's clean stop
// would take too long for a user who will not wait; what was written
// before stays whole.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	dir := t.TempDir()
	ck, log := filepath.Join(dir, "ck"), filepath.Join(dir, "run.jsonl")
	cmd, _, errb := startTool(t, "train", "--strategy", "elastic", "--devices", "2", "--epochs", "50", "--checkpoint", ck,
		"--checkpoint-every", "1", "--log", log, "--progress", "off")
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	if !waitFor(t, cmd, exited, func() bool { l, _ := filepath.Glob(filepath.Join(ck, "checkpoint-*.hck")); return len(l) > 0 }) {
		t.Fatalf("the run ended first: %s", errb.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Process.Signal(syscall.SIGINT)
	<-exited
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("two SIGINTs: exit %d, %s", code, errb.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(string(mustRead(t, log))), "\n") {
		if !json.Valid([]byte(l)) {
			t.Fatalf("a log line is not a whole record: %q", l)
		}
	}
	// Whatever checkpoint was whole before goes on.
	runCLIOut(t, "train", "--resume", ck, "--epochs", "4", "--progress", "off")
}
