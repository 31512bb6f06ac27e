package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/model"
)

// The bad-input table of the surfaces added after the first: checkpoints,
// resume, config files, predict and export, the dashboard, faults. For each
// class of defect, several cases; each asserts the exit status, the
// message, and that no file of the run's folder — inputs, checkpoints,
// earlier outputs — was changed, nor anything left behind.

// fixture is a finished run to be wrong about: a small data file, a config
// file, a checkpoint folder of several checkpoints with its log, an
// exported model and an earlier output.
type fixture struct {
	dir, data, config, ck, log, npz, out string
	checkpoints                          []string // oldest first
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, data: filepath.Join(dir, "data.txt"), config: filepath.Join(dir, "run.yaml"),
		ck: filepath.Join(dir, "ck"), log: filepath.Join(dir, "run.jsonl"), npz: filepath.Join(dir, "model.npz"),
		out: filepath.Join(dir, "earlier.tsv")}
	write(t, f.data, "4 3 2\n0 0:1 1:0.5\n1 2:1\n0,1 0:0.5 2:1\n1 1:1\n")
	write(t, f.config, "hidden: [8]\nepochs: 2\n")
	write(t, f.out, "an earlier output\n")
	if code, _, stderr := runCLI(t, "train", "--config", f.config, "--checkpoint", f.ck, "--checkpoint-every", "0.5",
		"--checkpoint-keep", "100", "--log", f.log, "--progress", "off"); code != 0 {
		t.Fatalf("the fixture's run: exit %d: %s", code, stderr)
	}
	var err error
	if f.checkpoints, err = checkpoint.Dir(f.ck).List(); err != nil || len(f.checkpoints) < 3 {
		t.Fatalf("the fixture's checkpoints: %v, %v", f.checkpoints, err)
	}
	if code, _, stderr := runCLI(t, "export", "--model", f.ck, "--out", f.npz); code != 0 {
		t.Fatalf("the fixture's export: exit %d: %s", code, stderr)
	}
	return f
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot is every file under a folder with a digest of its content (and
// a link's target): what a refused command must leave as it was.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case d.IsDir():
			out[rel] = "folder"
		case d.Name() == ".lock":
			// The lock's holder id: rewritten by whoever takes the lock.
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
		}
		return nil
	})
	return out
}

