package engine

// Fidelity to the papers: CROSSBOW's order of the gradient step and the
// correction, and AdaCons's eq. 13 as printed, against hand-computed values
// and deliberately plain reference loops.

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/workload"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/comm/commtest"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/strategy/adacons"
	"github.com/hetsgd/hetsgd/strategy/adaptive"
	_ "github.com/hetsgd/hetsgd/strategy/all"
)

// fidConfig is a small virtual-clock run of strategy s with plain SGD.
func fidConfig(s string, devices int, opts map[string]float64) Config {
	c := base(s, devices, Virtual)
	c.Batch, c.LR, c.Epochs, c.Options = 8, 0.01, 1, opts
	return c
}

func fidRun(t testing.TB, cfg Config, w Workload) *run {
	t.Helper()
	r, err := newRun(cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.drive(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.job.(execJob).x.close()
	return r
}

// fidExecutor is an in-process executor over the given replicas and
// gradients, with the buffers the collectives and queries use.
func fidExecutor(center []float32, opt optim.Optimizer, ps, gs [][]float32) *executor {
	n := len(ps)
	x := &executor{world: comm.Self(), n: n, part: make([]float64, n), partSecond: make([]float64, n),
		values: make([]float64, n), valuesTwo: make([]float64, n), pairs: make([]float64, 2*n), pairsAll: make([]float64, 2*n),
		center: center, prev: make([]float32, len(center)), scratch: make([]float32, len(center)), members: newMembership(n)}
	for i := range ps {
		x.devs = append(x.devs, &device{id: i, p: ps[i], g: gs[i], opt: opt})
	}
	return x
}

func vec(v ...float32) []float32 { return v }

// CROSSBOW's step in both orders, by hand: a = 0.5, μ = 0.9, lr = 0.5,
// z = (1,1), D_prev = (1,0); w_0 = (1,2) with g_0 = (2,0), w_1 = (3,5) with
// g_1 = (0,2), plain SGD.
//
// The paper's order (the default), d_j and g_j both from w_j:
//
//	d_0 = (0,1), d_1 = (2,4)
//	w_0 = (1,2) − 0.5·(2,0) − 0.5·(0,1) = (0, 1.5)
//	w_1 = (3,5) − 0.5·(0,2) − 0.5·(2,4) = (2, 2)
//	D = 0.9·(1,0) + 0.5·((0,1) + (2,4)) = (1.9, 2.5);  z = (2.9, 3.5)
//
// --correct-after 1, the local step first: w_0 = (0,2), w_1 = (3,4), then
//
//	d_0 = (−1,1), d_1 = (2,3)
//	w_0 = (0,2) − 0.5·(−1,1) = (0.5, 1.5);  w_1 = (3,4) − 0.5·(2,3) = (2, 2.5)
//	D = 0.9·(1,0) + 0.5·((−1,1) + (2,3)) = (1.4, 2);  z = (2.4, 3)
//
// With weight decay 0.1 the paper's step decays the iterate the gradient
// came from: w_0 = (1,2) − 0.5·((2,0) + 0.1·(1,2)) − 0.5·(0,1) = (−0.05, 1.4).
func TestCrossbowOrdersKnownAnswers(t *testing.T) {
	check := func(what string, x *executor, z, d, w0, w1 []float32) {
		t.Helper()
		if !near(x.center, z) || !near(x.cstate, d) || !near(x.devs[0].p, w0) || !near(x.devs[1].p, w1) {
			t.Fatalf("%s: z %v D %v replicas %v %v, want %v %v %v %v", what, x.center, x.cstate, x.devs[0].p, x.devs[1].p, z, d, w0, w1)
		}
	}
	setup := func(opt optim.Optimizer) *executor {
		x := fidExecutor(vec(1, 1), opt, [][]float32{vec(1, 2), vec(3, 5)}, [][]float32{vec(2, 0), vec(0, 2)})
		x.cstate = vec(1, 0)
		return x
	}

	// The paper's order: the gradient, computed in Gradient mode, is applied
	// by the synchronisation.
	x := setup(&optim.SGD{})
	if err := x.collective(syncCmd(0.5, 0.9, 0.5, true)); err != nil {
		t.Fatal(err)
	}
	check("paper's order", x, vec(2.9, 3.5), vec(1.9, 2.5), vec(0, 1.5), vec(2, 2))

	// The order before: a local step (what LocalStep mode does), then the
	// correction alone.
	x = setup(&optim.SGD{})
	for _, d := range x.devs {
		d.opt.Step(d.p, d.g, 0.5)
	}
	if err := x.collective(syncCmd(0.5, 0.9, 0, false)); err != nil {
		t.Fatal(err)
	}
	check("--correct-after 1", x, vec(2.4, 3), vec(1.4, 2), vec(0.5, 1.5), vec(2, 2.5))

	x = setup(&optim.SGD{WeightDecay: 0.1})
	if err := x.collective(syncCmd(0.5, 0.9, 0.5, true)); err != nil {
		t.Fatal(err)
	}
	if !near(x.devs[0].p, vec(-0.05, 1.4)) {
		t.Fatalf("paper's order with weight decay: w_0 = %v, want (−0.05, 1.4)", x.devs[0].p)
	}

	// The flag crosses ranks in the command.
	c := *syncCmd(0.5, 0.9, 0.5, true)
	var back command
	if err := back.decode(c.encode(make([]byte, cmdSize(2, 1)))); err != nil {
		t.Fatal(err)
	}
	if back.params[2] != 1 || back.layered || back.lr != 0.5 || back.params[0] != 0.5 || back.params[1] != 0.9 || back.op != c.op {
		t.Fatalf("center-sync command after encoding: %+v", back)
	}
	c = command{kind: cmdAllReduce, layered: true}
	if err := back.decode(c.encode(make([]byte, cmdSize(2, 1)))); err != nil || back.params[2] != 0 || back.op != "" || !back.layered {
		t.Fatalf("layered all-reduce after encoding: %+v, %v", back, err)
	}
}

// crossbowReference is CROSSBOW on the regression workload as a plain loop,
// with the engine's seeds: every device draws its batches from its own
// stream, τ steps a round, the τ-th combined with the correction (after:
// the τ-th a local step, the correction measured after it).
func crossbowReference(w *workload.Regression, cfg Config, tau, rounds int, after bool) (z []float32, ps [][]float32) {
	n, dim := cfg.Devices, w.D
	a, mu, lr := 1/float64(n), 0.9, float32(cfg.LR)
	init := make([]float32, dim)
	w.Init(init, initSeed(cfg.Seed))
	z = append([]float32(nil), init...)
	dprev := make([]float64, dim)
	workers := make([]Worker, n)
	gs := make([][]float32, n)
	for j := range n {
		workers[j], _ = w.NewWorker(cfg.Batch, dropoutSeed(cfg.Seed, j), false)
		ps = append(ps, append([]float32(nil), init...))
		gs[j] = make([]float32, dim)
	}
	for range rounds {
		for k := range tau {
			for j := range n {
				workers[j].Load(nil, cfg.Batch)
				workers[j].Gradient(ps[j], gs[j])
				if k < tau-1 || after {
					for i := range ps[j] {
						ps[j][i] -= lr * gs[j][i]
					}
				}
			}
		}
		D := make([]float64, dim)
		for j := range n {
			for i := range ps[j] {
				d := float64(ps[j][i]) - float64(z[i])
				D[i] += a * d
				if !after {
					ps[j][i] -= lr * gs[j][i]
				}
				ps[j][i] -= float32(a * d)
			}
		}
		for i := range z {
			dprev[i] = D[i] + mu*dprev[i]
			z[i] += float32(dprev[i])
		}
	}
	return z, ps
}

// The engine's CROSSBOW is the reference loop, in both orders, with τ = 1
// and 2, under both clocks: the centre and every replica to float rounding.
func TestCrossbowMatchesReference(t *testing.T) {
	w := &workload.Regression{D: 20, Points: 480}
	for _, tau := range []int{1, 2} {
		for _, after := range []bool{false, true} {
			for _, clock := range []Clock{Virtual, Real} {
				opts := map[string]float64{"tau": float64(tau)}
				if after {
					opts["correct-after"] = 1
				}
				cfg := fidConfig("crossbow", 3, opts)
				cfg.Clock = clock
				r := fidRun(t, cfg, w)
				rounds := int(r.done) / (3 * 8 * tau) // 480 samples: whole rounds
				z, ps := crossbowReference(w, cfg, tau, rounds, after)
				if d := testdata.MaxRelDiff(r.job.(execJob).x.center, z); d > 1e-5 {
					t.Errorf("τ %d, correct-after %v, %s clock: centre differs from the reference by %.2g after %d rounds", tau, after, clock, d, rounds)
				}
				for j, dev := range r.job.(execJob).x.devs {
					if d := testdata.MaxRelDiff(dev.p, ps[j]); d > 1e-5 {
						t.Errorf("τ %d, correct-after %v, %s clock: replica %d differs from the reference by %.2g", tau, after, clock, j, d)
					}
				}
			}
		}
	}
	// The two orders are different algorithms.
	a := fidRun(t, fidConfig("crossbow", 3, nil), w)
	b := fidRun(t, fidConfig("crossbow", 3, map[string]float64{"correct-after": 1}), w)
	if testdata.MaxRelDiff(a.job.(execJob).x.center, b.job.(execJob).x.center) < 1e-3 {
		t.Fatalf("the two orders end at the same centre")
	}
}

// The consensus query's coefficients and norms, by hand: g = (4,0), (0,2),
// (3,4); ḡ = (7/3, 2); c = ⟨g_i, ḡ⟩/‖g_i‖² = [7/12 1 3/5], ‖g‖ = [4 2 5].
// Then equal gradients g = (3,4) on three devices from p = (1,1), SGD at
// lr 1: the default's weights [1/3 1/3 1/3] average, p − g = (−2, −3); eq. 13
// gives [1/15 1/15 1/15], the unit vector, p − g/5 = (0.4, 0.2).
func TestConsensusNormsAndEq13KnownAnswers(t *testing.T) {
	x := fidExecutor(vec(0, 0), &optim.SGD{}, [][]float32{vec(0, 0), vec(0, 0), vec(0, 0)}, [][]float32{vec(4, 0), vec(0, 2), vec(3, 4)})
	c, norms, err := x.query(&command{kind: cmdQuery, op: adacons.ConsensusOp})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{7.0 / 12, 1, 3.0 / 5} {
		if math.Abs(c[i]-want) > 1e-6 || math.Abs(norms[i]-[]float64{4, 2, 5}[i]) > 1e-6 {
			t.Fatalf("consensus: coefficients %v norms %v, want [7/12 1 3/5] [4 2 5]", c, norms)
		}
	}

	for _, k := range []struct {
		eq13    float64
		weight  float64
		p0, p1  float32
		meaning string
	}{{0, 1.0 / 3, -2, -3, "plain averaging"}, {1, 1.0 / 15, 0.4, 0.2, "the unit gradient"}} {
		s, _, err := strategy.New("adacons", strategy.Config{Devices: 3, Batch: 8, LR: 1, Options: map[string]float64{"eq13": k.eq13}})
		if err != nil {
			t.Fatal(err)
		}
		g := vec(3, 4)
		x := fidExecutor(vec(0, 0), &optim.SGD{}, [][]float32{vec(1, 1), vec(1, 1), vec(1, 1)}, [][]float32{g, g, g})
		c, norms, err := x.query(&command{kind: cmdQuery, op: adacons.ConsensusOp})
		if err != nil {
			t.Fatal(err)
		}
		acts := s.Step(strategy.Event{Kind: strategy.Answer, Values: c, Second: norms}, nil)
		for _, w := range acts[0].Weights {
			if math.Abs(w-k.weight) > 1e-9 {
				t.Fatalf("eq13 %v, equal gradients: weights %v, want %v (%s)", k.eq13, acts[0].Weights, k.weight, k.meaning)
			}
		}
		if err := x.allReduce(1, acts[0].Weights, false, nil); err != nil {
			t.Fatal(err)
		}
		for _, d := range x.devs {
			if !near(d.p, vec(k.p0, k.p1)) {
				t.Fatalf("eq13 %v, equal gradients: replica %v, want (%v, %v) (%s)", k.eq13, d.p, k.p0, k.p1, k.meaning)
			}
		}
	}
}

// Across ranks the gradients' norms are gathered with the coefficients, and
// the combined CROSSBOW step carries its rate: eq. 13 and both CROSSBOW
// orders give on 2 ranks × 2 devices what they give in one process. (τ = 1:
// with τ > 1 the real clock deals the shared stream's batches in the order
// the devices finish.)
func TestFidelityOptionsAcrossRanks(t *testing.T) {
	w := xml(t, 0)
	for _, c := range []struct {
		strategy string
		opts     map[string]float64
	}{
		{"adacons", map[string]float64{"eq13": 1}},
		{"crossbow", nil},
		{"crossbow", map[string]float64{"correct-after": 1}},
	} {
		cfg := fidConfig(c.strategy, 4, c.opts)
		cfg.Clock, cfg.LR, cfg.Epochs, cfg.EvalEvery = Real, 0.5, 0.3, 0.15
		want, err := Run(context.Background(), cfg, w, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got *Result
		errs := commtest.OnMem(2, func(cm comm.Comm) error {
			cfg := cfg
			cfg.World = cm
			res, err := Run(context.Background(), cfg, w, nil, nil)
			if cm.Rank() == 0 {
				got = res
			}
			return err
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("%s %v, rank %d: %v", c.strategy, c.opts, r, err)
			}
		}
		if d := testdata.MaxRelDiff(got.Model, want.Model); d > 1e-4 || got.Samples != want.Samples {
			t.Errorf("%s %v on 2 ranks: difference %g to one process, samples %d/%d", c.strategy, c.opts, d, got.Samples, want.Samples)
		}
	}
}

// The options keep the training loop free of allocations.
func TestFidelityOptionsDoNotAllocatePerBatch(t *testing.T) {
	race.SkipAllocs(t)
	w := xml(t, 0)
	for _, c := range []struct {
		strategy string
		opts     map[string]float64
	}{
		{"adacons", map[string]float64{"eq13": 1}},
		{"crossbow", map[string]float64{"tau": 2}},
		{"crossbow", map[string]float64{"correct-after": 1}},
	} {
		mallocs := func(epochs float64) (uint64, int64) {
			cfg := fidConfig(c.strategy, 4, c.opts)
			cfg.Batch, cfg.LR, cfg.Epochs, cfg.EvalEvery = 32, 0.5, epochs, 100
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			r := fidRun(t, cfg, w)
			runtime.ReadMemStats(&after)
			return after.Mallocs - before.Mallocs, r.done / 32
		}
		m1, b1 := mallocs(1)
		m3, b3 := mallocs(3)
		if per := (float64(m3) - float64(m1)) / float64(b3-b1); per > 0.05 {
			t.Errorf("%s %v: %.2f allocations per batch", c.strategy, c.opts, per)
		}
	}
}

// The norms query, by hand: w̄ = (2,1), w̄_prev = (1,1), so the momentum is
// m = (1,0); w_0 = (4,0): ‖w_0‖ = 4, ⟨w_0 − w̄, m⟩ = 2; w_1 = (0,3):
// ‖w_1‖ = 3, ⟨w_1 − w̄, m⟩ = −2; device 2 left: NaN for both.
func TestNormsAlongTheMomentumKnownAnswers(t *testing.T) {
	x := fidExecutor(vec(2, 1), nil, [][]float32{vec(4, 0), vec(0, 3), vec(9, 9)}, [][]float32{nil, nil, nil})
	copy(x.prev, vec(1, 1))
	x.members.leave(2)
	norms, along, err := x.query(&command{kind: cmdQuery, op: adaptive.NormsOp})
	if err != nil {
		t.Fatal(err)
	}
	if norms[0] != 4 || norms[1] != 3 || along[0] != 2 || along[1] != -2 || !math.IsNaN(norms[2]) || !math.IsNaN(along[2]) {
		t.Errorf("norms %v, along %v; want [4 3 NaN], [2 −2 NaN]", norms, along)
	}
	if x.center[0] != 2 || x.center[1] != 1 || x.prev[0] != 1 || x.prev[1] != 1 {
		t.Errorf("the query changed the centre %v or the previous one %v", x.center, x.prev)
	}
}
