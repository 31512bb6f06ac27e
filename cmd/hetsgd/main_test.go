package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/workload"
)

// asTool makes the test binary the tool: started with it set, it runs the
// command line it was given instead of the tests (tests run it under mpirun
// this way).
const asTool = "HETSGD_TEST_AS_TOOL"

func TestMain(m *testing.M) {
	if os.Getenv(asTool) == "1" {
		os.Exit(mainCode())
	}
	os.Exit(m.Run())
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// The default command trains on the bundled Bibtex; the log holds a config
// record with every setting, one eval record per epoch, and a done record;
// the last line of stdout is the summary.
func TestTrainBundledWithLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "run.jsonl")
	code, out, errs := runCLI(t, "train", "--epochs", "2", "--hidden", "32", "--log", logPath, "--seed", "9")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "best P@1 ") {
		t.Fatalf("last stdout line %q", last)
	}
	if errs != "" {
		t.Fatalf("stderr not quiet off a terminal: %q", errs)
	}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		events = append(events, rec)
	}
	if len(events) != 4 || events[0]["event"] != "config" || events[1]["event"] != "eval" || events[3]["event"] != "done" {
		t.Fatalf("log events %v", events)
	}
	cfg := events[0]
	for _, k := range []string{"seed", "hidden", "batch", "lr", "optimizer", "epochs", "eval_every", "dropout", "data", "train_seconds_note"} {
		if _, ok := cfg[k]; !ok {
			t.Errorf("config record lacks %q", k)
		}
	}
	if cfg["seed"].(float64) != 9 {
		t.Errorf("config seed %v, want 9", cfg["seed"])
	}
	for _, k := range []string{"epoch", "samples", "train_seconds", "p1", "p3", "p5", "loss"} {
		if _, ok := events[1][k]; !ok {
			t.Errorf("eval record lacks %q", k)
		}
	}
	// A second run must not clobber the log.
	before, _ := os.ReadFile(logPath)
	code, _, errs = runCLI(t, "train", "--epochs", "1", "--log", logPath)
	after, _ := os.ReadFile(logPath)
	if code == 0 || !strings.Contains(errs, "already exists") || !bytes.Equal(before, after) {
		t.Fatalf("second run: exit %d, %q; log changed: %v", code, errs, !bytes.Equal(before, after))
	}
}

func TestTrainBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("2 5 3\n0 1:1\n1 9:1\n"), 0o644)
	logPath := filepath.Join(dir, "never.jsonl")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"train", "--batch", "0"}, 1, "--batch 0"},
		{[]string{"train", "--lr", "abc"}, 2, "--lr abc: not a value it takes"},
		{[]string{"train", "--optimizer", "rmsprop"}, 1, "unknown optimizer \"rmsprop\""},
		{[]string{"train", "--optimizer", "momentum", "--momentum", "0"}, 1, "--momentum 0: need a number in (0, 1)"},
		{[]string{"train", "--hidden", "12,x"}, 2, "\"x\" is not a positive integer"},
		{[]string{"train", "--train", bad}, 1, "--train and --test go together"},
		{[]string{"train", "--train", bad, "--test", bad, "--log", logPath}, 1, "bad.txt:3: feature 9 out of range"},
		{[]string{"train", "--data", dir, "--train", bad}, 1, "either --data or --train/--test"},
		{[]string{"train", "extra"}, 2, "unexpected argument \"extra\""},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"data", "stats", bad}, 1, "bad.txt:3"},
		{[]string{"data", "stats", "--top", "-1", "bundled:bibtex"}, 1, "--top -1: must be 0 or more"},
		{[]string{"train", "--workload", "regression", "--optimizer", "sgd", "--line-search", "--step-rule", "newton"}, 1, "--step-rule \"newton\""},
		{[]string{"train", "--workload", "regression", "--line-search", "--time", "virtual", "--log", logPath}, 1, "--line-search needs --optimizer sgd"},
		{[]string{"train", "--workload", "mnist"}, 1, "--workload \"mnist\""},
		// Flags that would do nothing for the chosen strategy.
		{[]string{"train", "--strategy", "gem", "--optimizer", "adam"}, 1, "--optimizer adam does not apply to gem"},
		{[]string{"train", "--strategy", "downpour", "--momentum", "0.5"}, 1, "--momentum does not apply to downpour"},
		{[]string{"train", "--strategy", "staleness", "--weight-decay", "1e-4"}, 1, "--weight-decay does not apply to staleness"},
		{[]string{"train", "--momentum", "0.95"}, 1, "--momentum does nothing with sync's optimizer adam"},
		{[]string{"train", "--strategy", "elastic", "--devices", "4", "--groups", "2"}, 1, "--groups does nothing for elastic under the real clock"},
		{[]string{"train", "--devices", "4", "--speeds", "1,0.5"}, 1, "--speeds has 2 values for 4 devices"},
		{[]string{"train", "--dim", "5"}, 1, "--dim applies to --workload regression only"},
		{[]string{"train", "--paper"}, 1, "--paper: sync's defaults are its paper's"},
		{[]string{"train", "--optimizer", "sgd"}, 1, "--optimizer sgd: give --lr too (sync's default rate 0.001 is for adam)"},
		{[]string{"train", "--beta", "0.5"}, 2, "unknown flag --beta (strategy options go under the strategy's name: --adacons.beta, --adaptive.beta)"},
		{[]string{"train", "--epoch", "3"}, 2, "unknown flag --epoch (did you mean --epochs?)"},
		{[]string{"train", "--adaptive.beta", "0.5"}, 1, "--adaptive.beta: another strategy's option; this run's strategy is sync"},
		{[]string{"train", "--strategy", "adacons", "--adacons.beta", "x"}, 2, "--adacons.beta x: not a number"},
		{[]string{"train", "--strategy", "crossbow", "--crossbow.a", "NaN"}, 1, "crossbow.a NaN: need a number in (0, 1]"},
		{[]string{"train", "--strategy", "adaptive", "--adaptive.bmax", "1e300"}, 1, "adaptive.bmax 1e+300: need a whole number in [1, 1073741824]"},
		{[]string{"train", "--devices", "2", "--fault", "device=2,at=1s,kind=crash"}, 1, "--fault device=2,at=1s,kind=crash: no device 2 among 2"},
		{[]string{"train", "--fault", "device=0,at=1s"}, 2, "give device=N (or rank=R), at=SECONDS and kind=crash"},
		{[]string{"train", "--devices", "2", "--fault", "device=0,at=1,kind=crash", "--fault", "device=1,at=2,kind=stall"}, 1, "at least one must remain"},
		{[]string{"train", "--strategy", "elastic", "--elastic.k", "1e300"}, 1, "elastic.k 1e+300: need a whole number in [1, 1073741824]"},
	} {
		code, _, errs := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errs, c.code, c.msg)
		}
	}
	if _, err := os.Stat(logPath); err == nil {
		t.Error("a run that failed on its input left a log file")
	}
}