// sameFiles reports the first difference between two snapshots.
func sameFiles(before, after map[string]string) error {
	for p, h := range before {
		if a, ok := after[p]; !ok {
			return fmt.Errorf("%s was removed", p)
		} else if a != h {
			return fmt.Errorf("%s was changed", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			return fmt.Errorf("%s was left behind", p)
		}
	}
	return nil
}

// badCase is one row of the table: the arguments, the exit status and a
// part of stderr; setup, if any, runs first (in the fixture's folder, and
// before its snapshot).
type badCase struct {
	name  string
	args  func(f *fixture) []string
	code  int
	msg   string
	setup func(t *testing.T, f *fixture)
}

func TestReliabilityByClass(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a fixture and runs the tool a few dozen times")
	}
	shared := newFixture(t)
	last := func(f *fixture) string { return f.checkpoints[len(f.checkpoints)-1] }
	link := func(name, target string) func(t *testing.T, f *fixture) {
		return func(t *testing.T, f *fixture) {
			if err := os.Symlink(target, filepath.Join(f.dir, name)); err != nil && !errors.Is(err, fs.ErrExist) {
				t.Fatal(err)
			}
		}
	}
	classes := []struct {
		class string
		cases []badCase
	}{
		{"outputs never replace inputs", []badCase{
			{name: "a log over the checkpoint being resumed", code: 1, msg: "is the checkpoint being resumed: refusing to write over an input",
				args: func(f *fixture) []string { return []string{"train", "--resume", f.ck, "--log", last(f), "--force"} }},
			{name: "a log that is a hard link to an earlier checkpoint", code: 1, msg: "is the file of the checkpoint folder",
				setup: func(t *testing.T, f *fixture) {
					if err := os.Link(f.checkpoints[0], filepath.Join(f.dir, "hard.jsonl")); err != nil {
						t.Skip("no hard links here:", err)
					}
				},
				args: func(f *fixture) []string {
					return []string{"train", "--resume", f.ck, "--epochs", "3", "--log", filepath.Join(f.dir, "hard.jsonl"), "--force"}
				}},
			{name: "a log over the config file", code: 1, msg: "is the --config file: refusing to write over an input",
				args: func(f *fixture) []string {
					return []string{"train", "--config", f.config, "--log", f.config, "--force"}
				}},
			{name: "a config file whose log is itself", code: 1, msg: "is the --config file",
				setup: func(t *testing.T, f *fixture) {
					write(t, filepath.Join(f.dir, "self.yaml"), "epochs: 1\nlog: "+filepath.Join(f.dir, "self.yaml")+"\nforce: true\n")
				},
				args: func(f *fixture) []string { return []string{"train", "--config", filepath.Join(f.dir, "self.yaml")} }},
			{name: "a log through a link to the data", code: 1, msg: "is the --train file",
				setup: link("link.jsonl", "data.txt"),
				args: func(f *fixture) []string {
					return []string{"train", "--train", f.data, "--test", f.data, "--log", filepath.Join(f.dir, "link.jsonl"), "--force"}
				}},
			{name: "checkpoints into the data's folder", code: 1, msg: "holds the --train file",
				args: func(f *fixture) []string {
					return []string{"train", "--train", f.data, "--test", f.data, "--checkpoint", f.dir}
				}},
			{name: "predictions over the data", code: 1, msg: "is the --data",
				args: func(f *fixture) []string {
					return []string{"predict", "--model", f.ck, "--data", f.data, "--out", f.data, "--force"}
				}},
			{name: "predictions over the model", code: 1, msg: "is the --model",
				args: func(f *fixture) []string {
					return []string{"predict", "--model", f.npz, "--data", f.data, "--out", f.npz, "--force"}
				}},
			{name: "an export over the checkpoint it reads", code: 1, msg: "is the --model",
				args: func(f *fixture) []string {
					return []string{"export", "--model", last(f), "--out", last(f), "--force"}
				}},
			{name: "a figure over a log", code: 1, msg: "refusing to write over an input",
				setup: link("fig.svg", "run.jsonl"),
				args: func(f *fixture) []string {
					return []string{"plot", "--out", filepath.Join(f.dir, "fig"), f.log}
				}},
			{name: "a tune log over its data", code: 1, msg: "is the --train file",
				args: func(f *fixture) []string {
					return []string{"tune", "--train", f.data, "--test", f.data, "--strategies", "sync", "--lrs", "1", "--log", f.data, "--force"}
				}},
			{name: "a bench report into its data's folder", code: 1, msg: "is the --data set folder",
				setup: func(t *testing.T, f *fixture) {
					dir := filepath.Join(f.dir, "sets", "delicious")
					os.MkdirAll(dir, 0o755)
					write(t, filepath.Join(dir, "train.txt"), "1 3 2\n0 0:1\n")
					write(t, filepath.Join(dir, "test.txt"), "1 3 2\n0 0:1\n")
				},
				args: func(f *fixture) []string {
					return []string{"bench", "--out", filepath.Join(f.dir, "sets", "delicious"), "--data", filepath.Join(f.dir, "sets"), "--study", "lsgd", "--quick"}
				}},
		}},
		{"a checkpoint folder belongs to one run", []badCase{
			{name: "another run into a run's folder", code: 1, msg: "holds the checkpoints of run ",
				args: func(f *fixture) []string { return []string{"train", "--epochs", "1", "--checkpoint", f.ck} }},
			{name: "a folder that is a file", code: 1, msg: "is a file, not a folder",
				args: func(f *fixture) []string { return []string{"train", "--epochs", "1", "--checkpoint", f.out} }},
			{name: "a link to nothing", code: 1, msg: "which does not exist",
				setup: link("gone", "nowhere"),
				args: func(f *fixture) []string {
					return []string{"train", "--epochs", "1", "--checkpoint", filepath.Join(f.dir, "gone")}
				}},
			{name: "a place no folder can be made", code: 1, msg: "ck: not a directory",
				args: func(f *fixture) []string {
					return []string{"train", "--epochs", "1", "--checkpoint", filepath.Join(f.out, "ck")}
				}},
			{name: "an older checkpoint resumed into its folder", code: 1, msg: "holds a newer checkpoint of the run",
				args: func(f *fixture) []string { return []string{"train", "--resume", f.checkpoints[0], "--epochs", "3"} }},
			{name: "a folder in use by another process", code: 1, msg: "is in use by process",
				setup: func(t *testing.T, f *fixture) {
					// Another process's hold: a second open file's lock.
					o, _, _ := checkpoint.Dir(f.ck).Owner()
					c, err := checkpoint.Dir(f.ck).Claim(o, true)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(c.Release)
				},
				args: func(f *fixture) []string { return []string{"train", "--resume", f.ck, "--epochs", "3"} }},
		}},
		{"loaded artifacts are checked", []badCase{
			{name: "a model with a NaN bias", code: 1, msg: "holds NaN",
				setup: func(t *testing.T, f *fixture) { nanModel(t, filepath.Join(f.dir, "nan.npz")) },
				args: func(f *fixture) []string {
					return []string{"eval", "--model", filepath.Join(f.dir, "nan.npz"), "--data", "bundled:bibtex", "--json"}
				}},
			{name: "predictions of a model with a NaN bias", code: 1, msg: "holds NaN",
				setup: func(t *testing.T, f *fixture) { nanModel(t, filepath.Join(f.dir, "nan.npz")) },
				args: func(f *fixture) []string {
					return []string{"predict", "--model", filepath.Join(f.dir, "nan.npz"), "--data", "bundled:bibtex", "--as", "jsonl", "--out", filepath.Join(f.dir, "p.jsonl")}
				}},
			{name: "a checkpoint with NaN weights", code: 1, msg: `holds NaN at position`,
				setup: func(t *testing.T, f *fixture) { nanCheckpoint(t, last(f)) },
				args:  func(f *fixture) []string { return []string{"train", "--resume", f.ck, "--epochs", "3"} }},
			{name: "an empty set scored", code: 1, msg: "holds no points",
				setup: func(t *testing.T, f *fixture) { write(t, filepath.Join(f.dir, "empty.txt"), "0 1836 159\n") },
				args: func(f *fixture) []string {
					return []string{"eval", "--model", f.ck, "--data", filepath.Join(f.dir, "empty.txt"), "--json"}
				}},
		}},
		{"readers are bounded", []badCase{
			{name: "a config file without end", code: 1, msg: "holds more than 1 MiB: not a config file",
				args: func(f *fixture) []string { return []string{"train", "--config", "/dev/zero"} }},
			{name: "a network model without end", code: 1, msg: "holds more than 1 MiB",
				args: func(f *fixture) []string {
					return []string{"train", "--time", "virtual", "--network", "/dev/zero"}
				}},
			{name: "a cost model without end", code: 1, msg: "holds more than 1 MiB",
				args: func(f *fixture) []string { return []string{"train", "--time", "virtual", "--cost", "/dev/zero"} }},
			{name: "a log without line breaks plotted", code: 1, msg: "longer than any record",
				setup: func(t *testing.T, f *fixture) { noBreaks(t, filepath.Join(f.dir, "zeros.jsonl")) },
				args: func(f *fixture) []string {
					return []string{"plot", "--out", filepath.Join(f.dir, "fig"), filepath.Join(f.dir, "zeros.jsonl")}
				}},
			{name: "a log without line breaks as the config", code: 1, msg: "longer than 16 MiB",
				setup: func(t *testing.T, f *fixture) { noBreaks(t, filepath.Join(f.dir, "zeros.jsonl")) },
				args: func(f *fixture) []string {
					return []string{"train", "--config", filepath.Join(f.dir, "zeros.jsonl")}
				}},
		}},
		{"messages say what is so", []badCase{
			{name: "a setting the run took by default", code: 1, msg: "used its default, 0.001, and a resumed run keeps its settings",
				args: func(f *fixture) []string { return []string{"train", "--resume", f.ck, "--lr", "0.5"} }},
			{name: "a grid whose rates run out of range", code: 1, msg: "--lrs: the rate 3160000: need",
				args: func(f *fixture) []string {
					return []string{"tune", "--strategies", "sync", "--lrs", "1e-3:1e30", "--epochs", "0.1"}
				}},
			{name: "a slow-down without its factor", code: 2, msg: "kind=slow needs the factor",
				args: func(f *fixture) []string { return []string{"train", "--fault", "device=0,at=1s,kind=slow="} }},
			{name: "a run shorter than a mega-batch", code: 1, msg: "before any update reached the model elastic evaluates",
				args: func(f *fixture) []string {
					return []string{"train", "--strategy", "elastic", "--devices", "2", "--epochs", "0.01"}
				}},
			{name: "an unknown data set for the bench", code: 1, msg: `unknown dataset "nope"`,
				args: func(f *fixture) []string {
					return []string{"bench", "--out", filepath.Join(f.dir, "rep"), "--sets", "bibtex,nope", "--study", "lsgd"}
				}},
			{name: "no data set for the bench", code: 1, msg: "an empty name",
				args: func(f *fixture) []string {
					return []string{"bench", "--out", filepath.Join(f.dir, "rep"), "--sets", ""}
				}},
			{name: "a config file naming another", code: 1, msg: "config is not for a config file",
				setup: func(t *testing.T, f *fixture) {
					write(t, filepath.Join(f.dir, "nested.yaml"), "epochs: 1\nconfig: "+f.config+"\n")
				},
				args: func(f *fixture) []string { return []string{"train", "--config", filepath.Join(f.dir, "nested.yaml")} }},
			{name: "an empty fault factor", code: 2, msg: "kind=slow needs the factor",
				args: func(f *fixture) []string { return []string{"train", "--fault", "device=0,at=1s,kind=slow"} }},
		}},
	}
	var all []string // every message, for the checks of their wording
	for _, cl := range classes {
		for _, c := range cl.cases {
			t.Run(cl.class+"/"+c.name, func(t *testing.T) {
				f := shared
				if c.setup != nil {
					f = newFixture(t) // a case that prepares files works on its own
					c.setup(t, f)
				}
				before := snapshot(t, f.dir)
				code, _, stderr := runCLI(t, c.args(f)...)
				all = append(all, stderr)
				if code != c.code || !strings.Contains(stderr, c.msg) {
					t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args(f), code, stderr, c.code, c.msg)
				}
				if err := sameFiles(before, snapshot(t, f.dir)); err != nil {
					t.Errorf("%v: %v", c.args(f), err)
				}
			})
		}
	}
	// Messages say a package's name once, and never an internal one's.
	for _, m := range all {
		if strings.Contains(m, "atomicfile:") || strings.Contains(m, "<nil>") || message(errors.New(m)) != m {
			t.Errorf("a message that repeats a prefix, names an internal package or holds <nil>: %q", m)
		}
	}
}

