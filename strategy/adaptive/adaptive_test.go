package adaptive

import (
	"math"
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
)

func newPaper(t *testing.T, n int, opts map[string]float64) *Adaptive {
	t.Helper()
	s, _, err := strategy.New("adaptive", strategy.Config{Devices: n, Batch: 64, LR: 0.1, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Adaptive)
}

// build is New through the registry, which resolves the defaults.
func build(cfg strategy.Config, code bool) (strategy.Strategy, error) {
	name := "adaptive"
	if code {
		name = "adaptive-code"
	}
	s, _, err := strategy.New(name, cfg)
	return s, err
}

// Alg. 1 with a fractional mean: u = [3 2 2], μ = 7/3, b = 64, β = 8
// (b_min = 16, b_max = 128):
//
//	device 0: 64 + 8·(2/3) = 69.33 → 69 ≤ 128, lr 0.1·69/64
//	devices 1, 2: 64 − 8·(1/3) = 61.33 → 61 ≥ 16, lr 0.1·61/64
func TestAlg1FractionalMean(t *testing.T) {
	a := newPaper(t, 3, map[string]float64{"bmax": 128, "bmin": 16})
	a.B = []int{64, 64, 64}
	a.U = []int{3, 2, 2}
	a.scale()
	if !slices.Equal(a.B, []int{69, 61, 61}) {
		t.Fatalf("batch sizes %v, want [69 61 61]", a.B)
	}
	for i, want := range []float64{0.1 * 69 / 64, 0.1 * 61 / 64, 0.1 * 61 / 64} {
		if math.Abs(a.LR[i]-want) > 1e-15 {
			t.Fatalf("lr %v, want device %d at %v", a.LR, i, want)
		}
	}
}

// Alg. 1's bounds: a step that would cross b_max or b_min is not taken at
// all (the paper's conditions), and a device at the mean never moves.
func TestAlg1Bounds(t *testing.T) {
	a := newPaper(t, 4, map[string]float64{"bmax": 128, "bmin": 16}) // β = 8
	a.B = []int{128, 120, 20, 50}
	a.U = []int{30, 28, 20, 22} // μ = 25
	a.scale()
	// device 0: 128+40 > 128 stays; device 1: 120+24 > 128 stays;
	// device 2: 20−40 < 16 stays; device 3: 50−24 = 26 ≥ 16 moves.
	if !slices.Equal(a.B, []int{128, 120, 20, 26}) {
		t.Fatalf("batch sizes %v, want [128 120 20 26]", a.B)
	}
	if a.LR[0] != 0.1 || a.LR[2] != 0.1 || math.Abs(a.LR[3]-0.1*26/50) > 1e-15 {
		t.Fatalf("learning rates %v", a.LR)
	}
	a.U = []int{5, 5, 5, 5}
	before := slices.Clone(a.B)
	a.scale()
	if !slices.Equal(a.B, before) {
		t.Fatalf("equal updates changed batch sizes: %v → %v", before, a.B)
	}
}

// Alg. 2 with equal updates weighs by batch size; with ties among the most
// updated the lowest device is perturbed; δ scales exactly.
func TestAlg2Weights(t *testing.T) {
	a := newPaper(t, 3, map[string]float64{"delta": 0.2, "renorm": 0})
	a.B = []int{10, 30, 60}
	a.U = []int{4, 4, 4}
	w, p := a.weights([]float64{0, 0, 0}, 1)
	if p || !slices.Equal(w, []float64{0.1, 0.3, 0.6}) {
		t.Fatalf("equal updates: weights %v perturbed %v, want [0.1 0.3 0.6] false", w, p)
	}
	a.U = []int{5, 5, 2} // Σ = 12; most updated: device 0 (tie with 1)
	w, p = a.weights([]float64{0, 0, 0}, 1)
	want := []float64{5.0 / 12 * 1.2, 5.0 / 12, 2.0 / 12 * 0.8}
	for i := range want {
		if math.Abs(w[i]-want[i]) > 1e-15 {
			t.Fatalf("weights %v, want %v", w, want)
		}
	}
	if !p {
		t.Fatal("perturbation did not fire")
	}
	// By default the perturbed weights are rescaled to sum to 1.
	a.renorm = true
	w, _ = a.weights([]float64{0, 0, 0}, 1)
	sum := want[0] + want[1] + want[2]
	for i := range want {
		if math.Abs(w[i]-want[i]/sum) > 1e-15 {
			t.Fatalf("renormalized weights %v, want %v/%v", w, want, sum)
		}
	}
	// The regularisation test is per parameter: ‖w‖/|w| = 25/100 ≥ 0.1.
	if _, p := a.weights([]float64{1, 25, 1}, 100); p {
		t.Fatal("perturbation fired with an unregularized replica")
	}
}

func TestOneDeviceNeverMerges(t *testing.T) {
	a := newPaper(t, 1, map[string]float64{"mega-batch": 2})
	var out []strategy.Action
	out = a.Step(strategy.Event{Kind: strategy.Start}, out)
	for i := 0; i < 10; i++ {
		out = a.Step(strategy.Event{Kind: strategy.BatchDone, Device: 0}, out)
		if out[len(out)-1].Op == strategy.MergeOp {
			out = a.Step(strategy.Event{Kind: strategy.CollectiveDone}, out)
		}
	}
	// Mega-batches of 2 batches: dispatch, dispatch, identity merge, ...
	merges := 0
	for i, act := range out {
		switch {
		case act.Kind == strategy.Dispatch && act.Batch == 64 && act.LR == 0.1:
		case act.Op == strategy.MergeOp && len(act.Weights) == 1 && act.Weights[0] == 1 && act.Params[0] == 0:
			merges++
		default:
			t.Fatalf("one device, action %d: %+v, want dispatches of 64 at 0.1 and identity merges", i, act)
		}
	}
	if merges != 5 {
		t.Fatalf("%d merges in 10 batches of mega-batches of 2, want 5", merges)
	}
}

func TestProtocolViolationPanics(t *testing.T) {
	a := newPaper(t, 2, nil)
	defer func() {
		if recover() == nil {
			t.Fatal("BatchDone from an idle device accepted")
		}
	}()
	a.Step(strategy.Event{Kind: strategy.BatchDone, Device: 1}, nil)
}

func TestOptionErrors(t *testing.T) {
	for _, opts := range []map[string]float64{
		{"bmin": 100, "bmax": 64}, {"bmax": 0}, {"delta": 1}, {"gamma": -0.1}, {"mega-batch": 0}, {"beta": -1},
	} {
		if _, err := build(strategy.Config{Devices: 2, Batch: 64, LR: 0.1, Options: opts}, false); err == nil {
			t.Errorf("%v accepted", opts)
		}
	}
	if _, err := build(strategy.Config{Devices: 2, Batch: 64, LR: 0.1}, true); err == nil {
		t.Error("adaptive-code without a dataset size accepted")
	}
}

// The initial batch may start below b_max, at the linearly scaled rate.
func TestInitialBatch(t *testing.T) {
	a := newPaper(t, 2, map[string]float64{"bmax": 128, "binit": 32})
	acts := a.Step(strategy.Event{Kind: strategy.Start}, nil)
	if acts[0].Batch != 32 || math.Abs(acts[0].LR-0.1*32/128) > 1e-15 {
		t.Fatalf("first dispatch %+v, want batch 32 at lr 0.025", acts[0])
	}
	if _, err := build(strategy.Config{Devices: 2, Batch: 64, LR: 0.1, Options: map[string]float64{"binit": 4}}, false); err == nil {
		t.Fatal("binit below b_min accepted")
	}
}

func steps(a *Adaptive, evs ...strategy.Event) []strategy.Action {
	var out []strategy.Action
	for _, ev := range evs {
		out = a.Step(ev, out[:0])
	}
	return out
}

func done(d int) strategy.Event  { return strategy.Event{Kind: strategy.BatchDone, Device: d} }
func leave(d int) strategy.Event { return strategy.Event{Kind: strategy.Leave, Device: d} }

// A device leaving as the last one working: its batch is lost, so the
// mega-batch (4 batches of 16) lacks 16 samples, which device 0, idle and
// waiting for the merge, takes. The merge then sees only the live devices:
// u = [2 1 · 1], α = [0.5 0.25 0 0.25], perturbed (device 2's NaN norm
// ignored) to [0.55 0.225 0 0.25].
func TestLeaveLastWorking(t *testing.T) {
	a := newPaper(t, 4, map[string]float64{"bmax": 16, "mega-batch": 4, "renorm": 0})
	if acts := steps(a, strategy.Event{Kind: strategy.Start}, done(0), done(1), done(3)); len(acts) != 0 {
		t.Fatalf("the mega-batch is dealt: %+v", acts)
	}
	acts := steps(a, leave(2))
	if len(acts) != 1 || acts[0].Kind != strategy.Dispatch || acts[0].Device != 0 || acts[0].Batch != 16 {
		t.Fatalf("device 2 left with its batch: %+v, want device 0 to take 16 samples", acts)
	}
	for _, d := range []int{2, -1, 4} {
		if acts := steps(a, leave(d)); len(acts) != 0 {
			t.Fatalf("Leave %d answered %+v, want nothing", d, acts)
		}
	}
	if acts := steps(a, done(0)); len(acts) != 1 || acts[0].Op != NormsOp {
		t.Fatalf("the mega-batch is done: %+v, want the norms query", acts)
	}
	acts = steps(a, strategy.Event{Kind: strategy.Answer, Values: []float64{1, 1, math.NaN(), 1}, Dim: 100})
	want := []float64{0.55, 0.225, 0, 0.25}
	if len(acts) != 1 || acts[0].Op != strategy.MergeOp || acts[0].Record == nil || !acts[0].Record.Perturbed {
		t.Fatalf("norms answered with %+v, want a perturbed merge", acts)
	}
	for i := range want {
		if math.Abs(acts[0].Weights[i]-want[i]) > 1e-15 {
			t.Fatalf("merge weights %v, want %v", acts[0].Weights, want)
		}
	}
	if r := acts[0].Record; !slices.Equal(r.Updates, []int{2, 1, 0, 1}) || !slices.Equal(r.BatchSizes, []int{16, 16, 0, 16}) || r.LRs[2] != 0 {
		t.Fatalf("merge record %+v", *r)
	}
	acts = steps(a, strategy.Event{Kind: strategy.CollectiveDone})
	if len(acts) != 3 || acts[0].Device != 0 || acts[1].Device != 1 || acts[2].Device != 3 {
		t.Fatalf("the next mega-batch dispatches %+v, want devices 0, 1, 3", acts)
	}
}

// A device leaving while the others work: the mega-batch goes on without
// it and ends when the live devices are idle, with weights over them.
func TestLeaveWhileBusy(t *testing.T) {
	for _, code := range []bool{false, true} {
		s, err := build(strategy.Config{Devices: 3, Batch: 16, LR: 0.1, DatasetSize: 1000,
			Options: map[string]float64{"mega-batch": 4}}, code)
		if err != nil {
			t.Fatal(err)
		}
		a := s.(*Adaptive)
		// 3 batches, then device 0's second: the 64 samples are dealt.
		steps(a, strategy.Event{Kind: strategy.Start}, done(0))
		// Device 1's batch is lost: 16 samples to deal again, which device
		// 0, the next one free, takes.
		if acts := steps(a, leave(1)); len(acts) != 0 {
			t.Fatalf("code %v: device 1 left while the others work: %+v", code, acts)
		}
		if acts := steps(a, done(0)); len(acts) != 1 || acts[0].Device != 0 {
			t.Fatalf("code %v: device 0 done: %+v, want its third batch", code, acts)
		}
		if acts := steps(a, done(2), done(0)); len(acts) != 1 || acts[0].Op != NormsOp {
			t.Fatalf("code %v: the live devices are idle: %+v, want the norms query", code, acts)
		}
		acts := steps(a, strategy.Event{Kind: strategy.Answer, Values: []float64{1, math.NaN(), 1}, Dim: 100})
		if len(acts) != 1 || acts[0].Op != strategy.MergeOp || acts[0].Weights[1] != 0 || math.Abs(acts[0].Weights[0]+acts[0].Weights[2]-1) > 0.1+1e-12 {
			t.Fatalf("code %v: merge %+v, want weight 0 for device 1", code, acts)
		}
	}
}

// Down to one device, Adaptive SGD is mini-batch SGD, as on one device: the
// mega-batch ends with the centre taking the survivor's replica, without
// norms or momentum.
func TestLeaveDownToOne(t *testing.T) {
	a := newPaper(t, 2, map[string]float64{"bmax": 16, "mega-batch": 2})
	acts := steps(a, strategy.Event{Kind: strategy.Start}, done(1), leave(0))
	if len(acts) != 1 || acts[0].Kind != strategy.Dispatch || acts[0].Device != 1 {
		t.Fatalf("device 0 left with its batch: %+v, want device 1 to take its samples", acts)
	}
	acts = steps(a, done(1))
	if len(acts) != 1 || acts[0].Op != strategy.MergeOp || !slices.Equal(acts[0].Weights, []float64{0, 1}) || acts[0].Params[0] != 0 {
		t.Fatalf("one device left: %+v, want the centre to take replica 1", acts)
	}
	if r := acts[0].Record; r == nil || !slices.Equal(r.Updates, []int{0, 2}) {
		t.Fatalf("merge record %+v", r)
	}
}

// Alg. 1 and the code variant's steps see only the live devices: with
// device 2 gone and u = [3 1 ·], μ = 2 (not 4/3), and device 2's batch
// stays as it is.
func TestLeaveScaling(t *testing.T) {
	a := newPaper(t, 3, map[string]float64{"bmax": 128, "bmin": 16}) // β = 8
	steps(a, strategy.Event{Kind: strategy.Start}, leave(2))
	a.B = []int{64, 64, 64}
	a.U = []int{3, 1, 0}
	a.scale()
	if !slices.Equal(a.B, []int{72, 56, 64}) {
		t.Fatalf("Alg. 1: batch sizes %v, want [72 56 64]", a.B)
	}
	s, err := build(strategy.Config{Devices: 3, Batch: 128, LR: 0.1, DatasetSize: 1000, Options: map[string]float64{"warmup": 0}}, true)
	if err != nil {
		t.Fatal(err)
	}
	c := s.(*Adaptive)
	steps(c, strategy.Event{Kind: strategy.Start}, leave(2))
	c.B = []int{64, 64, 64}
	c.U = []int{1, 1, 0} // shares 1/2 each: even over the live devices
	c.scale()
	if !slices.Equal(c.B, []int{64, 64, 64}) {
		t.Fatalf("code variant: batch sizes %v, want [64 64 64]", c.B)
	}
}
