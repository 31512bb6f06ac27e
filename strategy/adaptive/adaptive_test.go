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
	a := newPaper(t, 3, map[string]float64{"delta": 0.2})
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
		if out[len(out)-1].Kind == strategy.Merge {
			out = a.Step(strategy.Event{Kind: strategy.CollectiveDone}, out)
		}
	}
	// Mega-batches of 2 batches: dispatch, dispatch, identity merge, ...
	merges := 0
	for i, act := range out {
		switch {
		case act.Kind == strategy.Dispatch && act.Batch == 64 && act.LR == 0.1:
		case act.Kind == strategy.Merge && len(act.Weights) == 1 && act.Weights[0] == 1 && act.Gamma == 0:
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