// nanModel writes an exported model whose last bias is a NaN.
func nanModel(t *testing.T, path string) {
	t.Helper()
	cfg := model.Config{Inputs: 1836, Hidden: []int{8}, Outputs: 159}
	m, err := model.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	m.Init(p, 1)
	p[len(p)-1] = float32(math.NaN())
	var b bytes.Buffer
	if err := model.WriteNPZ(&b, cfg, p); err != nil {
		t.Fatal(err)
	}
	write(t, path, b.String())
}

// nanCheckpoint rewrites a checkpoint, checksum and all, with a NaN in its
// centre model and replicas: a file whose format is whole but whose run is
// not.
func nanCheckpoint(t *testing.T, path string) {
	t.Helper()
	rewriteCheckpoint(t, path, func(name string, v []float32, b []byte) []byte {
		if name == "center" || strings.HasSuffix(name, "/p") {
			v[len(v)/2] = float32(math.NaN())
		}
		return b
	})
}

// rewriteCheckpoint writes the checkpoint path again, section by section,
// through edit, which may change a vector in place (v) or return other
// bytes for a bytes section (b; v is nil then).
func rewriteCheckpoint(t *testing.T, path string, edit func(name string, v []float32, b []byte) []byte) {
	t.Helper()
	rd, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	tmp := path + ".new"
	w, err := checkpoint.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range rd.Names() {
		if n, err := rd.Len(name); err == nil {
			v := make([]float32, n)
			if err := rd.Float32s(name, v); err != nil {
				t.Fatal(err)
			}
			edit(name, v, nil)
			w.Float32s(name, v)
			continue
		}
		b, err := rd.Bytes(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Bytes(name, edit(name, nil, b))
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// noBreaks writes a file of 20 MB that starts as a run log does and has
// no line break.
func noBreaks(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(`{"event":"config",`)
	if err := f.Truncate(20 << 20); err != nil {
		t.Fatal(err)
	}
}

// A copy of a run's checkpoint folder, resumed, is a new run: it writes
// into the copy, never into the original folder or the original's log,
// which it asks a log of its own for; a run whose data changed in place
// is refused; the resumed copy goes on from there, its folder its own.
func TestCopiedCheckpointFolder(t *testing.T) {
	f := newFixture(t)
	ck2 := filepath.Join(f.dir, "ck2")
	if out, err := exec.Command("cp", "-r", f.ck, ck2).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	before := snapshot(t, f.dir)
	code, _, stderr := runCLI(t, "train", "--resume", ck2, "--epochs", "3")
	if code != 1 || !strings.Contains(stderr, "is the log of the run") || !strings.Contains(stderr, "a copy of that run's") || !strings.Contains(stderr, "--log NEW") {
		t.Fatalf("a copy resumed into the original's log: exit %d, %s", code, stderr)
	}
	if err := sameFiles(before, snapshot(t, f.dir)); err != nil {
		t.Fatal(err)
	}
	fork := filepath.Join(f.dir, "fork.jsonl")
	if code, _, stderr := runCLI(t, "train", "--resume", ck2, "--epochs", "3", "--log", fork); code != 0 {
		t.Fatalf("the copy with a log of its own: exit %d, %s", code, stderr)
	}
	after := snapshot(t, f.dir)
	for p, h := range before {
		if strings.HasPrefix(p, "ck"+string(filepath.Separator)) || p == "run.jsonl" {
			if after[p] != h {
				t.Errorf("the original's %s was changed by its copy's run", p)
			}
		}
	}
	orig, _, _ := checkpoint.Dir(f.ck).Owner()
	copied, _, _ := checkpoint.Dir(ck2).Owner()
	if copied.Run == orig.Run || !strings.Contains(copied.From, orig.Run) {
		t.Errorf("the copy's run %+v, the original's %+v: want a new run, from the original", copied, orig)
	}
	if recs := records(t, fork, "resume"); len(recs) != 1 || !strings.Contains(recs[0], `"from":"run `+orig.Run) {
		t.Errorf("the fork's resume record: %v", recs)
	}
	// Resumed again, the copy is its own run, and goes on in its own log.
	if code, _, stderr := runCLI(t, "train", "--resume", ck2, "--epochs", "4"); code != 0 {
		t.Fatalf("the copy resumed again: exit %d, %s", code, stderr)
	}
	if n := len(records(t, fork, "resume")); n != 2 {
		t.Errorf("the copy's log holds %d resume records, want 2", n)
	}
}

// The data changed in place, its counts kept, is not the run's data.
func TestResumeRefusesChangedData(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.txt")
	write(t, data, "4 3 2\n0 0:1 1:0.5\n1 2:1\n0,1 0:0.5 2:1\n1 1:1\n")
	ck := filepath.Join(dir, "ck")
	if code, _, stderr := runCLI(t, "train", "--train", data, "--test", data, "--epochs", "2", "--checkpoint", ck); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	write(t, data, "4 3 2\n0 0:1 1:0.25\n1 2:1\n0,1 0:0.5 2:1\n1 1:1\n") // one value changed
	before := snapshot(t, dir)
	code, _, stderr := runCLI(t, "train", "--resume", ck, "--epochs", "3")
	if code != 1 || !strings.Contains(stderr, "the same counts, but other content") || !strings.Contains(stderr, "changed in place") {
		t.Fatalf("changed data: exit %d, %s", code, stderr)
	}
	if err := sameFiles(before, snapshot(t, dir)); err != nil {
		t.Fatal(err)
	}
}

// A tampered settings section is named for what it is, not "<nil>".
func TestResumeTamperedSettings(t *testing.T) {
	f := newFixture(t)
	rewriteCheckpoint(t, f.checkpoints[len(f.checkpoints)-1], func(name string, _ []float32, b []byte) []byte {
		if name == "settings" {
			return []byte(`{"log":"x"}`)
		}
		return b
	})
	code, _, stderr := runCLI(t, "train", "--resume", f.ck)
	if code != 1 || strings.Contains(stderr, "<nil>") || !strings.Contains(stderr, "holds no flags or no config record") {
		t.Fatalf("tampered settings: exit %d, %s", code, stderr)
	}
}

// runStopped runs the tool and stops it, as a signal would, once ready
// says so (polled every millisecond); it returns the exit status, stderr
// and how long the stop took.
func runStopped(t *testing.T, sig syscall.Signal, ready func() bool, args ...string) (int, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &out, &errb) }()
	for !ready() {
		select {
		case code := <-done:
			t.Fatalf("%v ended (exit %d) before it was to be stopped: %s", args, code, errb.String())
		case <-time.After(time.Millisecond):
		}
	}
	stop := time.Now()
	cancel(signalError{sig})
	code := <-done
	return code, errb.String(), time.Since(stop)
}

// Every stop is prompt: a run whose device is slowed a millionfold (a
// batch would take minutes) ends at once after the signal, with its done
// record; predictions and exports stopped while they are written leave
// nothing under their final names, so that a rerun is not refused.
func TestStopsArePromptAndLeaveNoOutput(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "slow.jsonl")
	code, stderr, took := runStopped(t, syscall.SIGINT, func() bool {
		b, _ := os.ReadFile(log)
		return bytes.Contains(b, []byte(`"event":"fault"`))
	}, "train", "--devices", "2", "--strategy", "elastic", "--fault", "device=1,at=0s,kind=slow=1e6", "--epochs", "5", "--log", log, "--progress", "off")
	if code != 130 || !strings.Contains(stderr, "interrupted by SIGINT") {
		t.Fatalf("a slowed run stopped: exit %d, %s", code, stderr)
	}
	// Without the cut, the slowed device's batch would hold the stop for a
	// quarter of an hour or more; the bound only catches that wait
	// (testdata.Hang), it does not time the stop.
	if took > testdata.Hang {
		t.Errorf("a run with a device slowed a millionfold took %v to stop", took)
	}
	if recs := records(t, log, "done"); len(recs) != 1 || !strings.Contains(recs[0], `"interrupted":true`) {
		t.Errorf("the stopped run's done record: %v", recs)
	}

	f := newFixture(t)
	big := filepath.Join(dir, "big.txt")
	var b strings.Builder
	b.WriteString("40000 1836 159\n")
	for i := range 40000 {
		fmt.Fprintf(&b, "%d %d:1 %d:0.5\n", i%159, i%1836, (7*i+3)%1836) // never the same feature twice
	}
	write(t, big, b.String())
	preds := filepath.Join(dir, "preds.tsv")
	code, stderr, _ = runStopped(t, syscall.SIGTERM, func() bool {
		tmp, _ := filepath.Glob(filepath.Join(dir, ".preds.tsv.tmp-*"))
		return len(tmp) > 0
	}, "predict", "--model", f.ck, "--data", big, "--out", preds, "--rows", "64")
	if code != 143 || !strings.Contains(stderr, "interrupted by SIGTERM") {
		t.Fatalf("predict stopped: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(preds); err == nil {
		t.Fatal("an interrupted predict left its output under the final name")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".preds.tsv.tmp-*")); len(left) > 0 {
		t.Errorf("an interrupted predict left %v", left)
	}
	if code, _, stderr := runCLI(t, "predict", "--model", f.ck, "--data", big, "--out", preds); code != 0 {
		t.Fatalf("the rerun: exit %d, %s", code, stderr)
	}
	// Outputs are made as the umask says, as the run log is.
	mask := syscall.Umask(0o022)
	syscall.Umask(mask)
	want := fs.FileMode(0o666) &^ fs.FileMode(mask)
	for _, p := range []string{preds, f.npz, f.checkpoints[len(f.checkpoints)-1], f.log} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(signalError{syscall.SIGINT})
	out := filepath.Join(dir, "stopped.npz")
	if code := run(ctx, []string{"export", "--model", f.ck, "--out", out}, &bytes.Buffer{}, &bytes.Buffer{}); code != 130 {
		t.Errorf("export stopped: exit %d", code)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a stopped export left its output")
	}
}

