package repro

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/workload"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/report"
)

// The Adaptive SGD study runs end to end in quick mode and writes a report
// with its sections, figures and run logs.
func TestAdaptiveStudyQuick(t *testing.T) {
	if race.Enabled {
		t.Skip("the engines' concurrency is covered by their own race tests")
	}
	set := bundledSet(t, "bibtex")
	dir := t.TempDir()
	rep, err := report.Create(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	err = AdaptiveSGD(context.Background(), rep, []Set{set}, Options{Quick: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Close(); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"### Learning rate", "(Fig. 6, 7)", "Claims on 4 devices", "(Fig. 12)", "### Real time", "(Fig. 8)", "(Fig. 9–11)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*.jsonl"))
	svgs, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	if len(runs) < 20 || len(svgs) < 8 {
		t.Fatalf("%d run logs and %d figures", len(runs), len(svgs))
	}
}

// loadSet reads a reference dataset (internal/testdata) into a study set,
// skipping the test when the data are absent.
func loadSet(t *testing.T, name string) Set {
	t.Helper()
	tr, te, err := data.LoadDir(testdata.Dir(t, name))
	return setOf(t, name, tr, te, err)
}

// bundledSet makes a dataset bundled in the binary a study set.
func bundledSet(t *testing.T, name string) Set {
	t.Helper()
	tr, te, err := data.Bundled(name)
	return setOf(t, name, tr, te, err)
}

// setOf makes a study set of a loaded dataset, failing the test on the
// loading's error.
func setOf(t *testing.T, name string, tr, te *data.Dataset, err error) Set {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(name, tr, te, "")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// quickStudy runs study into a fresh report folder and returns the folder
// and its report.md.
func quickStudy(t *testing.T, study func(*report.Dir) error) (dir, md string) {
	t.Helper()
	dir = t.TempDir()
	rep, err := report.Create(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := study(rep); err != nil {
		rep.Close()
		t.Fatal(err)
	}
	if err := rep.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("quick study: %.1f s", time.Since(start).Seconds())
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, string(b)
}

// checkReport asserts that md has every section of want and that every
// number of its tables is finite. A "–" (report.Float's NaN) is allowed only
// where dash(header, row) says so: a time to a target never reached, a
// statistic a strategy does not have.
func checkReport(t *testing.T, md string, want []string, dash func(header string, row map[string]string) bool) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(md, w) {
			t.Errorf("report lacks %q", w)
		}
	}
	cells := func(line string) []string {
		c := strings.Split(strings.Trim(line, "|"), "|")
		for i := range c {
			c[i] = strings.TrimSpace(c[i])
		}
		return c
	}
	var header []string
	tables := 0
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !strings.HasPrefix(line, "|"):
			header = nil
		case header == nil:
			header = cells(line)
			tables++
		case strings.HasPrefix(line, "| ---"):
		default:
			c := cells(line)
			if len(c) != len(header) {
				t.Errorf("table row %s has %d cells for %d columns", line, len(c), len(header))
				continue
			}
			row := map[string]string{}
			for i, h := range header {
				row[h] = c[i]
			}
			for i, cell := range c {
				if cell == "–" && !dash(header[i], row) {
					t.Errorf("column %q has no number (–) in row %s", header[i], line)
				}
				if v, err := strconv.ParseFloat(strings.TrimSuffix(cell, "%"), 64); err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
					t.Errorf("column %q is not finite (%s) in row %s", header[i], cell, line)
				}
			}
		}
	}
	if tables == 0 {
		t.Errorf("report has no table:\n%s", md)
	}
	if t.Failed() {
		t.Logf("report:\n%s", md)
	}
}

func noDash(string, map[string]string) bool { return false }