func TestDataCommands(t *testing.T) {
	code, out, errs := runCLI(t, "data", "stats", "bundled:bibtex")
	if code != 0 || !strings.Contains(out, "points            4880") {
		t.Fatalf("data stats: exit %d %q %q", code, out, errs)
	}
	dir := t.TempDir()
	code, out, errs = runCLI(t, "data", "gen", "--like", "delicious", "--scale", "0.1", "--out", dir)
	if code != 0 || !strings.Contains(out, "avg labels per point") {
		t.Fatalf("data gen: exit %d %q %q", code, out, errs)
	}
	code, _, errs = runCLI(t, "train", "--data", dir, "--epochs", "1", "--hidden", "16")
	if code != 0 {
		t.Fatalf("training on generated data: %s", errs)
	}
	code, _, errs = runCLI(t, "data", "gen", "--like", "delicious", "--scale", "0.1", "--out", dir)
	if code == 0 || !strings.Contains(errs, "already exists") {
		t.Fatalf("data gen over existing files: exit %d %q", code, errs)
	}
	if code, out, _ := runCLI(t, "help"); code != 0 || !strings.Contains(out, "train") {
		t.Fatalf("help: %d %q", code, out)
	}
	// --points keeps the profile's features and labels (the full label
	// space) and sets the points, the test points in proportion.
	dir = t.TempDir()
	code, out, errs = runCLI(t, "data", "gen", "--like", "profile:amazon-670k", "--points", "300", "--out", dir)
	if code != 0 {
		t.Fatalf("data gen --points: exit %d %q", code, errs)
	}
	words := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"train points 300 300", "test points 94 94", "labels 670091 670091"} {
		if !strings.Contains(words, want) {
			t.Errorf("data gen --like profile:amazon-670k --points 300: no %q in\n%s", want, out)
		}
	}
	// A paper's name is its stand-in, built from the published
	// statistics.
	dir = t.TempDir()
	code, out, errs = runCLI(t, "data", "gen", "--like", "amazon-670k", "--points", "300", "--out", dir)
	if code != 0 {
		t.Fatalf("data gen --like amazon-670k --points 300: exit %d %q", code, errs)
	}
	words = strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"train points 300", "test points 94", "labels 670091", "30738 topics"} {
		if !strings.Contains(words, want) {
			t.Errorf("data gen --like amazon-670k --points 300: no %q in\n%s", want, out)
		}
	}
	if code, _, errs := runCLI(t, "data", "gen", "--like", "amazon-670k", "--points", "-1", "--out", t.TempDir()); code == 0 || !strings.Contains(errs, "--points -1") {
		t.Errorf("--points -1: exit %d %q", code, errs)
	}
}

// An interrupted run still ends its log with a done record and exits 1.
func TestTrainInterrupted(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "run.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"train", "--log", logPath}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	b, _ := os.ReadFile(logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var done map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &done); err != nil || done["event"] != "done" || done["interrupted"] != true {
		t.Fatalf("last log record %q", lines[len(lines)-1])
	}
}

