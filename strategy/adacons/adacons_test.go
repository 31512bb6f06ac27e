package adacons_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/strategy/adacons"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/adacons.txt") }

// aggregate runs one AdaCons step of s on the gradients gs, its Consensus
// event computed from them as the engine does (a plain reference), and
// returns the aggregate ψ = Σ γ_i g_i the strategy's all-reduce asks for.
func aggregate(t *testing.T, s strategy.Strategy, gs [][]float64) []float64 {
	t.Helper()
	n, dim := len(gs), len(gs[0])
	mean := make([]float64, dim)
	for _, g := range gs {
		for j, v := range g {
			mean[j] += v / float64(n)
		}
	}
	ev := strategy.Event{Kind: strategy.Answer, Values: make([]float64, n), Second: make([]float64, n)}
	for i, g := range gs {
		var dot, sq float64
		for j, v := range g {
			dot += v * mean[j]
			sq += v * v
		}
		ev.Values[i], ev.Second[i] = dot/sq, math.Sqrt(sq)
	}
	acts := s.Step(ev, nil)
	if len(acts) != 1 || acts[0].Kind != strategy.AllReduce {
		t.Fatalf("consensus answered with %v", acts)
	}
	psi := make([]float64, dim)
	for i, g := range gs {
		for j, v := range g {
			psi[j] += acts[0].Weights[i] * v
		}
	}
	// The next step: dispatches, then every device done.
	s.Step(strategy.Event{Kind: strategy.CollectiveDone}, nil)
	for d := range n {
		s.Step(strategy.Event{Kind: strategy.BatchDone, Device: d}, nil)
	}
	return psi
}

func newAdaCons(t *testing.T, n int, opts map[string]float64) strategy.Strategy {
	t.Helper()
	s, _, err := strategy.New("adacons", strategy.Config{Devices: n, Batch: 8, LR: 0.1, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	s.Step(strategy.Event{Kind: strategy.Start}, nil)
	for d := range n {
		s.Step(strategy.Event{Kind: strategy.BatchDone, Device: d}, nil)
	}
	return s
}

func near(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12*max(1, math.Abs(want[i])) {
			t.Fatalf("%s: ψ = %v, want %v", what, got, want)
		}
	}
}

// With equal gradients the default is plain averaging, ψ = g, at every step
// (the momentum only ever sees coefficients of 1), whatever g's scale; eq. 13
// as printed gives the unit vector g/‖g‖ instead.
func TestEqualGradientsAverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{2, 3, 5} {
		def, eq13 := newAdaCons(t, n, nil), newAdaCons(t, n, map[string]float64{"eq13": 1})
		for range 4 {
			g := make([]float64, 7)
			var sq float64
			for j := range g {
				g[j] = 100 * rng.NormFloat64()
				sq += g[j] * g[j]
			}
			gs := make([][]float64, n)
			unit := make([]float64, len(g))
			for i := range gs {
				gs[i] = g
			}
			for j := range g {
				unit[j] = g[j] / math.Sqrt(sq)
			}
			near(t, "default, equal gradients", aggregate(t, def, gs), g)
			near(t, "eq. 13, equal gradients", aggregate(t, eq13, gs), unit)
		}
	}
}