// A diverging run says so — on stderr, in a warning record and in its done
// record — and a fault past the run's end is reported, not passed over.
func TestWarnings(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "div.jsonl")
	code, out, stderr := runCLI(t, "train", "--optimizer", "sgd", "--lr", "1e6", "--epochs", "2", "--log", log,
		"--fault", "device=0,at=1e6s,kind=slow=2")
	if code != 0 || !strings.Contains(stderr, "warning: the training loss grew") || !strings.Contains(stderr, "never struck") {
		t.Fatalf("a diverging run: exit %d, %s", code, stderr)
	}
	if !strings.Contains(out, "the run was diverging") {
		t.Errorf("the summary does not say the run diverged: %s", out)
	}
	if w := records(t, log, "warning"); len(w) != 2 || !strings.Contains(w[0], `"kind":"diverging"`) || !strings.Contains(w[1], `"kind":"fault"`) {
		t.Errorf("warning records: %v", w)
	}
	if d := records(t, log, "done"); len(d) != 1 || !strings.Contains(d[0], `"diverging":true`) {
		t.Errorf("done record: %v", d)
	}
	// The default rate does not cry wolf.
	log = filepath.Join(dir, "ok.jsonl")
	if code, _, stderr := runCLI(t, "train", "--epochs", "3", "--log", log); code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("a healthy run: exit %d, %s", code, stderr)
	}
	if w := records(t, log, "warning"); len(w) != 0 {
		t.Errorf("a healthy run's warnings: %v", w)
	}
}