// hetsgd step times the step at a small shape and ends with a JSON summary
// whose figures hang together.
func TestStepCommand(t *testing.T) {
	code, out, errs := runCLI(t, "step", "--like", "bibtex", "--batch", "64", "--steps", "2")
	if code != 0 {
		t.Fatalf("step: exit %d %q", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res workload.StepTiming
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	if !(res.StepMS["fused"] > 0 && res.StepMS["split"] > 0 && res.PeakGFLOPS > 0) || res.Batch != 64 ||
		math.Abs(res.RooflineMS-res.DenseGFLOP/res.PeakGFLOPS*1e3) > 1e-9 || math.Abs(res.DenseGFLOP-6*64*128*159/1e9) > 1e-12 {
		t.Fatalf("summary %+v", res)
	}
	if code, _, errs := runCLI(t, "step", "--like", "mnist"); code == 0 || !strings.Contains(errs, "--like") {
		t.Fatalf("unknown shape: exit %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, "step", "--like", "bibtex", "--output", "sparse"); code == 0 || !strings.Contains(errs, "--output") {
		t.Fatalf("unknown output layer: exit %d %q", code, errs)
	}
}

// calibrate --network needs an MPI job; train --network reads a model and
// rejects a malformed one and the link flags beside it.
func TestNetworkFlags(t *testing.T) {
	if code, _, errs := runCLI(t, "calibrate", "--network"); code == 0 || !strings.Contains(errs, "mpirun -np 2") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("calibrate --network alone: exit %d, %q", code, errs)
	}
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "net.json"), filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`{"group_size": 0, "intra": {"Latency": 1e-6, "Bandwidth": 1e9}, "inter": {"Latency": 5e-6, "Bandwidth": 1e8}, "all_reduce": "ring"}`), 0o644)
	os.WriteFile(bad, []byte(`{"intra": {"Latency": 1e-6, "Bandwidth": 0}, "inter": {"Latency": 1e-6, "Bandwidth": 1e9}, "all_reduce": "ring"}`), 0o644)
	args := []string{"train", "--time", "virtual", "--strategy", "lsgd", "--devices", "4", "--groups", "2", "--epochs", "0.2", "--log"}
	log := filepath.Join(dir, "run.jsonl")
	if code, _, errs := runCLI(t, append(args, log, "--network", good)...); code != 0 {
		t.Fatalf("--network: %s", errs)
	}
	if code, _, errs := runCLI(t, "train", "--network", good, "--epochs", "0.1"); code == 0 || !strings.Contains(errs, "--network describes the links for --time virtual") {
		t.Fatalf("--network under the real clock: exit %d, %q", code, errs)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), `"inter":{"Latency":0.000005,"Bandwidth":100000000}`) || !strings.Contains(string(b), `"group_size":2`) {
		t.Fatalf("the log's network is not the file's with --groups' nodes:\n%s", b[:min(len(b), 2000)])
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--network", bad}, "--network " + bad},
		{[]string{"--network", filepath.Join(dir, "none.json")}, "--network"},
		{[]string{"--network", good, "--inter-latency", "1e-3"}, "--inter-latency and --network both describe the links"},
	} {
		if code, _, errs := runCLI(t, append(append(args, filepath.Join(dir, "x.jsonl")), c.extra...)...); code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q, want %q", c.extra, code, errs, c.want)
		}
	}
}

