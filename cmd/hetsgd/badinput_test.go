package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/train"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// modelConfig3x2 is a network for good.txt's points: 3 features, 2 labels.
var modelConfig3x2 = model.Config{Inputs: 3, Hidden: []int{4}, Outputs: 2}

// smallModel writes an archive of a model of cfg into dir.
func smallModel(t *testing.T, dir string, cfg model.Config) string {
	t.Helper()
	m, err := model.New(cfg)
	must(t, err)
	p := make([]float32, m.NumParams())
	m.Init(p, 1)
	var b bytes.Buffer
	must(t, model.WriteNPZ(&b, cfg, p))
	path := filepath.Join(dir, "model.npz")
	must(t, os.WriteFile(path, b.Bytes(), 0o644))
	return path
}

// TestBadInputByClass is the table of bad inputs and faults, by class: for
// each, the exit code, the message, and that no output was left behind
// half-written and no input was harmed.
func TestBadInputByClass(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.txt", "2 3 2\n0 0:1 1:1\n1 2:1\n")
	huge := write("huge.txt", "1 50000000 5\n0 1:1\n")  // 40 bytes claiming 5·10⁷ features
	wide := write("wide.txt", "1 5 50000000\n0 1:1\n")  // and 5·10⁷ labels
	header := write("header.txt", "4880 1836\n0 1:1\n") // a malformed XC header
	nan := write("nan.txt", "2 3 2\n0 0:nan\n1 2:1\n")  // a value that is not a number
	log := filepath.Join(dir, "run.jsonl")
	genDir := filepath.Join(dir, "gen")
	before, _ := os.ReadFile(good)
	// A file of the user's that links planted among the run's outputs
	// point to, which nothing may write.
	mine := write("mine.txt", "the user's own file\n")
	hardLog := filepath.Join(dir, "hard.jsonl")
	must(t, os.Link(mine, hardLog))
	plant := func(folder, name string, link func(target, at string) error) string {
		ck := filepath.Join(dir, folder)
		must(t, os.MkdirAll(ck, 0o755))
		must(t, link(mine, filepath.Join(ck, name)))
		return ck
	}
	lockLink := plant("ck-lock", ".lock", os.Symlink)
	lockHard := plant("ck-lock-hard", ".lock", os.Link)
	bestLink := plant("ck-best", "best.hck", os.Symlink)
	firstLink := plant("ck-first", "checkpoint-000000004992.hck", os.Symlink)
	other := filepath.Join(dir, "ck-other") // another run's checkpoints
	must(t, checkpoint.Dir(other).Make())
	must(t, os.WriteFile(checkpoint.Dir(other).Path(10), nil, 0o644))
	zero := write("zero.txt", "0 0:1 2:1\n1 1:1\n") // libSVM, feature ids from 0
	unlabelled := write("unlabelled.txt", "2 3 2\n 0:1\n 2:1\n")
	notLog := write("notes.jsonl", "a note, not a run log\n")
	model := smallModel(t, dir, modelConfig3x2)

	type tc struct {
		name string
		args []string
		env  map[string]string
		code int
		msg  string
	}
	classes := map[string][]tc{
		"memory": {
			{"a header claiming 5e7 features", []string{"train", "--train", huge, "--test", huge, "--log", log}, nil, 1, "needs an estimated"},
			{"a header claiming 5e7 labels", []string{"train", "--train", wide, "--test", wide, "--log", log}, nil, 1, "needs an estimated"},
			{"a batch the machine cannot hold", []string{"train", "--batch", "1073741824", "--log", log}, nil, 1, "workspaces for batches of 1073741824"},
			{"more devices than memory", []string{"train", "--devices", "65536", "--time", "virtual", "--log", log}, nil, 1, "this run (65536 devices"},
			{"a memory limit", []string{"train", "--log", log}, map[string]string{"HETSGD_MEMORY_LIMIT": "1M"}, 1, "more than the 1.0 MiB available ($HETSGD_MEMORY_LIMIT)"},
			{"predict's chunks over the limit", []string{"predict", "--model", model, "--data", good, "--rows", "65536"}, map[string]string{"HETSGD_MEMORY_LIMIT": "1M"}, 1, "predicting with the model of " + model + " (3 features, hidden layers [4], 2 labels: 26 parameters, 104 bytes), 65536 points at a time needs an estimated"},
			{"predict's chunks, with the fix", []string{"predict", "--model", model, "--data", good, "--rows", "65536"}, map[string]string{"HETSGD_MEMORY_LIMIT": "1M"}, 1, "available ($HETSGD_MEMORY_LIMIT): score fewer points at once (--rows)"},
			{"an export over the limit", []string{"export", "--model", model, "--out", filepath.Join(dir, "m.npz")}, map[string]string{"HETSGD_MEMORY_LIMIT": "8K"}, 1, "exporting with the model of"},
			{"an evaluation over the limit", []string{"eval", "--model", model, "--data", good}, map[string]string{"HETSGD_MEMORY_LIMIT": "8K"}, 1, "scoring with the model of"},
			{"an input without a newline", []string{"data", "stats", "--format", "libsvm", "/dev/zero"}, nil, 1, "line longer than"},
		},
		"numbers": {
			{"epochs that overflow", []string{"train", "--epochs", "1e18", "--log", log}, nil, 1, "--epochs 1e+18: need a number in [0, 1e+06]"},
			{"an infinite evaluation interval", []string{"train", "--eval-every", "Inf", "--log", log}, nil, 1, "--eval-every +Inf"},
			{"a count of 1e30", []string{"train", "--strategy", "elastic", "--elastic.k", "1e30", "--log", log}, nil, 1, "elastic.k 1e+30: need a whole number in [1, 1073741824]"},
			{"a batch step of 1e30", []string{"train", "--strategy", "adaptive-code", "--adaptive-code.step", "1e30", "--log", log}, nil, 1, "adaptive-code.step 1e+30"},
			{"an infinite weight decay", []string{"train", "--weight-decay", "Inf", "--log", log}, nil, 1, "--weight-decay +Inf"},
			{"an infinite latency", []string{"train", "--time", "virtual", "--net-latency", "Inf", "--log", log}, nil, 1, "--net-latency +Inf"},
			{"negative test points", []string{"train", "--eval-points", "-1", "--log", log}, nil, 1, "--eval-points -1"},
			{"negative groups", []string{"train", "--groups", "-1", "--log", log}, nil, 1, "--groups -1"},
			{"checkpoints every -1 epochs", []string{"train", "--checkpoint", filepath.Join(dir, "ck"), "--checkpoint-every", "-1", "--log", log}, nil, 1, "--checkpoint-every -1"},
			{"an unknown kernel", []string{"train", "--log", log}, map[string]string{"HETSGD_KERNEL": "cuda"}, 1, `$HETSGD_KERNEL="cuda"`},
			{"a fault on no device", []string{"train", "--fault", "device=5,at=1s,kind=crash", "--log", log}, nil, 1, "no device 5 among 1"},
		},
		"files": {
			{"a log over the training data", []string{"train", "--train", good, "--test", good, "--log", good, "--force"}, nil, 1, "refusing to write over an input"},
			{"a log that is a folder", []string{"train", "--log", dir, "--force"}, nil, 1, dir},
			{"calibrate over a device", []string{"calibrate", "--quick", "--out", "/dev/null", "--force"}, nil, 1, "not a regular file"},
		},
		"messages": {
			{"a malformed XC header", []string{"data", "stats", header}, nil, 1, "header.txt:1: XC header"},
			{"a value that is not a number", []string{"data", "stats", nan}, nil, 1, "nan.txt:2"},
			{"a strategy option before the data", []string{"train", "--strategy", "adaptive", "--adaptive.bmin", "0", "--data", filepath.Join(dir, "missing"), "--log", log}, nil, 1, "adaptive.bmin 0"},
			{"options that contradict each other before the data", []string{"train", "--strategy", "adaptive", "--batch", "64", "--adaptive.binit", "100", "--data", filepath.Join(dir, "missing"), "--log", log}, nil, 1, "binit 100: need a whole batch size in [b_min=8, b_max=64]"},
			{"an option of another strategy before the data", []string{"train", "--strategy", "sync", "--elastic.k", "3", "--data", filepath.Join(dir, "missing"), "--log", log}, nil, 1, "--elastic.k: another strategy's option; this run's strategy is sync"},
			{"checkpoints of a run that computes nothing, before the data", []string{"train", "--time", "virtual", "--timing-only", "--checkpoint", filepath.Join(dir, "ck"), "--data", filepath.Join(dir, "missing"), "--log", log}, nil, 1, "not with --timing-only"},
			{"a checkpoint that is not one", []string{"train", "--resume", good, "--log", log}, nil, 1, "good.txt is not a checkpoint"},
			{"a folder without checkpoints", []string{"train", "--resume", dir, "--log", log}, nil, 1, "holds no checkpoint"},
			{"a mistyped strategy", []string{"train", "--strategy", "adaptve", "--log", log}, nil, 1, `unknown strategy "adaptve" (did you mean adaptive?)`},
			{"a mistyped strategy of tune", []string{"tune", "--strategies", "sync,elastik"}, nil, 1, "(did you mean elastic?)"},
			{"a dataset folder that does not exist", []string{"train", "--data", filepath.Join(dir, "missing"), "--log", log}, nil, 1, "dataset folder " + filepath.Join(dir, "missing") + " does not exist"},
			{"a data file that does not exist, scored", []string{"eval", "--model", model, "--data", filepath.Join(dir, "missing.txt")}, nil, 1, "missing.txt does not exist (give a dataset file, a dataset folder or bundled:NAME)"},
			{"a data file that does not exist, predicted", []string{"predict", "--model", model, "--data", filepath.Join(dir, "missing.txt")}, nil, 1, "missing.txt does not exist"},
			{"feature ids from 0 read as libsvm", []string{"data", "stats", "--format", "libsvm", zero}, nil, 1, "zero.txt:1: feature id 0, but a libSVM file's feature ids start at 1 (read a libSVM file whose feature ids start at 0 with --format libsvm0)"},
			{"feature ids from 0 in training", []string{"train", "--train", zero, "--test", zero, "--format", "libsvm", "--log", log}, nil, 1, "with --format libsvm0)"},
			{"a library's refusal, in the tool's words", []string{"train", "--speeds", "1,2,3", "--devices", "4", "--log", log}, nil, 1, "hetsgd train: --speeds has 3 values for 4 devices\n"},
			{"a data file's refusal, in the tool's words", []string{"data", "stats", nan}, nil, 1, "hetsgd data: " + nan + ":2: "},
			{"the best model kept without a folder", []string{"train", "--keep-best", "--log", log}, nil, 1, "--keep-best applies with --checkpoint only: it is about the checkpoint folder, where the run keeps its checkpoints and its best model (add --checkpoint DIR)"},
			{"a command's --version", []string{"train", "--version"}, nil, 2, "hetsgd --version"},
			{"an archive that records no test set", []string{"eval", "--model", model}, nil, 1, "give --data: " + model + " does not record the test set"},
		},
		"links": {
			{"a log that is a second name of the user's file", []string{"train", "--log", hardLog, "--force", "--epochs", "0.1"}, nil, 1, hardLog + " has 3 names (hard links)"},
			{"a lock file linked to the user's file", []string{"train", "--checkpoint", lockLink, "--log", log}, nil, 1, ".lock is a symbolic link to " + mine},
			{"a lock file that is a second name of the user's file", []string{"train", "--checkpoint", lockHard, "--log", log}, nil, 1, ".lock has 3 names"},
			{"a best model linked to the user's file", []string{"train", "--checkpoint", bestLink, "--log", log}, nil, 1, "best.hck is a symbolic link to " + mine},
			{"the first checkpoint linked to the user's file", []string{"train", "--checkpoint", firstLink, "--log", log}, nil, 1, "checkpoint-000000004992.hck is a symbolic link"},
		},
		"leftovers": {
			{"a refused claim", []string{"train", "--checkpoint", other, "--log", log}, nil, 1, "holds the checkpoints of another run"},
			{"a test set without labels", []string{"train", "--train", good, "--test", unlabelled, "--log", log}, nil, 1, "unlabelled.txt: none of its 2 points has a label"},
			{"a test set without labels, scored", []string{"eval", "--model", model, "--data", unlabelled}, nil, 1, "none of its 2 points has a label"},
			{"a dashboard of a file that is no log", []string{"dashboard", "--addr", "127.0.0.1:0", notLog}, nil, 1, "not a run log"},
			{"a snapshot of a file that is no log", []string{"dashboard", "--snapshot", filepath.Join(dir, "snap.html"), notLog}, nil, 1, "not a run log"},
		},
	}
	for class, cases := range classes {
		for _, c := range cases {
			t.Run(class+"/"+c.name, func(t *testing.T) {
				for k, v := range c.env {
					t.Setenv(k, v)
				}
				code, _, errs := runCLI(t, c.args...)
				if code != c.code || !strings.Contains(errs, c.msg) {
					t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errs, c.code, c.msg)
				}
				if _, err := os.Stat(log); err == nil {
					t.Errorf("%v left a log behind", c.args)
					os.Remove(log)
				}
				if after, _ := os.ReadFile(good); !bytes.Equal(after, before) {
					t.Fatalf("%v changed an input file", c.args)
				}
				if b, _ := os.ReadFile(mine); string(b) != "the user's own file\n" {
					t.Fatalf("%v wrote through a link into the user's file: %q", c.args, b)
				}
				if _, msg, _ := strings.Cut(errs, ": "); train.StripPrefixes(msg) != msg {
					t.Errorf("%v: a package's prefix in the tool's message: %q", c.args, errs)
				}
				for _, ck := range []string{lockHard, bestLink, firstLink, other, filepath.Join(dir, "missing")} {
					for _, name := range []string{".lock", "best.hck", "run.json"} {
						if _, err := os.Lstat(filepath.Join(ck, name)); err == nil && !(name == ".lock" && ck == lockHard) && !(name == "best.hck" && ck == bestLink) {
							t.Errorf("%v left %s in %s", c.args, name, ck)
						}
					}
				}
				if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(leftovers) > 0 {
					t.Errorf("%v left temporary files: %v", c.args, leftovers)
				}
			})
		}
	}

	// Termination: a command stopped by a signal says so, exits 128 + the
	// signal's number, and leaves each output whole or absent.
	for _, c := range []struct {
		args   []string
		sig    syscall.Signal
		absent []string
	}{
		{[]string{"train", "--log", log}, syscall.SIGINT, nil},
		{[]string{"train", "--time", "virtual", "--strategy", "adaptive", "--devices", "2"}, syscall.SIGTERM, nil},
		{[]string{"step", "--like", "bibtex", "--steps", "1000"}, syscall.SIGHUP, nil},
		{[]string{"data", "gen", "--like", "delicious", "--scale", "0.1", "--out", genDir}, syscall.SIGINT, []string{filepath.Join(genDir, "train.txt"), filepath.Join(genDir, "test.txt")}},
		{[]string{"data", "stats", "bundled:bibtex"}, syscall.SIGTERM, nil},
		{[]string{"tune", "--strategies", "sync", "--lrs", "1", "--epochs", "1", "--progress", "off"}, syscall.SIGINT, nil},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(signalError{c.sig})
		var out, errb bytes.Buffer
		code := run(ctx, c.args, &out, &errb)
		if code != 128+int(c.sig) || !strings.Contains(errb.String(), "interrupted by "+signalName(c.sig)) {
			t.Errorf("%v stopped by %v: exit %d, stderr %q", c.args, c.sig, code, errb.String())
		}
		for _, p := range c.absent {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%v stopped by %v left %s", c.args, c.sig, p)
			}
		}
	}
	// The interrupted run's log is whole: it ends with its done record.
	b, err := os.ReadFile(log)
	if err != nil || !bytes.HasSuffix(bytes.TrimSpace(b), []byte("}")) || !bytes.Contains(b, []byte(`"interrupted":true`)) {
		t.Errorf("the interrupted run's log: %v %q", err, b)
	}
}