// A run under an address-space limit (ulimit -v) too tight for it is
// refused with the figures, as under the other limits, rather than ended by
// the runtime's out-of-memory dump.
func TestAddressSpaceLimit(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector maps terabytes of shadow memory: no address-space limit leaves it room")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to set ulimit -v with")
	}
	// 3 GiB: room for the runtime's start and threads, not for a model of
	// 400 million parameters.
	cmd := exec.Command("bash", "-c", `ulimit -v 3145728 && exec "$0" train --hidden 200000 --epochs 1 --progress off`, os.Args[0])
	cmd.Env = append(os.Environ(), asTool+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "the address-space limit (ulimit -v)") {
		t.Fatalf("a run over ulimit -v: %v, %s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "goroutine") {
		t.Fatalf("a runtime dump: %s", stderr.String())
	}
}

// The best evaluation's model is kept beside the checkpoints and read back
// by --which best; --patience stops a run that stopped improving.
func TestKeepBestAndPatience(t *testing.T) {
	dir := t.TempDir()
	ck, log := filepath.Join(dir, "ck"), filepath.Join(dir, "run.jsonl")
	code, out, stderr := runCLI(t, "train", "--epochs", "80", "--hidden", "16", "--patience", "3", "--checkpoint", ck, "--log", log)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "stopped early") {
		t.Errorf("the summary does not say the run stopped early:\n%s", out)
	}
	evals := records(t, log, "eval")
	done := records(t, log, "done")
	if len(evals) >= 80 || len(done) != 1 || !strings.Contains(done[0], `"stopped_early":true`) {
		t.Fatalf("%d evaluations of 80 epochs, done %v: want an early stop", len(evals), done)
	}
	best := regexp.MustCompile(`"best_p1":([0-9.]+)`).FindStringSubmatch(done[0])
	_, evalOut, stderr := runCLI(t, "eval", "--model", ck, "--data", "bundled:bibtex", "--which", "best", "--json")
	if !strings.Contains(evalOut, `"p1":`+best[1]) {
		t.Errorf("the best model scores %s (%s), the log's best P@1 is %s", evalOut, stderr, best[1])
	}
	if want, _ := strconv.ParseFloat(best[1], 64); want <= 0 {
		t.Fatalf("best P@1 %v", best[1])
	}
	if code, _, stderr := runCLI(t, "eval", "--model", filepath.Join(ck, "checkpoint-000000000001.hck"), "--data", "bundled:bibtex", "--which", "best"); code != 1 || !strings.Contains(stderr, "--which best takes a checkpoint folder") {
		t.Errorf("--which best of a file: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "train", "--resume", filepath.Join(ck, "best.hck")); code != 1 || !strings.Contains(stderr, "not a run to continue") {
		t.Errorf("resuming the best model: exit %d, %s", code, stderr)
	}
}

