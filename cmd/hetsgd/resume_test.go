package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/train"
)

// resumeArgs is a virtual-time run of Adaptive SGD on 4 uneven devices with
// dropout, long enough to be killed in the middle.
var resumeArgs = []string{"train", "--time", "virtual", "--strategy", "adaptive", "--devices", "4", "--speeds", "1,0.9,0.8,0.68",
	"--epochs", "6", "--eval-every", "0.5", "--hidden", "32", "--progress", "off"}

// records returns the lines of a run log whose event is one of events.
func records(t *testing.T, path string, events ...string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r struct{ Event string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: a line that is not a whole JSON record: %q", path, sc.Text())
		}
		for _, e := range events {
			if r.Event == e {
				out = append(out, sc.Text())
			}
		}
	}
	return out
}

// The bar: a virtual-time run killed with SIGKILL at points spread over the
// run — sometimes while it writes a checkpoint — and resumed from its folder
// writes the evaluations of the run never interrupted, byte for byte, and
// its log holds whole records only. The kill points are chosen by the run's
// progress (the checkpoints it has written), not by the wall clock, so that
// they fall in the middle of the run however busy the machine is.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the tool a dozen times")
	}
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.jsonl")
	if code, _, stderr := runCLI(t, append(resumeArgs, "--log", ref)...); code != 0 {
		t.Fatalf("the uninterrupted run: exit %d: %s", code, stderr)
	}
	want := records(t, ref, "eval", "merge")
	const every = 0.1 // epochs between checkpoints: 60 in the run
	total := int64(6 * train.BundledPoints)
	start := func(ck, log string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], append(resumeArgs, "--checkpoint", ck, "--checkpoint-every", strconv.FormatFloat(every, 'g', -1, 64), "--log", log)...)
		cmd.Env = append(os.Environ(), asTool+"=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	// newest returns the samples of the newest checkpoint in ck (-1: none).
	newest := func(ck string) int64 {
		latest, err := checkpoint.Latest(ck)
		if err != nil {
			return -1
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(latest), "checkpoint-"), ".hck"), 10, 64)
		return n
	}
	midWrite := 0
	// The checkpoints each run has written when it is killed: from the
	// first to the last but two.
	kills := []int{1, 3, 8, 14, 21, 29, 36, 44, 51, 57}
	if race.Enabled {
		// The killed runs are this binary, instrumented: three of them,
		// spread the same way, under the race detector (a virtual-time run
		// trains on one goroutine: the ordinary stage kills all ten).
		kills = []int{1, 29, 57}
	}
	for i, k := range kills {
		ck, log := filepath.Join(dir, "ck"+itoa(i)), filepath.Join(dir, "run"+itoa(i)+".jsonl")
		cmd := start(ck, log)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		target := int64(float64(k) * every * train.BundledPoints)
		for newest(ck) < target {
			select {
			case err := <-exited:
				t.Fatalf("kill %d: the run ended (%v) before its checkpoint at %d samples", i, err, target)
			case <-time.After(time.Millisecond):
			}
		}
		cmd.Process.Kill()
		<-exited
		left, _ := os.ReadDir(ck)
		for _, e := range left {
			if strings.HasPrefix(e.Name(), ".checkpoint-") {
				midWrite++ // a checkpoint's temporary file: killed while writing it
				break
			}
		}
		latest, err := checkpoint.Latest(ck)
		if err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		records(t, log, "eval") // every line of the killed run's log is a whole record
		rd, err := checkpoint.Open(latest)
		if err != nil {
			t.Fatalf("kill %d: the newest checkpoint: %v", i, err)
		}
		saved, _, err := engine.ReadSaved(rd)
		rd.Close()
		if err != nil {
			t.Fatal(err)
		}
		if saved.Samples < target || saved.Samples >= total {
			t.Fatalf("kill %d: the newest checkpoint is at %d samples, not in the middle of the run (from %d, of %d)", i, saved.Samples, target, total)
		}
		if code, _, stderr := runCLI(t, "train", "--resume", ck); code != 0 {
			t.Fatalf("kill %d: resuming: exit %d: %s", i, code, stderr)
		}
		if got := records(t, log, "eval", "merge"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("kill %d after %d samples: the resumed run's evaluations and merges differ from the uninterrupted run's (%d vs %d records)",
				i, saved.Samples, len(got), len(want))
		}
		if n := len(records(t, log, "config")); n != 1 {
			t.Fatalf("kill %d: %d config records in the continued log", i, n)
		}
	}
	t.Logf("%d runs killed in the middle and resumed, %d of them while writing a checkpoint", len(kills), midWrite)
}

func itoa(i int) string { return strconv.Itoa(i) }

// A damaged checkpoint is refused with a clear error naming the file and
// the one before it; a setting that may not change is refused by name; a
// new --log starts a new file.
func TestResumeErrors(t *testing.T) {
	dir := t.TempDir()
	ck, log := filepath.Join(dir, "ck"), filepath.Join(dir, "run.jsonl")
	args := append(resumeArgs[:len(resumeArgs):len(resumeArgs)], "--epochs", "1", "--checkpoint", ck, "--checkpoint-every", "0.5", "--log", log)
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, _, stderr := runCLI(t, "train", "--resume", ck, "--lr", "0.5")
	if code == 0 || !strings.Contains(stderr, "--lr 0.5") || !strings.Contains(stderr, "keeps it") {
		t.Errorf("--lr changed on resume: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "train", "--resume", ck, "--strategy", "sync")
	if code == 0 || !strings.Contains(stderr, "--strategy sync") {
		t.Errorf("--strategy changed on resume: exit %d, %s", code, stderr)
	}
	t.Run("other-data", func(t *testing.T) {
		code, _, stderr := runCLI(t, "train", "--resume", ck, "--data", testdata.Dir(t, "delicious"))
		if code == 0 || !strings.Contains(stderr, "a resumed run trains on the same data") {
			t.Errorf("other data on resume: exit %d, %s", code, stderr)
		}
	})
	other := filepath.Join(dir, "more.jsonl")
	if code, _, stderr := runCLI(t, "train", "--resume", ck, "--epochs", "2", "--log", other); code != 0 {
		t.Fatalf("a longer run into a new log: exit %d: %s", code, stderr)
	}
	if recs := records(t, other, "config", "resume"); len(recs) != 2 || !strings.Contains(recs[0], `"event":"config"`) || !strings.Contains(recs[1], `"epochs":"2"`) {
		t.Errorf("the new log starts with %v, want the config record, then the resume record with the new epochs", recs)
	}
	list, err := checkpoint.Dir(ck).List()
	if err != nil || len(list) != 2 {
		t.Fatalf("checkpoints %v (%v), want the newest two", list, err)
	}
	b, _ := os.ReadFile(list[1])
	b[len(b)/2] ^= 0x40
	os.WriteFile(list[1], b, 0o644)
	code, _, stderr = runCLI(t, "train", "--resume", ck)
	if code == 0 || !strings.Contains(stderr, list[1]) || !strings.Contains(stderr, "checksum") || !strings.Contains(stderr, "--resume "+list[0]) {
		t.Errorf("a damaged checkpoint: exit %d, %s; want an error naming it, its checksum and the one before", code, stderr)
	}
	if code, _, stderr := runCLI(t, "train", "--resume", list[0], "--log", filepath.Join(dir, "from-older.jsonl")); code != 0 {
		t.Errorf("resuming from the older checkpoint: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "train", "--resume", filepath.Join(dir, "nothing"))
	if code == 0 || !strings.Contains(stderr, "nothing") {
		t.Errorf("a missing checkpoint folder: exit %d, %s", code, stderr)
	}
}