// Started by mpirun without the MPI transport, the tool refuses to run N
// independent copies and says how to rebuild; single-process commands
// refuse to start under mpirun in any build.
func TestRefusesMPIWithoutTransport(t *testing.T) {
	t.Setenv("OMPI_COMM_WORLD_SIZE", "4")
	code, _, errs := runCLI(t, "data", "stats", "bundled:bibtex")
	if code == 0 || !strings.Contains(errs, "runs in one process; start it without mpirun") {
		t.Fatalf("data stats under mpirun: exit %d, %q", code, errs)
	}
	if len(comm.Transports()) > 0 {
		return // the mpi build: train is the real thing (mpi_test.go)
	}
	code, out, errs := runCLI(t, "train", "--epochs", "1")
	if code == 0 || out != "" || !strings.Contains(errs, "rebuild it with 'go build -tags mpi ./cmd/hetsgd'") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("train under mpirun without MPI: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// "train --strategy X --help" shows X's effective settings and only the
// options X takes; "strategies -v" shows every strategy's, and no NaN.
func TestStrategyHelp(t *testing.T) {
	code, _, errs := runCLI(t, "train", "--strategy", "gem", "--devices", "4", "--batch", "128", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--strategy gem on 4 device(s)", "--lr             0.316 × batch/64 = 0.632", "--batch          128                          given", "--gem.mu", "--gem.kappa\n    \tgem: energy scale κ", "--paper: --optimizer sgd --lr 0.05 --batch 64"} {
		if !strings.Contains(errs, want) {
			t.Errorf("gem help lacks %q:\n%s", want, errs)
		}
	}
	for _, unwanted := range []string{"mega-batch", "warmup", "NaN"} {
		if strings.Contains(errs, unwanted) {
			t.Errorf("gem help mentions %q", unwanted)
		}
	}
	_, _, errs = runCLI(t, "train", "--strategy", "elastic", "--devices", "3", "--help")
	if !strings.Contains(errs, "--elastic.k      ⌈min(100, ⌈N/(2·b)⌉)/devices⌉, N training points = 7") {
		t.Errorf("elastic help: derived k not shown for 3 devices:\n%s", errs)
	}
	code, out, _ := runCLI(t, "strategies", "-v")
	if code != 0 || strings.Contains(out, "NaN") {
		t.Fatalf("strategies -v: exit %d, NaN in:\n%s", code, out)
	}
	for _, want := range []string{"--adaptive.bmin       b_max/8 = 16", "--crossbow.a             1/devices = 0.25", "differs from the paper", "--lr             0.001 × devices = 0.004"} {
		if !strings.Contains(out, want) {
			t.Errorf("strategies -v lacks %q", want)
		}
	}
	if n := strings.Count(out, "\n    --optimizer "); n != len(strategy.List()) {
		t.Errorf("strategies -v shows the optimizer of %d strategies, want %d", n, len(strategy.List()))
	}
}

// A flag ignored harmlessly is a warning, and the run goes on.
func TestTrainWarnsIgnoredFlag(t *testing.T) {
	code, _, errs := runCLI(t, "train", "--epochs", "0.05", "--hidden", "8", "--noise", "0.1")
	if code != 0 || !strings.Contains(errs, "warning: --noise describes the virtual clock; ignored under --time real") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// "hetsgd tune" prints the grid and both protocols and logs every run and
// the summary.
func TestTuneCommand(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "tune.jsonl")
	code, out, errs := runCLI(t, "tune", "--strategies", "sync,downpour", "--lrs", "0.1:1", "--devices", "2",
		"--epochs", "0.3", "--eval-every", "0.1", "--hidden", "8", "--log", logPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"2 strategies × 3 rates × 1 batches × 1 seeds = 6 runs", "0.316", "shared: lr 1, batch 128", "own best rate and batch", "downpour"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 8 || !strings.Contains(lines[0], `"tune-config"`) || !strings.Contains(lines[1], `"tune-run"`) || !strings.Contains(lines[7], `"tune-summary"`) {
		t.Fatalf("log has %d lines: %s", len(lines), b)
	}
	// The parameter servers commit with sgd whatever --optimizer gives the
	// others, in the check before the runs as in the runs.
	if code, out, errs := runCLI(t, "tune", "--strategies", "sync,gem", "--optimizer", "adam", "--lrs", "0.001", "--devices", "2",
		"--epochs", "0.2", "--eval-every", "0.1", "--progress", "off"); code != 0 || !strings.Contains(out, "gem") {
		t.Errorf("tune --optimizer adam with gem: exit %d, %s %s", code, out, errs)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"tune", "--lrs", "1:0.1"}, "--lrs \"1:0.1\""},
		{[]string{"tune", "--strategies", "sync,nope"}, "unknown strategy \"nope\""},
		{[]string{"tune", "--seeds", "x"}, "--seeds: \"x\" is not a seed"},
		{[]string{"tune", "--optimizer", "rmsprop"}, "unknown optimizer"},
		{[]string{"tune", "--target", "2"}, "--target 2"},
		{[]string{"tune", "--strategies", "sync,adaptive[renorm=3]", "--lrs", "default", "--optimizer", "strategy"}, "--strategies adaptive[renorm=3], batch 128: adaptive.renorm 3"},
		{[]string{"tune", "--strategies", "sync[lr=0.5]", "--lrs", "0.1"}, "a variant's lr= replaces the grid's rate: give it with --lrs default"},
		{[]string{"tune", "--strategies", "adaptive[binit=100]", "--batches", "128,64", "--lrs", "1"}, "--strategies adaptive[binit=100], batch 64: binit 100"},
		{[]string{"tune", "--strategies", "elastic[gamma=0]"}, "elastic has no option \"gamma\""},
	} {
		if code, _, errs := runCLI(t, c.args...); code != 1 || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, %q", c.args, code, errs)
		}
	}
}

