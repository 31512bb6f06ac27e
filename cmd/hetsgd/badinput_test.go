package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

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
