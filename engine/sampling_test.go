package engine

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/workload"
)

// sampledBibtex is the tests' Bibtex workload with a sampled output layer:
// of its 159 labels, each point retrieves up to 16 and a batch shares 16
// more; tables rebuilt every 200 samples.
func sampledBibtex(t *testing.T, background bool) *workload.XML {
	t.Helper()
	w := xml(t, 0)
	s := workload.DefaultSampling()
	s.K, s.L, s.Active, s.Rehash, s.Rebuild, s.Background = 2, 10, 0.1, 200, 1000, background
	if err := w.SetSampling(s); err != nil {
		t.Fatal(err)
	}
	return w
}

// A sampled output layer trains: under the real clock, on one device and
// on two with tables rebuilt in the background, with the batch's labels
// shared, and in SLIDE's code's mode (each point padded with its own random
// labels, every weight updated), the model learns beyond the most frequent
// label (P@1 about 0.19 on Bibtex; 0.46–0.49 with batch fill, 0.51 with the
// labels shared, 0.32 in SLIDE's mode after 3 epochs), exactly evaluated
// over every label. Only the two-device case builds in the background,
// whose timing varies its P@1 from run to run.
func TestSampledRunLearns(t *testing.T) {
	for _, tc := range []struct {
		strat      string
		devices    int
		background bool
		fill       string
	}{{"sync", 1, false, "batch"}, {"elastic", 2, true, "batch"}, {"elastic", 1, false, "labels"}, {"elastic", 1, false, "labels+correct"}, {"sync", 1, false, "point"}} {
		cfg := base(tc.strat, tc.devices, Real)
		cfg.Epochs, cfg.EvalEvery = 3, 3
		cfg.Optimizer, cfg.LR = optim.Config{Name: "adam"}, 0.01
		w := sampledBibtex(t, tc.background)
		w.Sampling().Fill, w.Sampling().Correct = tc.fill, false
		if tc.fill == "labels+correct" {
			w.Sampling().Fill, w.Sampling().Correct = "labels", true
		}
		if tc.fill == "point" {
			w.Sampling().Update = "dense" // SLIDE's code
		}
		res, err := Run(context.Background(), cfg, w, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		p1 := res.Evals[len(res.Evals)-1].P1
		t.Logf("%s on %d devices, %s fill: P@1 %.4f after 3 epochs", tc.strat, tc.devices, tc.fill, p1)
		if p1 < 0.25 {
			t.Errorf("%s on %d devices, %s fill: P@1 %.4f after 3 epochs", tc.strat, tc.devices, tc.fill, p1)
		}
	}
}

// The settings are checked, each error naming its field.
func TestSamplingSettings(t *testing.T) {
	for field, mod := range map[string]func(*workload.Sampling){
		"Sampling.Hash":     func(s *workload.Sampling) { s.Hash = "minhash" },
		"Sampling.K":        func(s *workload.Sampling) { s.K = 11 },
		"Sampling.L":        func(s *workload.Sampling) { s.L = 0 },
		"Sampling.Capacity": func(s *workload.Sampling) { s.Capacity = 0 },
		"Sampling.Active":   func(s *workload.Sampling) { s.Active = 0 },
		"Sampling.Fill":     func(s *workload.Sampling) { s.Fill = "none" },
		"Sampling.Update":   func(s *workload.Sampling) { s.Update = "eager" },
		"Sampling.Rehash":   func(s *workload.Sampling) { s.Rehash = 0 },
		"Sampling.Rebuild":  func(s *workload.Sampling) { s.Rebuild = -1 },
		"Sampling.Growth":   func(s *workload.Sampling) { s.Growth = -1 },
	} {
		s := workload.DefaultSampling()
		mod(&s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
	if err := workload.DefaultSampling().Check(); err != nil {
		t.Fatal(err)
	}
	// Under the virtual clock: a cost model without the sampled layer's
	// terms cannot price it, and a timing-only run computes nothing to
	// price.
	cfg := base("sync", 1, Virtual)
	cfg.Cost.PerGather, cfg.Cost.PerHash = 0, 0
	_, err := Run(context.Background(), cfg, sampledBibtex(t, false), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "Config.Cost") {
		t.Fatalf("a sampled run under the virtual clock without the cost model's sampled terms: %v", err)
	}
	cfg = sampledVirtual(base("sync", 1, Virtual))
	cfg.TimingOnly = true
	if _, err := Run(context.Background(), cfg, sampledBibtex(t, false), nil, nil); err == nil || !strings.Contains(err.Error(), "Config.TimingOnly") {
		t.Fatalf("a timing-only sampled run: %v", err)
	}
}

// sampledVirtual gives cfg a cost model that prices a sampled layer.
func sampledVirtual(cfg Config) Config {
	cfg.Cost.PerGather, cfg.Cost.PerHash = 2e-11, 1e-9
	return cfg
}

// A sampled layer runs under the virtual clock, every strategy of it
// deterministic: its tables are built in line (a background build's timing
// would be the machine's), its batches priced by what they computed. Two
// runs with the same seed write the same log, byte for byte; the sampled
// batches cost their own time, not a dense layer's.
func TestSampledVirtualIsDeterministic(t *testing.T) {
	logOf := func(w Workload) (string, *Result) {
		cfg := sampledVirtual(base("adaptive", 4, Virtual))
		cfg.Speeds = []float64{1, 0.9, 0.8, 0.68}
		cfg.Epochs, cfg.EvalEvery = 1, 0.25
		var buf bytes.Buffer
		res, err := Run(context.Background(), cfg, w, runlog.NewLog(&buf), nil)
		if err != nil {
			t.Fatal(err)
		}
		return buf.String(), res
	}
	a, res := logOf(sampledBibtex(t, true))
	if b, _ := logOf(sampledBibtex(t, true)); a != b {
		t.Fatal("two sampled virtual runs with the same seed wrote different logs")
	}
	dense, denseRes := logOf(xml(t, 0))
	if dense == a || res.TrainSeconds == denseRes.TrainSeconds {
		t.Fatalf("the sampled run's virtual time %v is the dense run's", res.TrainSeconds)
	}
	if p1 := res.Evals[len(res.Evals)-1].P1; !(p1 > 0.2) {
		t.Fatalf("the sampled virtual run reached P@1 %v after an epoch", p1)
	}
}

// slide runs only on the sampled layer in SLIDE's code's mode.
func TestSlideNeedsItsLayer(t *testing.T) {
	cfg := base("slide", 1, Real)
	corrected := sampledBibtex(t, false)
	corrected.Sampling().Fill, corrected.Sampling().Update = "point", "dense" // and the default correction
	for name, w := range map[string]*workload.XML{"dense": xml(t, 0), "default sampled": sampledBibtex(t, false), "corrected": corrected} {
		if _, err := Run(context.Background(), cfg, w, nil, nil); err == nil || !strings.Contains(err.Error(), "Config.Strategy") {
			t.Errorf("slide on a %s output layer: %v", name, err)
		}
	}
	w := sampledBibtex(t, false)
	w.Sampling().Fill, w.Sampling().Update, w.Sampling().Correct = "point", "dense", false
	if _, err := Run(context.Background(), cfg, w, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// A sampled run checkpoints and resumes like any other; its checkpoint is
// refused by a run with a dense output layer, whose weights lie otherwise.
func TestSampledCheckpoint(t *testing.T) {
	cfg := base("elastic", 1, Real)
	cfg.Epochs = 0.5
	dir := t.TempDir()
	cfg.Checkpoint = Checkpointing{Dir: dir, Keep: 10}
	if _, err := Run(context.Background(), cfg, sampledBibtex(t, true), nil, nil); err != nil {
		t.Fatal(err)
	}
	list, _ := checkpoint.Dir(dir).List()
	if len(list) != 1 {
		t.Fatalf("checkpoints %v", list)
	}
	for name, w := range map[string]*workload.XML{"sampled": sampledBibtex(t, true), "dense": xml(t, 0)} {
		rd, err := checkpoint.Open(list[0])
		if err != nil {
			t.Fatal(err)
		}
		again := cfg
		again.Resume, again.Epochs, again.Checkpoint = rd, 1, Checkpointing{}
		_, err = Run(context.Background(), again, w, nil, nil)
		rd.Close()
		if name == "sampled" && err != nil {
			t.Fatalf("resuming a sampled run: %v", err)
		}
		if name == "dense" && (err == nil || !strings.Contains(err.Error(), "sampled output layer")) {
			t.Fatalf("a sampled run's checkpoint on a dense layer: %v", err)
		}
	}
}

// On one device, sync's all-reduce of the device's gradient keeps the
// sampled layer's lazy rule: its run is elastic's on one device (a local
// Step per batch), bit for bit, and not the dense update of every weight.
// On several, sync updates the union of the rows its devices' batches
// touched, and the virtual clock prices that update by those rows: fewer
// than every parameter, more than one batch's.
func TestSyncIsLazy(t *testing.T) {
	var params [2][]float32
	for i, strat := range []string{"sync", "elastic"} {
		cfg := base(strat, 1, Real)
		cfg.Epochs, cfg.EvalEvery = 1, 1
		cfg.Optimizer, cfg.LR = optim.Config{Name: "adam"}, 0.01
		r := start(t, cfg, sampledBibtex(t, false), nil)
		params[i] = r.job.(execJob).x.devs[0].p
	}
	for j := range params[0] {
		if math.Float32bits(params[0][j]) != math.Float32bits(params[1][j]) {
			t.Fatalf("parameter %d: sync %v, elastic %v: one device's all-reduce is not its lazy Step", j, params[0][j], params[1][j])
		}
	}

	applied := map[int]int64{}
	for _, n := range []int{1, 4} {
		cfg := base("sync", n, Virtual)
		cfg.Epochs, cfg.EvalEvery = 0.05, 1
		cfg.Optimizer, cfg.LR = optim.Config{Name: "adam"}, 0.01
		w := sampledBibtex(t, false)
		r := start(t, cfg, w, nil)
		applied[n] = r.job.(execJob).x.applied
		if all := int64(w.NumParams()); applied[n] <= 0 || applied[n] >= all {
			t.Fatalf("sync on %d devices: the last update changed %d of %d parameters", n, applied[n], all)
		}
	}
	if applied[4] <= applied[1] {
		t.Fatalf("four devices' union of rows %d parameters, one device's batch %d", applied[4], applied[1])
	}
}

// An op's Step on a device's own gradient (CROSSBOW's synchronisation)
// keeps the sampled layer's lazy rule: Gradient then Step is the device's
// local Step, bit for bit; another vector, even equal to it, reaches every
// weight, which Adam then moves by its moments.
func TestReplicaStepIsLazy(t *testing.T) {
	w := sampledBibtex(t, false)
	var lazy *lazyRows
	dev := func(mode strategy.Mode) *device {
		worker, err := w.NewWorker(32, 7, false)
		if err != nil {
			t.Fatal(err)
		}
		opt, err := optim.New(optim.Config{Name: "adam"}, w.NumParams())
		if err != nil {
			t.Fatal(err)
		}
		d := &device{worker: worker, opt: opt, p: make([]float32, w.NumParams()), g: make([]float32, w.NumParams()), lr: 0.01, mode: mode}
		w.Init(d.p, 1)
		if lazy == nil {
			lazy = newLazyRows(worker.(LazyApplier).MaskLen())
		}
		d.lazy = lazy
		return d
	}
	local, op, other := dev(strategy.LocalStep), dev(strategy.Gradient), dev(strategy.Gradient)
	for step := range 3 {
		for _, d := range []*device{local, op, other} {
			d.worker.Load(data.NewSampler(w.Size(), uint64(step)), 32)
			d.compute()
		}
		op.Step(op.g, 0.01)
		other.Step(slices.Clone(other.g), 0.01)
	}
	if !slices.Equal(local.p, op.p) {
		t.Fatal("an op's Step on the device's gradient is not its local Step")
	}
	if slices.Equal(local.p, other.p) {
		t.Fatal("a Step on another vector is the lazy one: the test cannot tell them apart")
	}
}

// The run log's config record says where the lazy rule holds, in every
// run of a lazily updated sampled layer, and that it does not for a
// parameter server's commits; a dense layer's record says nothing.
func TestUpdateNote(t *testing.T) {
	for strat, ps := range map[string]bool{"gem": true, "downpour": true, "sync": false, "crossbow": false, "adacons": false} {
		cfg := base(strat, 2, Virtual)
		if ps {
			cfg.Optimizer = optim.Config{}
		}
		for _, sampled := range []bool{false, true} {
			var w Workload = xml(t, 0)
			if sampled {
				w = sampledBibtex(t, false)
			}
			rec, err := Record(cfg, w)
			if err != nil {
				t.Fatal(err)
			}
			holds, not := strings.Contains(rec.UpdateNote, "lazy rule holds"), strings.Contains(rec.UpdateNote, "does not hold for it")
			if holds != sampled || not != (ps && sampled) {
				t.Errorf("%s, sampled %v: update note %q", strat, sampled, rec.UpdateNote)
			}
		}
	}
}

// Sync's lazy all-reduce — the devices' marks, the summed gradient and its
// update of the union of their rows — allocates nothing once warm.
func TestLazyAllReduceDoesNotAllocate(t *testing.T) {
	race.SkipAllocs(t)
	cfg := base("sync", 2, Virtual)
	cfg.Optimizer = optim.Config{Name: "adam"}
	r, err := newRun(cfg, sampledBibtex(t, false), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := r.job.(execJob).x
	step := func() {
		for id := range 2 {
			a := strategy.Action{Kind: strategy.Dispatch, Device: id, Batch: 32, LR: 0.01, Mode: strategy.Gradient}
			w, _ := r.begin(&a)
			d := x.local(id)
			x.load(d, w)
			d.compute()
			r.finish(id)
		}
		if err := x.allReduce(0.01, nil, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if a := testing.AllocsPerRun(20, step); a != 0 {
		t.Errorf("a lazy all-reduce step allocates %v times", a)
	}
	if x.applied == 0 {
		t.Fatal("the all-reduce was not lazy")
	}
}

// A run whose budget ends in the middle of a round checkpoints devices
// that hold gradients not yet applied; continued, it ends on the
// uninterrupted run's model, bit for bit: the checkpoint keeps the rows
// each such device's batch touched (sync's union of rows, CROSSBOW's step
// on a device's own gradient).
func TestSampledResumeMidRound(t *testing.T) {
	w := sampledBibtex(t, false)
	size := float64(w.Size())
	for _, strat := range []string{"sync", "crossbow"} {
		cfg := base(strat, 4, Virtual)
		cfg.Optimizer, cfg.LR = optim.Config{Name: "adam"}, 0.01
		cfg.Epochs = float64(6*128+10) / size
		full, err := Run(context.Background(), cfg, w, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		first := cfg
		first.Epochs = float64(3*128+10) / size
		dir := t.TempDir()
		first.Checkpoint = Checkpointing{Dir: dir, Keep: 10}
		if _, err := Run(context.Background(), first, w, nil, nil); err != nil {
			t.Fatal(err)
		}
		list, err := checkpoint.Dir(dir).List()
		if err != nil || len(list) == 0 {
			t.Fatalf("%s: checkpoints %v, %v", strat, list, err)
		}
		rd, err := checkpoint.Open(list[len(list)-1])
		if err != nil {
			t.Fatal(err)
		}
		again := cfg
		again.Resume = rd
		res, err := Run(context.Background(), again, w, nil, nil)
		rd.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !testdata.EqualBits(res.Model, full.Model) || res.Samples != full.Samples {
			t.Errorf("%s: continued from a checkpoint mid-round: the model (max relative difference %.2g) or the samples (%d, %d) differ from the uninterrupted run's",
				strat, testdata.MaxRelDiff(res.Model, full.Model), res.Samples, full.Samples)
		}
	}
}

// A sampled device's gradient is cleared only where its last batch wrote,
// unless something else may have written into it (an op that took it, a
// commit, a checkpoint): every strategy's run is the same, byte for byte,
// as the run whose every batch clears the whole output layer.
func TestKeepZerosIsTheSameRun(t *testing.T) {
	for _, info := range strategy.List() {
		if info.Name == "slide" {
			continue // its own layer's mode: TestSlideNeedsItsLayer
		}
		logOf := func() string {
			cfg := sampledVirtual(resumeConfig(info.Name))
			cfg.Epochs, cfg.EvalEvery = 0.5, 0.25
			if info.Name == "staleness" {
				cfg.Optimizer, cfg.LR = optim.Config{Name: "sgd"}, 0.2 // a parameter server's rule
			}
			var buf bytes.Buffer
			if _, err := Run(context.Background(), cfg, sampledBibtex(t, true), runlog.NewLog(&buf), nil); err != nil {
				t.Fatalf("%s: %v", info.Name, err)
			}
			return buf.String()
		}
		kept := logOf()
		keepZeros = false
		whole := logOf()
		keepZeros = true
		if kept != whole {
			t.Errorf("%s: the run that clears only the last batch's rows differs from the one that clears the whole layer", info.Name)
		}
	}
}