// --output lsh trains with a sampled output layer, prints its settings in
// --print-config, and refuses what does not apply.
func TestTrainOutputLSH(t *testing.T) {
	code, out, errs := runCLI(t, "train", "--output", "lsh", "--lsh-active", "0.1", "--lsh-k", "2", "--lsh-l", "10", "--epochs", "1", "--progress", "off")
	if code != 0 || !strings.Contains(out, "best P@1") {
		t.Fatalf("train --output lsh: exit %d %q %q", code, out, errs)
	}
	// slide gets SLIDE's code's sampled layer, and its settings.
	code, out, errs = runCLI(t, "train", "--strategy", "slide", "--lsh-active", "0.1", "--lsh-k", "2", "--lsh-l", "10", "--epochs", "1", "--progress", "off")
	if code != 0 || !strings.Contains(out, "best P@1") {
		t.Fatalf("train --strategy slide: exit %d %q %q", code, out, errs)
	}
	code, out, _ = runCLI(t, "train", "--strategy", "slide", "--print-config")
	for _, want := range []string{"output: lsh", "lsh-fill: point", "lsh-update: dense", "lr: 0.0001"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("slide --print-config: exit %d, no %q in\n%s", code, want, out)
		}
	}
	// Its hashing, given no hashing flag, is SLIDE's for the data set, known
	// once the data is loaded: derived, so left out of --print-config.
	if strings.Contains(out, "lsh-k:") || strings.Contains(out, "lsh-hash:") {
		t.Errorf("slide --print-config lists the hashing it derives from the data:\n%s", out)
	}
	code, out, errs = runCLI(t, "train", "--strategy", "slide", "--epochs", "0.2", "--progress", "off")
	if code != 0 || !strings.Contains(errs, "slide: SLIDE's hashing for 159 labels") || !strings.Contains(errs, "--lsh-hash dwta --lsh-k 6 --lsh-l 50") {
		t.Fatalf("train --strategy slide: exit %d %q %q", code, out, errs)
	}
	code, out, _ = runCLI(t, "train", "--output", "lsh", "--lsh-k", "2", "--print-config")
	if code != 0 || !strings.Contains(out, "output: lsh") || !strings.Contains(out, "lsh-k: 2") || !strings.Contains(out, "lsh-growth: 0.05") {
		t.Fatalf("--print-config: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--lsh-k", "3"}, "--lsh-k applies with --output lsh only"},
		{[]string{"--output", "lsh", "--time", "virtual", "--timing-only"}, "--timing-only: a sampled output layer's batch costs what it computes"},
		{[]string{"--output", "lsh", "--lsh-k", "11"}, "--lsh-k 11"},
		{[]string{"--output", "lsh", "--lsh-active", "0"}, "--lsh-active"},
		{[]string{"--output", "sparse"}, `--output "sparse": want dense or lsh`},
		{[]string{"--strategy", "slide", "--output", "dense"}, "--output dense: slide trains the sampled output layer as SLIDE's code does"},
		{[]string{"--strategy", "slide", "--lsh-fill", "batch"}, "--lsh-fill batch: slide"},
	} {
		code, _, errs := runCLI(t, append([]string{"train", "--epochs", "1"}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want an error with %q", c.args, code, errs, c.want)
		}
	}
}