// A run started with relative paths resumes from another folder: its data,
// log and checkpoint folder are found where they were, not relative to
// where the resume is started.
func TestResumeFromAnotherFolder(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	write(t, filepath.Join(dir, "data.txt"), "4 3 2\n0 0:1 1:0.5\n1 2:1\n0,1 0:0.5 2:1\n1 1:1\n")
	t.Chdir(dir)
	if code, _, stderr := runCLI(t, "train", "--train", "data.txt", "--test", "data.txt", "--epochs", "2", "--checkpoint", "ck", "--log", "run.jsonl"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Chdir(other)
	if code, _, stderr := runCLI(t, "train", "--resume", filepath.Join(dir, "ck"), "--epochs", "3"); code != 0 {
		t.Fatalf("resumed from another folder: exit %d: %s", code, stderr)
	}
	if n := len(records(t, filepath.Join(dir, "run.jsonl"), "resume")); n != 1 {
		t.Errorf("the run's own log holds %d resume records, want 1", n)
	}
	if left, _ := os.ReadDir(other); len(left) != 0 {
		t.Errorf("the resume wrote into the folder it was started from: %v", left)
	}
}

// A run's log moved since is continued where --log names it: it is found
// by its identity, and holds the records the checkpoint counted.
func TestResumeMovedLog(t *testing.T) {
	f := newFixture(t)
	moved := filepath.Join(f.dir, "moved.jsonl")
	if err := os.Rename(f.log, moved); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "train", "--resume", f.ck, "--epochs", "3")
	if code != 1 || !strings.Contains(stderr, "the log of the run to continue") {
		t.Fatalf("the log gone from its place: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "train", "--resume", f.ck, "--epochs", "3", "--log", moved); code != 0 {
		t.Fatalf("the moved log named: exit %d, %s", code, stderr)
	}
	if n := len(records(t, moved, "config")); n != 1 || len(records(t, moved, "resume")) != 1 {
		t.Errorf("the moved log: %d config records and %d resume records, want it continued", n, len(records(t, moved, "resume")))
	}
}
