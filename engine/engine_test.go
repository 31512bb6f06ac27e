package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/workload"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/all"
	"github.com/hetsgd/hetsgd/strategy/crossbow"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func bibtex(t testing.TB) (*data.Dataset, *data.Dataset) {
	t.Helper()
	train, test, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	return train, test
}

func base(strat string, devices int, clock Clock) Config {
	return Config{Strategy: strat, Devices: devices, Batch: 32, LR: 0.5,
		Optimizer: optim.Config{Name: "sgd"}, Clock: clock, Epochs: 0.5, EvalEvery: 10, Seed: 3,
		Cost: cost.Default(), Net: comm.DefaultModel}
}

// xml is the Bibtex workload of the tests: one hidden layer of 16.
func xml(t testing.TB, dropout float64) *workload.XML {
	t.Helper()
	train, test := bibtex(t)
	w, err := workload.NewXML(train, test, []int{16}, dropout, 0, 256)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// reference is a deliberately plain single-device SGD loop: the same seeds,
// sampler and model as the engine, nothing else.
func reference(t testing.TB, cfg Config, dropout float64, trainSet *data.Dataset, batch, steps int) []float32 {
	t.Helper()
	m, err := model.New(model.Config{Inputs: trainSet.Features(), Hidden: []int{16}, Outputs: trainSet.Labels()})
	if err != nil {
		t.Fatal(err)
	}
	p, g := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(p, initSeed(cfg.Seed))
	ws := m.NewWorkspace(batch)
	ws.SetDropout(dropout, dropoutSeed(cfg.Seed, 0))
	opt, _ := optim.New(cfg.Optimizer, len(p))
	b := data.NewBatch(trainSet, batch)
	s := data.NewSampler(trainSet.Len(), samplerSeed(cfg.Seed))
	for range steps {
		b.Draw(trainSet, s, batch)
		ws.Gradient(p, g, &b.X, &b.Y)
		opt.Step(p, g, float32(cfg.LR))
	}
	return p
}

// start builds and runs an engine on w (nil: Bibtex without dropout),
// returning it for inspection.
func start(t testing.TB, cfg Config, w Workload, log *runlog.Log) *run {
	t.Helper()
	if w == nil {
		w = xml(t, 0)
	}
	r, err := newRun(cfg, w, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.drive(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// On one device every strategy is plain mini-batch SGD, bit for bit, under
// both clocks (with dropout on, which must draw the same masks).
func TestOneDeviceIsPlainSGD(t *testing.T) {
	train, _ := bibtex(t)
	for _, info := range strategy.List() {
		for _, clock := range raceClocks() {
			cfg := base(info.Name, 1, clock)
			opts, plain := strategytest.PlainSGD(info.Name)
			if info.Async || !plain {
				continue // a parameter server with one worker is not plain SGD, nor are strategies that do not say so
			}
			if opts != nil {
				cfg.Options = opts // adaptive-code: without warm-up and decay its learning rate is constant
			}
			r := start(t, cfg, xml(t, 0.2), nil)
			steps := int(r.done) / cfg.Batch
			want := reference(t, cfg, 0.2, train, cfg.Batch, steps)
			for i, v := range r.job.(execJob).x.devs[0].p {
				if math.Float32bits(v) != math.Float32bits(want[i]) {
					t.Fatalf("%s (%s clock): after %d steps parameter %d = %v, plain SGD %v", info.Name, clock, steps, i, v, want[i])
				}
			}
		}
	}
}

// sync on n devices is SGD on the union batch: the same samples in the same
// order, the mean of the devices' mean gradients being the union's mean.
func TestSyncEqualsUnionBatch(t *testing.T) {
	train, _ := bibtex(t)
	for _, clock := range []Clock{Virtual, Real} {
		cfg := base("sync", 4, clock)
		cfg.Batch = 16
		r := start(t, cfg, nil, nil)
		steps := int(r.done) / 64
		want := reference(t, cfg, 0, train, 64, steps)
		var maxDiff, scale float64
		for i, v := range r.job.(execJob).x.devs[0].p {
			maxDiff = math.Max(maxDiff, math.Abs(float64(v-want[i])))
			scale = math.Max(scale, math.Abs(float64(want[i])))
		}
		if maxDiff > 1e-5*scale {
			t.Fatalf("%s clock: sync on 4×16 differs from one device on 64 by %g (scale %g) after %d steps", clock, maxDiff, scale, steps)
		}
		for d := 1; d < 4; d++ {
			for i := range r.job.(execJob).x.devs[d].p {
				if r.job.(execJob).x.devs[d].p[i] != r.job.(execJob).x.devs[0].p[i] {
					t.Fatalf("%s clock: replicas 0 and %d differ under sync", clock, d)
				}
			}
		}
	}
}

// The collectives' arithmetic on hand-computed values.
func TestCollectivesKnownAnswers(t *testing.T) {
	mk := func(v ...float32) []float32 { return v }
	x := &executor{world: comm.Self(), n: 2, part: make([]float64, 2), values: make([]float64, 2), members: newMembership(2)}
	x.devs = []*device{{id: 0, p: mk(1, 2)}, {id: 1, p: mk(3, 6)}}
	x.center, x.prev, x.scratch = mk(2, 2), mk(1, 1), make([]float32, 2)
	// Merge: α = [0.25 0.75], γ = 0.5:
	//   w̄' = 0.25·(1,2) + 0.75·(3,6) + 0.5·((2,2) − (1,1)) = (3, 5.5)
	if err := x.collective(mergeCmd([]float64{0.25, 0.75}, 0.5)); err != nil {
		t.Fatal(err)
	}
	if !equal(x.center, mk(3, 5.5)) || !equal(x.prev, mk(2, 2)) || !equal(x.devs[0].p, mk(3, 5.5)) || !equal(x.devs[1].p, mk(3, 5.5)) {
		t.Fatalf("merge: centre %v prev %v replicas %v %v", x.center, x.prev, x.devs[0].p, x.devs[1].p)
	}
	// CROSSBOW, a = 0.5, γ = 0.9, D_prev = (1, 0), z = (1, 1):
	//   d_0 = (1,2)−z = (0,1), d_1 = (3,5)−z = (2,4)
	//   w_0 = (1,2) − 0.5·(0,1) = (1, 1.5);  w_1 = (3,5) − 0.5·(2,4) = (2, 3)
	//   D = 0.9·(1,0) + 0.5·((0,1)+(2,4)) = (1.9, 2.5);  z = (2.9, 3.5)
	x.devs[0].p, x.devs[1].p = mk(1, 2), mk(3, 5)
	x.center, x.cstate = mk(1, 1), mk(1, 0)
	if err := x.collective(syncCmd(0.5, 0.9, 0, false)); err != nil {
		t.Fatal(err)
	}
	if !near(x.center, mk(2.9, 3.5)) || !near(x.cstate, mk(1.9, 2.5)) || !near(x.devs[0].p, mk(1, 1.5)) || !near(x.devs[1].p, mk(2, 3)) {
		t.Fatalf("center-sync: z %v D %v replicas %v %v", x.center, x.cstate, x.devs[0].p, x.devs[1].p)
	}
	// AllReduce with weights [0.25 0.75] and plain SGD at lr 2:
	//   ḡ = 0.25·(4,0) + 0.75·(0,4) = (1, 3); p = (1,1) − 2·ḡ = (−1, −5)
	sgd := &optim.SGD{}
	x.devs = []*device{{id: 0, p: mk(1, 1), g: mk(4, 0), opt: sgd}, {id: 1, p: mk(1, 1), g: mk(0, 4), opt: sgd}}
	if err := x.allReduce(2, []float64{0.25, 0.75}, false, nil); err != nil {
		t.Fatal(err)
	}
	if !equal(x.devs[0].p, mk(-1, -5)) || !equal(x.devs[1].p, mk(-1, -5)) {
		t.Fatalf("all-reduce: replicas %v %v", x.devs[0].p, x.devs[1].p)
	}
}

// mergeCmd is the command of a merge (strategy.Merge).
func mergeCmd(w []float64, gamma float64) *command {
	a := strategy.Merge(w, gamma)
	c := opCommand(cmdCollective, &a)
	return &c
}

// syncCmd is the command of CROSSBOW's synchronisation (crossbow.Sync).
func syncCmd(a, gamma, lr float64, withGrad bool) *command {
	act := crossbow.Sync(a, gamma, withGrad, lr)
	c := opCommand(cmdCollective, &act)
	return &c
}

func equal(a, b []float32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func near(a, b []float32) bool {
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return len(a) == len(b)
}

// The virtual clock repeats a run byte for byte, merges and noise included.
func TestVirtualIsDeterministic(t *testing.T) {
	logOf := func(seed uint64) string {
		cfg := base("adaptive", 4, Virtual)
		cfg.Seed = seed
		cfg.Speeds = []float64{1, 0.9, 0.8, 0.68}
		cfg.Noise = 0.1
		cfg.Options = map[string]float64{"mega-batch": 40}
		cfg.EvalEvery = 0.1
		var buf bytes.Buffer
		l := runlog.NewLog(&buf)
		start(t, cfg, nil, l)
		return buf.String()
	}
	a, b := logOf(7), logOf(7)
	if a != b {
		t.Fatal("two virtual runs with the same seed wrote different logs")
	}
	if !strings.Contains(a, `"event":"merge"`) || !strings.Contains(a, `"perturbed":true`) {
		t.Fatalf("log lacks merges with perturbation:\n%s", a[:min(len(a), 600)])
	}
	if logOf(8) == a {
		t.Fatal("a different seed wrote the same log")
	}
}

// Under the virtual clock a slower device finishes fewer batches, and
// Adaptive SGD shrinks its batch (Alg. 1).
func TestVirtualHeterogeneityAndScaling(t *testing.T) {
	cfg := base("adaptive", 2, Virtual)
	cfg.Speeds = []float64{1, 0.5}
	cfg.Epochs = 2
	cfg.Options = map[string]float64{"mega-batch": 10}
	r := start(t, cfg, nil, nil)
	first, last := r.res.Merges[0], r.res.Merges[len(r.res.Merges)-1]
	if !(first.Updates[0] > first.Updates[1]) {
		t.Fatalf("first mega-batch updates %v: the slow device should do fewer", first.Updates)
	}
	if !(last.BatchSizes[1] < last.BatchSizes[0]) {
		t.Fatalf("last batch sizes %v: the slow device's batch should have shrunk", last.BatchSizes)
	}
	// The time stamps advance and the merge records are complete.
	for i := 1; i < len(r.res.Merges); i++ {
		if !(r.res.Merges[i].Time > r.res.Merges[i-1].Time) {
			t.Fatal("merge times do not advance")
		}
	}
	// Only a merge changes the centre: the last record holds its norm.
	if got, want := last.CenterNorm, kernel.Nrm2(r.job.(execJob).x.center); got != want || !(want > 0) {
		t.Fatalf("last merge record's centre norm %v, the centre's %v", got, want)
	}
}

// Every strategy learns Bibtex under both clocks with 4 heterogeneous
// devices (run with -race to check the real engine). Learning means: the run
// processes its whole budget of 2 epochs without diverging, its training
// loss falls from the first epoch to the second, and its model ends with a
// lower test loss than the initial model's and a P@1 above 0.2 — the initial
// model scores about 0.02 and always predicting the most frequent label
// 0.14.
func TestAllStrategiesLearn(t *testing.T) {
	w := xml(t, 0)
	p := make([]float32, w.NumParams())
	w.Init(p, initSeed(base("sync", 1, Virtual).Seed))
	initial := w.Evaluate(p)
	for _, info := range strategy.List() {
		for _, clock := range raceClocks() {
			cfg := base(info.Name, 4, clock)
			cfg.Speeds = []float64{1, 0.9, 0.8, 0.68}
			cfg.Epochs = 2
			cfg.EvalEvery = 1
			if info.Name == "adaptive-code" {
				cfg.Options = map[string]float64{"warmup": 0.5, "bmin": 8, "step": 8, "mega-batch": 10}
			}
			if strings.HasPrefix(info.Name, "adaptive") && cfg.Options == nil {
				cfg.Options = map[string]float64{"mega-batch": 10}
			}
			if info.Async {
				// Stale updates at sync's rate make DOWNPOUR fail now and then
				// in real time (the GEM paper's point); half the rate is safe.
				cfg.LR /= 2
			}
			name := fmt.Sprintf("%s (%s)", info.Name, clock)
			r := start(t, cfg, nil, nil)
			evals := r.res.Evals
			if budget := int64(math.Ceil(cfg.Epochs * float64(r.w.Size()))); r.done < budget || r.res.Diverged {
				t.Errorf("%s: %d of %d samples processed (diverged: %v)", name, r.done, budget, r.res.Diverged)
			}
			// The divergence watch does not cry wolf over a run that learns.
			if r.res.Diverging || r.res.Untrained {
				t.Errorf("%s: a run that learns called diverging (%v) or untrained (%v)", name, r.res.Diverging, r.res.Untrained)
			}
			if len(evals) < 2 {
				t.Errorf("%s: %d evaluations in 2 epochs, want one per epoch", name, len(evals))
				continue
			}
			first, last := evals[0], evals[len(evals)-1]
			t.Logf("%s: P@1 %.3f, test loss %.3f (initial %.3f), train loss %.3f then %.3f", name, last.P1, last.Loss, initial.Loss, first.TrainLoss, last.TrainLoss)
			if !(last.P1 > 0.2) || !(last.Loss < initial.Loss) || !(last.TrainLoss < first.TrainLoss) {
				t.Errorf("%s after 2 epochs on 4 devices: P@1 %.3f (want > 0.2), test loss %.4f (initial model %.4f), training loss %.4f in the first epoch and %.4f in the last",
					name, last.P1, last.Loss, initial.Loss, first.TrainLoss, last.TrainLoss)
			}
		}
	}
}

func TestBudgetsAndErrors(t *testing.T) {
	cfg := base("elastic", 2, Virtual)
	cfg.Epochs = 0
	cfg.TimeBudget = 0.05
	r := start(t, cfg, nil, nil)
	if !(r.clk.now() >= 0.05) || r.clk.now() > 1 {
		t.Fatalf("time budget 0.05 s ended at %v", r.clk.now())
	}
	w := xml(t, 0)
	for _, c := range []struct {
		mutate func(*Config)
		msg    string
	}{
		{func(c *Config) { c.Speeds = []float64{1} }, "Config.Speeds has 1 values for 2 devices"},
		{func(c *Config) { c.Epochs, c.TimeBudget = 0, 0 }, "Config.Epochs or Config.TimeBudget"},
		{func(c *Config) { c.Clock = "sundial" }, "Config.Clock"},
		{func(c *Config) { c.Options = map[string]float64{"beta": 2} }, "option beta does not apply to elastic"},
		{func(c *Config) { c.Speeds = []float64{1, 0} }, "Config.Speeds 0: need a number in (0, 1e+06] (device 1)"},
		{func(c *Config) { c.Epochs = 1e18 }, "Config.Epochs 1e+18: need a number in [0, 1e+06]"},
		{func(c *Config) { c.EvalEvery = math.Inf(1) }, "Config.EvalEvery +Inf"},
		{func(c *Config) { c.Net.Intra.Latency = math.Inf(1) }, "Config.Net.Intra.Latency +Inf"},
		{func(c *Config) { c.Optimizer.WeightDecay = math.Inf(1) }, "Config.Optimizer.WeightDecay +Inf"},
		{func(c *Config) { c.Devices = 1 << 20 }, "Config.Devices 1048576"},
		{func(c *Config) { c.Options = map[string]float64{"k": 1e30} }, "elastic.k 1e+30: need a whole number"},

		{func(c *Config) { c.Strategy = "hogwild" }, "unknown strategy"},
	} {
		cfg := base("elastic", 2, Virtual)
		c.mutate(&cfg)
		if _, err := newRun(cfg, w, nil, nil); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("error %v, want %q", err, c.msg)
		}
	}
	// More than the process may use is refused before it is allocated,
	// with the figures: 64 devices with Adam keep 4 copies of the model
	// each.
	t.Setenv(memory.EnvLimit, "16M")
	cfg = base("elastic", 64, Virtual)
	cfg.Optimizer = optim.Config{Name: "adam"}
	_, err := newRun(cfg, w, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "this run (64 devices: 261 copies of the model's") || !strings.Contains(err.Error(), "more than the 16.0 MiB available ($HETSGD_MEMORY_LIMIT)") {
		t.Errorf("a run over the memory limit: %v", err)
	}
	cfg.Devices = 2
	if _, err := newRun(cfg, w, nil, nil); err != nil {
		t.Errorf("a run within the memory limit: %v", err)
	}
}

// The event loop does not allocate per batch, whatever the strategy: a run
// five times as long allocates about as much, setup and evaluations aside,
// and merge records (a strategy's log output: a few slices each) aside.
func TestVirtualLoopDoesNotAllocatePerBatch(t *testing.T) { testLoopAllocations(t, Virtual) }

func TestRealLoopDoesNotAllocatePerBatch(t *testing.T) { testLoopAllocations(t, Real) }

func testLoopAllocations(t *testing.T, clock Clock) {
	race.SkipAllocs(t)
	for _, devices := range []int{1, 4} {
		testLoopAllocationsOn(t, clock, devices)
	}
}

func testLoopAllocationsOn(t *testing.T, clock Clock, devices int) {
	const perMerge = 8
	for _, info := range strategy.List() {
		name := info.Name
		mallocs := func(epochs float64) (m uint64, batches, merges int64) {
			cfg := base(name, devices, clock)
			cfg.Epochs = epochs
			cfg.EvalEvery = 100
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			r := start(t, cfg, nil, nil)
			runtime.ReadMemStats(&after)
			return after.Mallocs - before.Mallocs, r.done / int64(cfg.Batch), int64(len(r.res.Merges))
		}
		// Five epochs against one: the real clock's runtime (timers,
		// goroutine wake-ups, the race detector's shadow) allocates a few
		// times now and then whatever the loop does, about 16 times a run,
		// which over two epochs' 305 batches came to the bound.
		m1, b1, g1 := mallocs(1)
		m3, b3, g3 := mallocs(5)
		extra := float64(int64(m3)-int64(m1)) - float64(perMerge*(g3-g1))
		per := extra / float64(b3-b1)
		t.Logf("%s on %d: %.3f allocations per batch beyond %d per merge record", name, devices, per, perMerge)
		if per > 0.05 {
			t.Errorf("%s on %d: %.2f allocations per batch (%d for %d batches and %d merges, %d for %d and %d)", name, devices, per, m1, b1, g1, m3, b3, g3)
		}
	}
}

// A device's step — batch draw, forward, backward, update — does not
// allocate, for every optimizer, with dropout on.
func TestDeviceStepDoesNotAllocate(t *testing.T) {
	race.SkipAllocs(t)
	for _, name := range optim.Names {
		cfg := base("elastic", 1, Real)
		cfg.Optimizer = optim.Config{Name: name}
		r, err := newRun(cfg, xml(t, 0.2), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := strategy.Action{Kind: strategy.Dispatch, Batch: 32, LR: 0.1}
		step := func() {
			w, _ := r.begin(&a)
			d := r.job.(execJob).x.local(0)
			r.job.(execJob).x.load(d, w)
			d.compute()
			r.finish(0)
		}
		step()
		if a := testing.AllocsPerRun(20, step); a != 0 {
			t.Errorf("%s: a device step allocates %v times", name, a)
		}
	}
}

// A cancelled context ends a real-time run promptly, with every device
// goroutine done with its replica.
func TestRealRunStopsWhenCancelled(t *testing.T) {
	cfg := base("adaptive", 3, Real)
	cfg.Epochs = 1000
	ctx, cancel := context.WithCancel(context.Background())
	obs := &cancelAfter{n: 20, cancel: cancel}
	res, err := Run(ctx, cfg, xml(t, 0), nil, obs)
	if err != context.Canceled {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if res.Samples < 20*32 || res.Samples > 40*32 {
		t.Fatalf("stopped after %d samples, want about 20 batches", res.Samples)
	}
}

type cancelAfter struct {
	n      int
	cancel func()
}

func (c *cancelAfter) Step(float64, int64, float64, float64) {
	if c.n--; c.n == 0 {
		c.cancel()
	}
}
func (c *cancelAfter) Eval(runlog.Eval) {}

// Training with the tool's defaults (Adam, dropout) learns Bibtex.
func TestDefaultsLearnBibtex(t *testing.T) {
	train, test := bibtex(t)
	cfg := base("sync", 1, Real)
	cfg.Batch, cfg.LR = 128, 1e-3
	cfg.Optimizer = optim.Config{Name: "adam"}
	cfg.Epochs, cfg.EvalEvery = 3, 1
	w, err := workload.NewXML(train, test, []int{64}, 0.2, 0, 256)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Evals) != 3 || res.Evals[2].P1 < 0.40 || !(res.Evals[2].Loss < res.Evals[0].Loss) {
		t.Fatalf("evaluations %+v", res.Evals)
	}
}

// The virtual clock handles many devices: 64 replicas of Adaptive SGD on
// Bibtex, deterministic, with merges recorded for every device.
func TestVirtualSixtyFourDevices(t *testing.T) {
	cfg := base("adaptive", 64, Virtual)
	cfg.Speeds = make([]float64, 64)
	for i := range cfg.Speeds {
		cfg.Speeds[i] = []float64{1, 0.9, 0.8, 0.68}[i%4]
	}
	cfg.Batch, cfg.Epochs = 8, 1
	cfg.Options = map[string]float64{"mega-batch": 128}
	r := start(t, cfg, nil, nil)
	if len(r.res.Merges) == 0 || len(r.res.Merges[0].BatchSizes) != 64 {
		t.Fatalf("%d merges", len(r.res.Merges))
	}
	if r.done < int64(r.w.Size()) {
		t.Fatalf("%d samples for one epoch of %d", r.done, r.w.Size())
	}
}

// Layered SGD computes exactly what sync computes (SPEC §3: test it), and on
// nodes linked by a slow network with data preparation to hide its
// inter-node all-reduce under, it takes less time.
func TestLSGDEqualsSync(t *testing.T) {
	net := comm.Model{GroupSize: 4, Intra: comm.DefaultNetwork, Inter: comm.Network{Latency: 20e-6, Bandwidth: 1e9}, AllReduce: comm.Tree}
	runs := map[string]*run{}
	for _, s := range []string{"sync", "lsgd"} {
		cfg := base(s, 16, Virtual)
		cfg.Batch, cfg.Net, cfg.Prep, cfg.Epochs = 8, net, 5e-5, 1
		runs[s] = start(t, cfg, nil, nil)
	}
	a, b := runs["sync"], runs["lsgd"]
	if a.res.Steps != b.res.Steps || a.res.Steps == 0 {
		t.Fatalf("steps: sync %d, lsgd %d", a.res.Steps, b.res.Steps)
	}
	for i := range a.job.(execJob).x.devs[0].p {
		if math.Abs(float64(a.job.(execJob).x.devs[0].p[i]-b.job.(execJob).x.devs[0].p[i])) > 1e-6 {
			t.Fatalf("parameter %d: sync %v, lsgd %v", i, a.job.(execJob).x.devs[0].p[i], b.job.(execJob).x.devs[0].p[i])
		}
	}
	if !(b.clk.now() < a.clk.now()) {
		t.Fatalf("lsgd took %v s, sync %v s", b.clk.now(), a.clk.now())
	}
}

// A parameter server with workers of unequal speed: commits carry the
// staleness that emerges (about n−1 on average for n busy workers), GEM's
// factors stay in [0, 5], and the centre stays finite.
func TestParameterServer(t *testing.T) {
	cfg := base("gem", 8, Virtual)
	cfg.Speeds = []float64{1, 0.9, 0.8, 0.68, 1, 0.9, 0.8, 0.68}
	cfg.LR, cfg.Epochs, cfg.EvalEvery = 0.05, 2, 0.5
	r := start(t, cfg, nil, nil)
	var commits, tau int64
	for s, c := range r.res.Taus {
		commits += c
		tau += int64(s) * c
	}
	if mean := float64(tau) / float64(commits); commits == 0 || mean < 4 || mean > 10 {
		t.Fatalf("%d commits, mean staleness %.2f; want about 7", commits, mean)
	}
	if len(r.res.Async) == 0 {
		t.Fatal("no async records")
	}
	for _, a := range r.res.Async {
		if a.MedianPi == nil || !(*a.MedianPi >= 0 && *a.MedianPi <= 5) {
			t.Fatalf("median π %v missing or outside [0, 5]", a.MedianPi)
		}
	}
	for _, v := range r.job.(execJob).x.center {
		if v != v || math.IsInf(float64(v), 0) {
			t.Fatal("the centre model is not finite")
		}
	}
}

// Timing only: 256 devices without a single replica in memory, and the
// time still comes from the cost and network models.
func TestTimingOnly(t *testing.T) {
	cfg := base("lsgd", 256, Virtual)
	cfg.Net = comm.Model{GroupSize: 4, Intra: comm.DefaultNetwork, Inter: comm.DefaultNetwork, AllReduce: comm.Ring}
	cfg.TimingOnly, cfg.Batch, cfg.Epochs = true, 4, 3
	r := start(t, cfg, nil, nil)
	if r.job.(execJob).x.devs[0].p != nil || r.job.(execJob).x.center != nil {
		t.Fatal("timing only allocated replicas")
	}
	if r.res.Steps == 0 || !(r.clk.now() > 0) || len(r.res.Evals) != 0 {
		t.Fatalf("steps %d, %v s, %d evaluations", r.res.Steps, r.clk.now(), len(r.res.Evals))
	}
}

// The AdaCons paper's linear regression: sync, AdaCons and AdaCons with
// its eq. 13 as printed, with either step rule, lower the exact loss from
// its starting point without falling back to averaging (eq. 13 ending
// elsewhere than the default); each rule's step is the minimum of its own
// objective along the direction.
func TestRegressionWorkload(t *testing.T) {
	for _, rule := range []string{workload.RuleDistance, workload.RuleLoss} {
		w := &workload.Regression{D: 50, Points: 1000, Rule: rule}
		p := make([]float32, 50)
		w.Init(p, 3)
		start0 := w.Evaluate(p).Loss
		var adacons [2]float64 // final loss: default, eq. 13
		for _, c := range []struct {
			s    string
			eq13 float64
		}{{"sync", -1}, {"adacons", 0}, {"adacons", 1}} {
			cfg := base(c.s, 4, Virtual)
			cfg.LineSearch, cfg.Batch, cfg.Epochs, cfg.EvalEvery = true, 16, 5, 1
			if c.eq13 >= 0 {
				cfg.Options = map[string]float64{"eq13": c.eq13}
			}
			res, err := Run(context.Background(), cfg, w, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			last := res.Evals[len(res.Evals)-1].Loss
			t.Logf("%s (eq13 %v), rule %s: loss %.4g from %.4g", c.s, c.eq13, rule, last, start0)
			if !(last < start0/100) || res.Notes != 0 {
				t.Fatalf("%s (eq13 %v), rule %s: loss %v from %v, %d fallbacks", c.s, c.eq13, rule, last, start0, res.Notes)
			}
			if c.eq13 >= 0 {
				adacons[int(c.eq13)] = last
			}
		}
		if adacons[0] == adacons[1] {
			t.Fatalf("rule %s: eq. 13 and the default end at the same loss %v", rule, adacons[0])
		}
	}
	if err := (&workload.Regression{Rule: "newton"}).CheckRule(); err == nil {
		t.Fatal("unknown rule accepted")
	}
	// The step is optimal for plain SGD only.
	cfg := base("sum", 2, Virtual)
	cfg.LineSearch, cfg.Optimizer = true, optim.Config{Name: "adam"}
	if _, err := Run(context.Background(), cfg, &workload.Regression{D: 10, Points: 100}, nil, nil); err == nil || !strings.Contains(err.Error(), "Config.Optimizer.Name sgd") {
		t.Fatalf("line search with adam: %v", err)
	}
	// Known answer: f(w) = wᵀAw/2 with A = I/12 + 11ᵀ/4; for w = 1 in 50
	// dimensions: (50/12 + 2500/4)/2.
	w := &workload.Regression{D: 50, Points: 1000}
	ones := make([]float32, 50)
	for i := range ones {
		ones[i] = 1
	}
	if got, want := w.Evaluate(ones).Loss, (50.0/12+2500.0/4)/2; math.Abs(got-want) > 1e-3 {
		t.Fatalf("f(1) = %v, want %v", got, want)
	}
	// Along a direction dir from p = 1: workload.RuleLoss minimises f, workload.RuleDistance
	// minimises ‖p − η·dir‖ (the optimum is 0).
	dir := make([]float32, 50)
	for i := range dir {
		dir[i] = float32(i%3) + 0.5
	}
	at := func(eta float64) []float32 {
		q := make([]float32, 50)
		for i := range q {
			q[i] = ones[i] - float32(eta)*dir[i]
		}
		return q
	}
	objective := map[string]func([]float32) float64{
		workload.RuleLoss:     func(q []float32) float64 { return w.Evaluate(q).Loss },
		workload.RuleDistance: func(q []float32) float64 { return kernel.Dot(q, q) },
	}
	for rule, f := range objective {
		w.Rule = rule
		eta := w.Step(ones, dir)
		for _, d := range []float64{-1e-3, 1e-3} {
			if f(at(eta+d)) < f(at(eta))-1e-9 {
				t.Fatalf("rule %s: η = %v is not the minimum along dir", rule, eta)
			}
		}
	}
	if eta := w.Step(ones, make([]float32, 50)); eta != 0 {
		t.Fatalf("step along 0 = %v", eta)
	}
}

// One workload serves runs of growing and shrinking batch sizes (the
// studies reuse it): each run on the reused workload is bit for bit the run
// on a fresh one — every replica, the centre, every evaluation — under the
// virtual clock, whose devices share the workload's scratch space, with
// dropout on, whose masks that scratch space draws. Adaptive SGD changes its
// batch sizes within a run and evaluates the centre.
func TestWorkloadReusedAcrossBatchSizes(t *testing.T) {
	w := xml(t, 0.2)
	for _, strat := range []string{"sync", "adaptive"} {
		for _, b := range []int{8, 64, 16} {
			cfg := base(strat, 2, Virtual)
			cfg.Batch, cfg.Epochs, cfg.EvalEvery = b, 0.1, 0.04
			cfg.Speeds = []float64{1, 0.7}
			if strat == "adaptive" {
				cfg.Options = map[string]float64{"mega-batch": 4}
			}
			reused := start(t, cfg, w, nil)
			fresh := start(t, cfg, xml(t, 0.2), nil)
			name := fmt.Sprintf("%s, batch %d", strat, b)
			if reused.done != fresh.done || len(reused.res.Evals) < 2 || !slices.Equal(reused.res.Evals, fresh.res.Evals) {
				t.Fatalf("%s: the reused workload gives %d samples and evaluations %+v, a fresh one %d and %+v",
					name, reused.done, reused.res.Evals, fresh.done, fresh.res.Evals)
			}
			models := func(r *run) [][]float32 {
				m := [][]float32{r.job.(execJob).x.center}
				for _, d := range r.job.(execJob).x.devs {
					m = append(m, d.p)
				}
				return m
			}
			for k, a := range models(reused) {
				f := models(fresh)[k]
				if len(a) != len(f) {
					t.Fatalf("%s: model %d has %d parameters reused, %d fresh", name, k, len(a), len(f))
				}
				for i := range a {
					if math.Float32bits(a[i]) != math.Float32bits(f[i]) {
						t.Fatalf("%s: model %d (0: the centre, then the replicas), parameter %d: %v on the reused workload, %v on a fresh one", name, k, i, a[i], f[i])
					}
				}
			}
		}
	}
}

// nanInit is a workload whose initial model holds a NaN in a weight no batch
// touches: the first-layer row of a feature absent from the data.
type nanInit struct {
	*workload.XML
	at int
}

func (w nanInit) Init(p []float32, seed uint64) {
	w.XML.Init(p, seed)
	p[w.at] = float32(math.NaN())
}

// A NaN the loss cannot see (the first layer is sparse) still ends the run,
// naming the strategy and where it was found: at the first merge of a
// model-averaging strategy, at the first evaluation of a synchronous one.
func TestNaNWeightsEndTheRun(t *testing.T) {
	var text strings.Builder
	text.WriteString("64 10 3\n")
	for i := range 64 {
		fmt.Fprintf(&text, "%d %d:1 %d:1\n", i%3, i%5, 5+i%3) // features 8 and 9 never appear
	}
	set, err := data.Read(strings.NewReader(text.String()), "tiny", data.XC)
	if err != nil {
		t.Fatal(err)
	}
	x, err := workload.NewXML(set, set, []int{4}, 0, 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	w := nanInit{x, 9 * 4} // feature 9's first weight
	for strat, where := range map[string]string{"elastic": "at a merge", "sync": "at an evaluation"} {
		cfg := base(strat, 2, Virtual)
		cfg.Batch, cfg.Epochs, cfg.EvalEvery = 4, 4, 1
		_, err := Run(context.Background(), cfg, w, nil, nil)
		if !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), strat+"'s model holds a NaN or infinite weight "+where) {
			t.Errorf("%s: %v", strat, err)
		}
	}
}

// slowEval is a workload whose evaluations take a while.
type slowEval struct{ *workload.XML }

func (s slowEval) Evaluate(p []float32) metric.Scores {
	time.Sleep(150 * time.Millisecond)
	return s.XML.Evaluate(p)
}

func (s slowEval) EvaluateContext(_ context.Context, p []float32) (metric.Scores, error) {
	return s.Evaluate(p), nil
}

// Under the real clock an evaluation is not training time: an eval record
// says when training stopped for it, not when scoring ended, so the last
// one is no later than the run's training time.
func TestRealEvalTimeExcludesTheEvaluation(t *testing.T) {
	cfg := base("sync", 1, Real)
	cfg.Epochs, cfg.EvalEvery = 0.5, 0.25
	res, err := Run(context.Background(), cfg, slowEval{xml(t, 0)}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Evals) < 2 {
		t.Fatalf("%d evaluations", len(res.Evals))
	}
	last := res.Evals[len(res.Evals)-1]
	if last.TrainSeconds > res.TrainSeconds {
		t.Fatalf("last evaluation at %v s, training %v s", last.TrainSeconds, res.TrainSeconds)
	}
}

// raceClocks are the clocks a test sweeps: both, but under the race
// detector only the real one, whose devices run in goroutines of their
// own; the virtual clock computes on one (the ordinary stage tests it).
func raceClocks() []Clock {
	if race.Enabled {
		return []Clock{Real}
	}
	return []Clock{Virtual, Real}
}

// raceSubset returns names, or under the race detector a few of them that
// stand for the rest (a strategy of each family), for the heaviest
// virtual-clock sweeps: the ordinary stage runs them all.
func raceSubset(names []string, few ...string) []string {
	if race.Enabled {
		return few
	}
	return names
}

// A run builds its strategy once: settings are validated without building
// it, and Prepare builds the one the run steps.
func TestRunBuildsItsStrategyOnce(t *testing.T) {
	w := xml(t, 0)
	for _, name := range []string{"sync", "adaptive", "diloco"} {
		cfg := base(name, 2, Virtual)
		cfg.Epochs = 0.1
		before := strategy.Builds()
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), cfg, w, nil, nil); err != nil {
			t.Fatal(err)
		}
		if n := strategy.Builds() - before; n != 1 {
			t.Errorf("%s: validating and running built the strategy %d times, want once", name, n)
		}
	}
}