// Eq. 13 on three gradients, by hand, over two steps with β = 0.5.
//
// Step 1: g = (4,0), (0,2), (3,4); ḡ = (7/3, 2); a_i = ⟨g_i, ḡ⟩/‖g_i‖ =
// [7/3 2 3], λ = 3/22, ψ = λ·Σ a_i·g_i/‖g_i‖ = (3/22)·(62/15, 22/5) =
// (31/55, 3/5).
//
// Step 2: g = (8,0), (0,2), (3,4); ḡ = (11/3, 2); a = [11/3 2 19/5], sorted
// [2 11/3 19/5] with the momentum's [2 7/3 3]: m = [2 3 17/5], λ = 5/42;
// device 0 (rank 1) gets 3, device 1 gets 2, device 2 gets 17/5:
// ψ = (5/42)·(3·(1,0) + 2·(0,1) + (17/5)·(3/5, 4/5)) = (3/5, 59/105).
//
// The default on step 1 for comparison: c = [7/12 1 3/5] summing to 131/60,
// ψ = (60/131)·((7/3, 0) + (0, 2) + (9/5, 12/5)) = (248/131, 264/131), the
// same direction as eq. 13's, 3.4 times longer.
func TestEq13ByHand(t *testing.T) {
	s := newAdaCons(t, 3, map[string]float64{"eq13": 1, "beta": 0.5})
	near(t, "eq. 13, step 1", aggregate(t, s, [][]float64{{4, 0}, {0, 2}, {3, 4}}), []float64{31.0 / 55, 3.0 / 5})
	near(t, "eq. 13, step 2", aggregate(t, s, [][]float64{{8, 0}, {0, 2}, {3, 4}}), []float64{3.0 / 5, 59.0 / 105})

	def := newAdaCons(t, 3, map[string]float64{"beta": 0.5})
	near(t, "default, step 1", aggregate(t, def, [][]float64{{4, 0}, {0, 2}, {3, 4}}), []float64{248.0 / 131, 264.0 / 131})

	// Two gradients, no momentum to speak of: g = (1,0), (0,3); ḡ = (1/2, 3/2);
	// a = [1/2 3/2], λ = 1/2: ψ = (1/4)(1,0) + (3/4)(0,1) = (1/4, 3/4).
	two := newAdaCons(t, 2, map[string]float64{"eq13": 1})
	near(t, "eq. 13, two gradients", aggregate(t, two, [][]float64{{1, 0}, {0, 3}}), []float64{0.25, 0.75})
}

func TestOptionErrors(t *testing.T) {
	for _, v := range []float64{0.5, 2, -1} {
		_, _, err := strategy.New("adacons", strategy.Config{Devices: 2, Batch: 8, LR: 0.1, Options: map[string]float64{"eq13": v}})
		if err == nil || !strings.Contains(err.Error(), "adacons.eq13") {
			t.Errorf("--eq13 %v: error %v", v, err)
		}
	}
}

func weightsNear(t *testing.T, what string, acts []strategy.Action, want []float64) {
	t.Helper()
	if len(acts) != 1 || acts[0].Kind != strategy.AllReduce {
		t.Fatalf("%s: %+v, want one all-reduce", what, acts)
	}
	for i := range want {
		if got := acts[0].Weights[i]; math.Abs(got-want[i]) > 1e-12 {
			t.Fatalf("%s: weights %v, want %v", what, acts[0].Weights, want)
		}
	}
}