// checkOutputs asserts the figures and run logs a study wrote: every figure
// named, as a non-empty SVG; exactly runs run logs, each a JSON Lines file
// starting with its configuration; and in every run but those noEvals names
// (timing-only runs, which evaluate nothing) at least one evaluation, each
// with P@1 in [0, 1] and a non-negative test loss (JSON has no NaN: a log
// holds finite numbers or fails to be written).
func checkOutputs(t *testing.T, dir string, figures []string, runs int, noEvals func(name string) bool) {
	t.Helper()
	for _, f := range figures {
		if st, err := os.Stat(filepath.Join(dir, f+".svg")); err != nil || st.Size() == 0 {
			t.Errorf("figure %s.svg missing or empty (%v)", f, err)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "runs", "*.jsonl"))
	if len(logs) != runs {
		t.Errorf("%d run logs, want %d", len(logs), runs)
	}
	for _, path := range logs {
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		evals := 0
		for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec struct {
				Event string   `json:"event"`
				P1    *float64 `json:"p1"`
				Loss  *float64 `json:"loss"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("run %s, line %d: %v", name, i+1, err)
			}
			if i == 0 && rec.Event != "config" {
				t.Errorf("run %s starts with %q, want its config", name, rec.Event)
			}
			if rec.Event != "eval" {
				continue
			}
			evals++
			if rec.P1 == nil || rec.Loss == nil || !(*rec.P1 >= 0 && *rec.P1 <= 1) || !(*rec.Loss >= 0) {
				t.Errorf("run %s, line %d: eval record %s", name, i+1, line)
			}
		}
		if evals == 0 && !noEvals(name) {
			t.Errorf("run %s has no evaluation", name)
		}
	}
}

// The Layered SGD study runs end to end in quick mode on Delicious:
// throughput scaling (timing only) and accuracy at 16 workers, where lsgd
// must give sync's accuracies exactly.
func TestLayeredSGDStudyQuick(t *testing.T) {
	if race.Enabled {
		t.Skip("the engines' concurrency is covered by their own race tests")
	}
	set := loadSet(t, "delicious")
	dir, md := quickStudy(t, func(rep *report.Dir) error {
		return LayeredSGD(context.Background(), rep, &set, Options{Quick: true, Seed: 1})
	})
	checkReport(t, md, []string{"# Layered SGD and conventional synchronous SGD", "## Throughput scaling (Fig. 4–6)",
		"At 64 workers: lsgd", "## Accuracy at 16 workers (Fig. 7)", "Same accuracy at every evaluation: **yes**"}, noDash)
	checkOutputs(t, dir, []string{"lsgd-efficiency", "lsgd-accuracy-epochs", "lsgd-accuracy-time"}, 3*3+2,
		func(name string) bool { return strings.HasPrefix(name, "lsgd-scaling-") })
}

// The GEM study runs end to end in quick mode on MNIST.
func TestGEMStudyQuick(t *testing.T) {
	if race.Enabled {
		t.Skip("the engines' concurrency is covered by their own race tests")
	}
	set := loadSet(t, "mnist")
	dir, md := quickStudy(t, func(rep *report.Dir) error {
		return GEM(context.Background(), rep, set, Options{Quick: true, Seed: 1})
	})
	// Only GEM has scaling factors π, and a quick run may not reach the
	// speed-up table's training loss of 0.2: its times and speed-ups are
	// then "–".
	checkReport(t, md, []string{"# GEM, DOWNPOUR and adaptive staleness", "## Training loss against the number of workers (Fig. 1, 2, 3)",
		"## Misspecified learning rate η = 0.1 (Fig. 6), 5 workers", "## Speed-up by splitting an effective batch of 256 (Fig. 4)"},
		func(h string, row map[string]string) bool {
			return (h == "median π (last)" && row["strategy"] != "gem") || h == "virtual s to train loss 0.2" || h == "speed-up"
		})
	checkOutputs(t, dir, []string{"gem-loss-gem", "gem-loss-downpour", "gem-loss-staleness", "gem-median-pi", "gem-lr0p1", "gem-speedup"},
		3+2+2, func(string) bool { return false })
}

// The AdaCons study runs end to end in quick mode: the linear regression
// under both step rules, Delicious with 8 and 16 workers, and the overhead
// against Sum in real and virtual time.
func TestAdaConsStudyQuick(t *testing.T) {
	if race.Enabled {
		t.Skip("the engines' concurrency is covered by their own race tests")
	}
	set := loadSet(t, "delicious")
	dir, md := quickStudy(t, func(rep *report.Dir) error {
		return AdaCons(context.Background(), rep, &set, Options{Quick: true, Seed: 1})
	})
	checkReport(t, md, []string{"# AdaCons and Sum (gradient averaging)", "## Stochastic linear regression (§4.1, Fig. 2)",
		"### distance rule", "### loss rule", "## Delicious with 8 and 16 workers", "## Per-iteration overhead (§5.1, Table 1)"}, noDash)
	checkOutputs(t, dir, []string{"adacons-regression-distance", "adacons-regression-loss", "adacons-delicious-8", "adacons-delicious-16"},
		2*2+2*2+5*4, func(string) bool { return false })
}

// The heterogeneity study runs end to end in quick mode on Bibtex: three
// spreads of speed, the protocols, the device counts and the Local-SGD
// strategies against Adaptive SGD, with a verdict on each spread and
// adaptive's batch sizes and updates on the two that are not the paper's.
func TestHeterogeneityStudyQuick(t *testing.T) {
	if race.Enabled {
		t.Skip("the engines' concurrency is covered by their own race tests")
	}
	set := bundledSet(t, "bibtex")
	dir, md := quickStudy(t, func(rep *report.Dir) error {
		return Heterogeneity(context.Background(), rep, []Set{set}, Options{Quick: true, Seed: 1})
	})
	checkReport(t, md, []string{"# Heterogeneous devices: every strategy at its defaults", "### paper: [1 0.9 0.8 0.68]",
		"### wide: [1 0.5 0.25 0.1]", "### slowdown:", "Adaptive's best P@1 is the highest of the four", "### Protocols", "### 1 to 16 devices",
		"### Local-SGD strategies, 4 devices at the paper's spread", "- diloco: best mean P@1", "- streaming-diloco: best mean P@1", "- async-local: best mean P@1"},
		// A strategy that never reaches elastic's best, or one device's,
		// has no time to it.
		func(h string, _ map[string]string) bool {
			return h == "s to elastic's best" || h == "× elastic's time" || h == "s to one device's best" || h == "speed-up to it"
		})
	// Per seed: sync on the paper and wide spreads, three others on each,
	// and four in the slowdown; the protocol's 4 Adam runs; 1 + 2 device runs;
	// the six Local-SGD section's strategies on 4 devices.
	checkOutputs(t, dir, []string{"hetero-bibtex-paper-time", "hetero-bibtex-wide-batch", "hetero-bibtex-slowdown-updates", "hetero-bibtex-devices", "hetero-bibtex-local-4-time"},
		2+3+3+4+4+3+6, func(string) bool { return false })
	// The slowdown's runs slow device 0 at half the paper spread's budget.
	b, err := os.ReadFile(filepath.Join(dir, "runs", "hetero-bibtex-slowdown-adaptive-s-1.jsonl"))
	if err != nil || !strings.Contains(string(b), `"event":"fault"`) {
		t.Errorf("the slowdown run logs no fault (%v)", err)
	}
}

// The paper study runs end to end in quick mode on a small stand-in of
// Amazon-670K: its three sections, every run on the sampled output layer
// and the study's evaluation points, and the claims stated.
func TestPaperStudyQuick(t *testing.T) {
	out, md := quickPaper(t)
	checkReport(t, md, []string{"# The papers' large experiments at full scale", "### 4 devices, equal time (Fig. 6)",
		"Adaptive's best P@1 is the highest of the four", "Adaptive is the first to reach", "### Batch sizes and perturbation (Fig. 12)",
		"### 1 to 8 devices (Fig. 8)", "Fewer mega-batches to the target as devices are added", "(the floor)"},
		// The quick study's runs may not rise above the floor: then no
		// count reaches a target.
		func(h string, _ map[string]string) bool {
			return h == "s to elastic's best" || h == "× elastic's time" || h == "mega-batches to the target" || h == "s to the target"
		})
	// Four strategies on 4 devices, adaptive on 1, 2, 4 and 8.
	checkOutputs(t, out, []string{"paper-amazon-670k-4-time", "paper-amazon-670k-paper-batch", "paper-amazon-670k-scale-mega"}, 4+4, func(string) bool { return false })
	b, err := os.ReadFile(filepath.Join(out, "runs", "paper-amazon-670k-4-adaptive.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		EvalPoints int             `json:"eval_points"`
		Sampled    json.RawMessage `json:"sampled"`
	}
	if err := json.Unmarshal(b[:strings.IndexByte(string(b), '\n')], &rec); err != nil || rec.EvalPoints != paperEvalPoints || !strings.Contains(string(rec.Sampled), `"Hash":"dwta"`) {
		t.Errorf("the config record: %+v, %v", rec, err)
	}
}

// quickPaper runs the paper study's parts (none: all of them) in quick
// mode on a 0.4 % Amazon-670K stand-in and returns its report folder and
// text; under the race detector it skips.
func quickPaper(t *testing.T, parts ...string) (dir, md string) {
	t.Helper()
	if race.Enabled {
		t.Skip("the engines' concurrency is covered by their own race tests")
	}
	set := paperSet(t, "amazon-670k", 0.004)
	return quickStudy(t, func(rep *report.Dir) error {
		return Paper(context.Background(), rep, []Set{set}, Options{Quick: true, Seed: 1, Parts: parts})
	})
}

// paperSet generates the stand-in of a paper's set at a scale into its
// folder of a data directory, as hetsgd data gen writes it, and reads it
// back with LoadSet.
func paperSet(t *testing.T, name string, scale float64) Set {
	t.Helper()
	dir := t.TempDir()
	s, err := data.PaperStandIn(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Scaled(scale).GenerateDirContext(context.Background(), filepath.Join(dir, name), 1, false); err != nil {
		t.Fatal(err)
	}
	set, err := LoadSet(context.Background(), name, dir, 1)
	if err != nil || set == nil {
		t.Fatalf("%s: %v, %v", name, set, err)
	}
	return *set
}

// LoadSet reads a paper's stand-in from its folder of the data directory,
// where hetsgd data gen writes it.
func TestLoadPaperSet(t *testing.T) {
	set := paperSet(t, "delicious-200k", 0.002)
	if set.Name != "delicious-200k" || set.Train.Len() == 0 || !strings.Contains(set.Note, "--like delicious-200k") {
		t.Fatalf("delicious-200k: %+v", set)
	}
}

// The paper study's parts: equal-time alone runs sync, adaptive and
// elastic on 4 devices, no CROSSBOW and no scaling, and reads the claims
// against the three.
func TestPaperParts(t *testing.T) {
	out, md := quickPaper(t, "equal-time")
	for _, want := range []string{"CROSSBOW was left out", "highest of the three", "Adaptive is the first to reach", "(Fig. 12)"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "(Fig. 8)") || strings.Contains(md, "| crossbow |") {
		t.Errorf("--parts equal-time wrote the scaling section or CROSSBOW:\n%s", md)
	}
	checkOutputs(t, out, []string{"paper-amazon-670k-4-time"}, 3, func(string) bool { return false })
}

// Parts runs the sections named and no other: the device counts alone run
// one device and two (adaptive and elastic), and the report has no spread
// or protocol.
func TestHeterogeneityParts(t *testing.T) {
	if race.Enabled {
		t.Skip("the engines' concurrency is covered by their own race tests")
	}
	set := bundledSet(t, "bibtex")
	dir, md := quickStudy(t, func(rep *report.Dir) error {
		return Heterogeneity(context.Background(), rep, []Set{set}, Options{Quick: true, Seed: 1, Parts: []string{"devices"}})
	})
	if !strings.Contains(md, "### 1 to 16 devices") || strings.Contains(md, "### paper:") || strings.Contains(md, "### Protocols") {
		t.Fatalf("--parts devices wrote:\n%s", md)
	}
	checkOutputs(t, dir, []string{"hetero-bibtex-devices"}, 3, func(string) bool { return false })
}

// With Reuse a study reads back the runs whose logs are complete and from
// the same configuration, and writes the same report; a run whose log is
// cut short, or is of another configuration, runs again.
func TestReuse(t *testing.T) {
	if race.Enabled {
		t.Skip("the engines' concurrency is covered by their own race tests")
	}
	set := bundledSet(t, "bibtex")
	dir := t.TempDir()
	bench := func(opt Options) (md, progress string) {
		t.Helper()
		var log strings.Builder
		opt.Quick, opt.Parts, opt.Log = true, []string{"devices"}, &log
		rep, err := report.Create(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := Heterogeneity(context.Background(), rep, []Set{set}, opt); err != nil {
			t.Fatal(err)
		}
		if err := rep.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b), log.String()
	}
	first, _ := bench(Options{Seed: 1})
	again, progress := bench(Options{Seed: 1, Reuse: true})
	if again != first || strings.Count(progress, "read back from its log") != 3 {
		t.Fatalf("reused: the same report %v; progress:\n%s", again == first, progress)
	}
	// Cut one log before its done record: that run, alone, runs again.
	path := filepath.Join(dir, "runs", "hetero-bibtex-devices-2-adaptive-s-1.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:strings.LastIndex(strings.TrimSuffix(string(b), "\n"), "\n")+1], 0o644); err != nil {
		t.Fatal(err)
	}
	again, progress = bench(Options{Seed: 1, Reuse: true})
	if again != first || strings.Count(progress, "read back from its log") != 2 {
		t.Fatalf("a log cut short: the same report %v; progress:\n%s", again == first, progress)
	}
	// A log of another configuration (its rate changed): that run, alone,
	// runs again.
	path = filepath.Join(dir, "runs", "hetero-bibtex-devices-1-adaptive-s-1.jsonl")
	if b, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), `"lr":`, `"lr":1`, 1)
	if changed == string(b) {
		t.Fatal("no rate in the config record")
	}
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, progress = bench(Options{Seed: 1, Reuse: true}); strings.Count(progress, "read back from its log") != 2 {
		t.Fatalf("a log of another configuration:\n%s", progress)
	}
}

// One --parts list serves every study: each runs the named sections of its
// own, or all of them when none of its own is named.
func TestPartsOf(t *testing.T) {
	for _, c := range []struct {
		named []string
		part  string
		want  bool
	}{
		{nil, "scaling", true},
		{[]string{"scaling"}, "scaling", true},
		{[]string{"scaling"}, "equal-time", false},
		{[]string{"spreads"}, "equal-time", true}, // none of the paper study's named
		{[]string{"spreads", "crossbow"}, "scaling", false},
	} {
		if got := partsOf(PaperParts, c.named)(c.part); got != c.want {
			t.Errorf("parts %v, section %s: %v, want %v", c.named, c.part, got, c.want)
		}
	}
}

// The floor is always predicting the most frequent training label, on the
// first test points; a claim's level is the lowest best that clears it by
// the margin, and there is none when no best does.
func TestFloorAndTarget(t *testing.T) {
	read := func(s string) *data.Dataset {
		d, err := data.ReadXC(strings.NewReader(s), "tiny.txt")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Label 2 is on three of four training points; on the test points
	// 2 of the first 3 have it, the fourth (not scored) too.
	train := read("4 2 3\n2 0:1\n0,2 1:1\n2 0:1\n1 1:1\n")
	test := read("4 2 3\n2 0:1\n0 1:1\n1,2 0:1\n2 1:1\n")
	w, err := workload.NewXML(train, test, []int{4}, 0, 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got := headFloor(w, 3); math.Abs(got-2.0/3) > 1e-12 {
		t.Fatalf("floor %v, want 2/3", got)
	}
	for _, c := range []struct {
		bests []float64
		want  float64
		ok    bool
	}{
		{[]float64{0.5, 0.41, 0.3}, 0.41, true}, // 0.3 is at the floor of 0.3
		{[]float64{0.31, 0.3, 0.319}, 0, false}, // none 0.02 above
		{[]float64{0.32}, 0.32, true},
	} {
		got, ok := target(c.bests, 0.3)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("target(%v, 0.3) = %v, %v; want %v, %v", c.bests, got, ok, c.want, c.ok)
		}
	}
}

// Claim (a) is read at the lowest best above the floor: a strategy that
// never left it neither sets the level nor reaches it, and with none above
// it the claim cannot be read.
func TestFirstTo(t *testing.T) {
	run := func(points ...float64) []*engine.Result {
		r := &engine.Result{}
		for i := 0; i < len(points); i += 2 {
			r.Evals = append(r.Evals, runlog.Eval{TrainSeconds: points[i], Fields: metric.Fields{P1: points[i+1]}})
		}
		return []*engine.Result{r}
	}
	runs := map[string][]*engine.Result{
		"sync":     run(1, 0.40, 2, 0.40), // at the floor throughout
		"adaptive": run(1, 0.45, 2, 0.50),
		"elastic":  run(1, 0.41, 2, 0.43, 3, 0.46),
	}
	got := firstTo(runs, 0.40)
	if want := "reach P@1 0.4600, the lowest of the bests above the floor: **yes** (adaptive 2 s, elastic 3 s, sync never)"; !strings.Contains(got, want) {
		t.Errorf("got %q, want it to say %q", got, want)
	}
	if got := firstTo(map[string][]*engine.Result{"sync": run(1, 0.41)}, 0.40); !strings.Contains(got, "cannot be read") {
		t.Errorf("no strategy above the floor: %q", got)
	}
}