// --precision bf16 runs the dense layer's products on the bf16 kernels
// where the CPU has them, names them in the run log, and says so where it
// does not; the kernels are float32 again after the run.
func TestTrainPrecision(t *testing.T) {
	log := filepath.Join(t.TempDir(), "run.jsonl")
	code, _, errs := runCLI(t, "train", "--epochs", "0.2", "--precision", "bf16", "--log", log)
	if code != 0 {
		t.Fatalf("--precision bf16: exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := `"kernel":"` + kernel.Impl() + `"`
	if bf := kernel.BF16Impl(); bf != "" {
		want = `"kernel":"` + bf + `"`
	} else if !strings.Contains(errs, "have no bf16 products") {
		t.Errorf("no note that the products stay fp32: %q", errs)
	}
	if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"precision":"bf16"`) {
		t.Errorf("run log lacks %s and the precision: %.400s", want, b)
	}
	if kernel.Precision() != kernel.FP32 {
		t.Errorf("precision %s after the run", kernel.Precision())
	}
	code, _, errs = runCLI(t, "train", "--epochs", "1", "--precision", "fp16")
	if code == 0 || !strings.Contains(errs, `--precision "fp16": want fp32 or bf16`) {
		t.Errorf("--precision fp16: exit %d, %q", code, errs)
	}
}

// hetsgd train builds the run's strategy once: its settings are checked,
// printed and logged without building it, and the engine builds the one it
// steps — with a config file and a checkpoint folder too.
func TestTrainBuildsItsStrategyOnce(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"train", "--epochs", "1", "--strategy", "adaptive", "--devices", "2"},
		{"train", "--epochs", "1", "--strategy", "diloco", "--devices", "2", "--time", "virtual",
			"--log", filepath.Join(dir, "run.jsonl"), "--checkpoint", filepath.Join(dir, "ck")},
	} {
		before := strategy.Builds()
		if code, _, errs := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		if n := strategy.Builds() - before; n != 1 {
			t.Errorf("%v built the strategy %d times, want once", args, n)
		}
	}
}

// data gen --like DIR fits a stand-in to the folder's set, --save-fit
// keeps its parameters, and --like FIT.json generates from them again, at
// any size; a bad fit file is named with the setting that is wrong.
func TestDataGenStandIn(t *testing.T) {
	if race.Enabled {
		t.Skip("a fit is single-threaded arithmetic (seconds, ten times that under the race detector): the ordinary stage runs it")
	}
	base := t.TempDir()
	real, fitted, again := filepath.Join(base, "real"), filepath.Join(base, "fitted"), filepath.Join(base, "again")
	fit := filepath.Join(base, "fit.json")
	if code, _, errs := runCLI(t, "data", "gen", "--like", "bibtex", "--scale", "0.1", "--out", real); code != 0 {
		t.Fatalf("data gen (profile): exit %d %q", code, errs)
	}
	code, out, errs := runCLI(t, "data", "gen", "--like", real, "--save-fit", fit, "--out", fitted)
	if code != 0 {
		t.Fatalf("data gen --like DIR: exit %d %q", code, errs)
	}
	words := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"train points 488 488", "co-occurrence", "labels on ≤2 points", "model: "} {
		if !strings.Contains(words, want) {
			t.Errorf("data gen --like DIR: no %q in\n%s", want, out)
		}
	}
	code, out, errs = runCLI(t, "data", "gen", "--like", fit, "--points", "100", "--out", again)
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "train points 488 100") {
		t.Fatalf("data gen --like FIT.json --points 100: exit %d %q\n%s", code, errs, out)
	}
	if code, _, errs := runCLI(t, "train", "--data", again, "--epochs", "1", "--hidden", "16"); code != 0 {
		t.Fatalf("training on a stand-in: %s", errs)
	}
	b, _ := os.ReadFile(fit)
	bad := filepath.Join(base, "bad.json")
	os.WriteFile(bad, regexp.MustCompile(`"topic_share": [0-9.e-]+`).ReplaceAll(b, []byte(`"topic_share": 2`)), 0o644)
	if code, _, errs := runCLI(t, "data", "gen", "--like", bad, "--out", t.TempDir()); code == 0 || !strings.Contains(errs, "bad.json: invalid stand-in: topic_share: 2") {
		t.Errorf("bad fit file: exit %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, "data", "gen", "--like", filepath.Join(base, "nowhere"), "--out", t.TempDir()); code == 0 || !strings.Contains(errs, "neither a paper's set") {
		t.Errorf("--like of nothing: exit %d %q", code, errs)
	}
}