// A device that leaves is waited for no more; its coefficient comes as NaN
// and gets weight 0, the others' weights are their coefficients normalized
// over the live devices, and the momentum of the sorted coefficients starts
// again from the first step after the leave.
func TestLeave(t *testing.T) {
	nan := math.NaN()
	s, _, err := strategy.New("adacons", strategy.Config{Devices: 4, Batch: 8, LR: 0.1, Options: map[string]float64{"beta": 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	step := func(ev strategy.Event) []strategy.Action { return s.Step(ev, nil) }
	done := func(ds ...int) (acts []strategy.Action) {
		for _, d := range ds {
			acts = step(strategy.Event{Kind: strategy.BatchDone, Device: d})
		}
		return acts
	}
	// Step 1, every device: c = [1 2 3 4], weights c/10.
	step(strategy.Event{Kind: strategy.Start})
	done(0, 1, 2, 3)
	weightsNear(t, "four devices", step(strategy.Event{Kind: strategy.Answer, Values: []float64{1, 2, 3, 4}}), []float64{0.1, 0.2, 0.3, 0.4})
	// Step 2: device 2, the last one pending, leaves: the query comes at once.
	if acts := step(strategy.Event{Kind: strategy.CollectiveDone}); len(acts) != 4 {
		t.Fatalf("step 2 dispatches %+v", acts)
	}
	if acts := done(3, 0, 1); len(acts) != 0 {
		t.Fatalf("three of four done: %+v", acts)
	}
	acts := step(strategy.Event{Kind: strategy.Leave, Device: 2})
	if len(acts) != 1 || acts[0].Op != adacons.ConsensusOp {
		t.Fatalf("the last pending device left: %+v, want the consensus query", acts)
	}
	for _, d := range []int{2, 4, -1} {
		if acts := step(strategy.Event{Kind: strategy.Leave, Device: d}); len(acts) != 0 {
			t.Fatalf("Leave %d answered %+v, want nothing", d, acts)
		}
	}
	// The momentum starts again: c = [1 3 nan 2] gives [1 3 0 2]/6.
	weightsNear(t, "device 2 gone", step(strategy.Event{Kind: strategy.Answer, Values: []float64{1, 3, nan, 2}}), []float64{1.0 / 6, 0.5, 0, 1.0 / 3})
	// Step 3: devices 0, 1, 3 only. Sorted c = [2 3 5] with the momentum's
	// [1 2 3]: m = [1.5 2.5 4], device 0 (rank 0) 1.5, device 3 (rank 1)
	// 2.5, device 1 (rank 2) 4, over 8.
	acts = step(strategy.Event{Kind: strategy.CollectiveDone})
	if len(acts) != 3 || acts[0].Device != 0 || acts[1].Device != 1 || acts[2].Device != 3 {
		t.Fatalf("step 3 dispatches %+v, want devices 0, 1, 3", acts)
	}
	if acts := done(1, 3, 0); len(acts) != 1 || acts[0].Op != adacons.ConsensusOp {
		t.Fatalf("the live devices done: %+v", acts)
	}
	weightsNear(t, "step 3", step(strategy.Event{Kind: strategy.Answer, Values: []float64{2, 5, nan, 3}}), []float64{1.5 / 8, 4.0 / 8, 0, 2.5 / 8})
}

// Eq. 13 with a device gone: its NaN norm and coefficient give weight 0.
// Devices 0 and 2: g = (1,0), (0,3) as in TestEq13ByHand, weights 1/4 and
// 1/4 on the raw gradients.
func TestLeaveEq13(t *testing.T) {
	s, _, err := strategy.New("adacons", strategy.Config{Devices: 3, Batch: 8, LR: 0.1, Options: map[string]float64{"eq13": 1}})
	if err != nil {
		t.Fatal(err)
	}
	s.Step(strategy.Event{Kind: strategy.Start}, nil)
	if acts := s.Step(strategy.Event{Kind: strategy.Leave, Device: 1}, nil); len(acts) != 0 {
		t.Fatalf("device 1 left while the others work: %+v", acts)
	}
	s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 0}, nil)
	s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 2}, nil)
	// ḡ = (1/2, 3/2): c = [1/2 nan 1/2], ‖g‖ = [1 nan 3].
	acts := s.Step(strategy.Event{Kind: strategy.Answer, Values: []float64{0.5, math.NaN(), 0.5}, Second: []float64{1, math.NaN(), 3}}, nil)
	weightsNear(t, "eq. 13, device 1 gone", acts, []float64{0.25, 0, 0.25})
}

// With no momentum yet and every live gradient zero, the step averages over
// the live devices.
func TestLeaveFallback(t *testing.T) {
	s, _, err := strategy.New("adacons", strategy.Config{Devices: 3, Batch: 8, LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	s.Step(strategy.Event{Kind: strategy.Start}, nil)
	s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 0}, nil)
	s.Step(strategy.Event{Kind: strategy.Leave, Device: 1}, nil)
	s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 2}, nil)
	nan := math.NaN()
	acts := s.Step(strategy.Event{Kind: strategy.Answer, Values: []float64{nan, nan, nan}}, nil)
	weightsNear(t, "fallback", acts, []float64{0.5, 0, 0.5})
	if acts[0].Note == "" {
		t.Fatal("the fallback to averaging is not noted")
	}
}
