package streaming_test

import (
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
	"github.com/hetsgd/hetsgd/strategy/streaming"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/streaming.txt") }

func near(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return len(a) == len(b)
}

func collect(t *testing.T, h *strategytest.Host, a strategy.Action) {
	t.Helper()
	op, err := strategy.NewOp(streaming.OuterOp)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Check(&a, len(a.Weights)); err != nil {
		t.Fatal(err)
	}
	if err := op.(strategy.Collector).Collect(h, &a); err != nil {
		t.Fatal(err)
	}
}

// Fragment 1 of two of a four-parameter model, by hand. θ = (1,1,1,1),
// replicas (0,0,0,1) and (0,0,2,3) weighted 1/2: the fragment's mean is
// (1,2) and Δ = (0,−1). The momentum v = (1,0) becomes (0.5,−1) at
// μ = 0.5 and θ's fragment 1 − 0.5·((0,−1) + 0.5·(0.5,−1)) = (0.875, 1.75),
// as DiLoCo's outer step gives. With α = 0.5 each replica's fragment is
// halfway between its own and θ's; fragment 0 is untouched.
func TestFragmentKnownAnswer(t *testing.T) {
	h := &strategytest.Host{C: []float32{1, 1, 1, 1}, CS: []float32{9, 9, 1, 0},
		Reps: []*strategytest.Replica{{Dev: 0, P: []float32{0, 0, 0, 1}}, {Dev: 1, P: []float32{0, 0, 2, 3}}}}
	op, _ := strategy.NewOp(streaming.OuterOp)
	start := streaming.Outer([]float64{0.5, 0.5}, 0.5, 0.5, 0.5, 2, -1, 1, 0, 1)
	if err := op.(strategy.Collector).Collect(h, &start); err != nil {
		t.Fatal(err)
	}
	if !near(h.C, []float32{1, 1, 1, 1}) {
		t.Fatalf("θ %v changed at the start", h.C)
	}
	// The devices compute meanwhile: their fragments move.
	h.Reps[0].P[2], h.Reps[1].P[3] = 4, 5
	finish := streaming.Outer([]float64{0.5, 0.5}, 0.5, 0.5, 0.5, 2, 1, -1, 0, 1)
	if err := op.(strategy.Collector).Collect(h, &finish); err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 1, 0.875, 1.75}
	if !near(h.C, want) || !near(h.CS, []float32{9, 9, 0.5, -1}) {
		t.Fatalf("θ %v v %v, want θ %v, v (9, 9, 0.5, −1)", h.C, h.CS, want)
	}
	if r0, r1 := h.Reps[0].P, h.Reps[1].P; !near(r0, []float32{0, 0, 2.4375, 1.375}) || !near(r1, []float32{0, 0, 1.4375, 3.375}) {
		t.Fatalf("replicas %v %v, want their fragment 1 halfway to θ's", r0, r1)
	}
}

// With one fragment, τ = 0 and α = 0 the op is DiLoCo's outer step.
func TestOneFragmentIsDiLoCo(t *testing.T) {
	h := &strategytest.Host{C: []float32{1, 1}, CS: []float32{1, 0},
		Reps: []*strategytest.Replica{{Dev: 0, P: []float32{0, 1}}, {Dev: 1, P: []float32{2, 3}}}}
	collect(t, h, streaming.Outer([]float64{0.5, 0.5}, 0.5, 0.5, 0, 1, 0, 0, 0, 0))
	want := []float32{0.875, 1.75}
	if !near(h.C, want) || !near(h.Reps[0].P, want) || !near(h.Reps[1].P, want) {
		t.Fatalf("θ %v replicas %v %v, want %v", h.C, h.Reps[0].P, h.Reps[1].P, want)
	}
}

// One fragment overlapping a whole round (τ = h): the action at the end
// of a round merges the sum started a round before, then starts the next
// one. θ = (1,1), one replica weighted 1: its sum is started at (0,1);
// the replica then moves to (4,4). At the next barrier the merge takes
// Δ = θ − (0,1) = (1,0): with η = 1 and μ = 0, θ = (0,1), and with α 0.5
// the replica becomes (2, 2.5); then the next sum starts from it, which
// Pending holds.
func TestOneFragmentAWholeRound(t *testing.T) {
	h := &strategytest.Host{C: []float32{1, 1}, Reps: []*strategytest.Replica{{Dev: 0, P: []float32{0, 1}}}}
	op, _ := strategy.NewOp(streaming.OuterOp)
	first := streaming.Outer([]float64{1}, 1, 0, 0.5, 1, -1, 0, 0, 3)
	if err := op.(strategy.Collector).Collect(h, &first); err != nil {
		t.Fatal(err)
	}
	h.Reps[0].P[0], h.Reps[0].P[1] = 4, 4
	both := streaming.Outer([]float64{1}, 1, 0, 0.5, 1, 0, 0, 0, 3)
	if err := op.Check(&both, 1); err != nil {
		t.Fatal(err)
	}
	if err := op.(strategy.Collector).Collect(h, &both); err != nil {
		t.Fatal(err)
	}
	if !near(h.C, []float32{0, 1}) || !near(h.Reps[0].P, []float32{2, 2.5}) || !near(h.Pend, []float32{2, 2.5}) {
		t.Fatalf("θ %v, replica %v, sum in flight %v: want (0, 1), (2, 2.5), (2, 2.5)", h.C, h.Reps[0].P, h.Pend)
	}
}

// Quantized, each device's outer gradient is rounded to E3M0 before the
// sum: Δ_0 = θ − (0.9, 0.05) = (0.1, 0.95), whose scale is 0.95; 0.1/0.95
// (log2 −3.25) rounds to 2^−3, so Δ_0 becomes (0.95/8, 0.95).
func TestQuantizedSum(t *testing.T) {
	h := &strategytest.Host{C: []float32{1, 1},
		Reps: []*strategytest.Replica{{Dev: 0, P: []float32{0.9, 0.05}}}}
	collect(t, h, streaming.Outer([]float64{1}, 1, 0, 0, 1, 0, 0, 4, 0))
	// η = 1, μ = 0: θ − Δ.
	want := []float32{1 - 0.95/8, 1 - 0.95}
	if !near(h.C, want) {
		t.Fatalf("θ %v, want %v", h.C, want)
	}
}

func TestQuantizeE3M0(t *testing.T) {
	v := []float32{-8, 5.9, 5.6, 1, 0.2, 0.17, 0.12, 0, -0.09, 0.001}
	streaming.QuantizeE3M0(v)
	// Scale 8: ratios −1, 0.7375 (log2 −0.44: 2^0), 0.7 (−0.51: 2^−1),
	// 0.125, 0.025 (−5.32: 2^−5), 0.02125 (−5.56: 2^−6), 0.015 (−6.06:
	// 2^−6), 0, −0.01125 (−6.47: 2^−6), 0.000125 (−12.97: 0).
	want := []float32{-8, 8, 4, 1, 0.25, 0.125, 0.125, 0, -0.125, 0}
	for i := range v {
		if v[i] != want[i] {
			t.Fatalf("quantized %v, want %v", v, want)
		}
	}
	z := []float32{0, 0}
	streaming.QuantizeE3M0(z)
	if z[0] != 0 || z[1] != 0 {
		t.Fatalf("zeros became %v", z)
	}
}

func TestOptionErrors(t *testing.T) {
	for _, opts := range []map[string]float64{
		{"h": 2, "fragments": 3}, {"h": 4, "fragments": 2, "tau": 3}, {"bits": 8}, {"alpha": 1}, {"outer-momentum": 1}, {"h": 0},
	} {
		if _, _, err := strategy.New(streaming.Name, strategy.Config{Devices: 2, Batch: 8, LR: 0.1, DatasetSize: 1000, Options: opts}); err == nil {
			t.Errorf("%v: no error", opts)
		}
	}
}

// The engine validates a run's options before its data is loaded, on a set
// of one point (h's default is then 1): an overlap that the real h allows
// must pass there, and New refuses it only where h is too short.
func TestScheduleCheckedWithTheData(t *testing.T) {
	opts := map[string]float64{"tau": 2}
	if _, _, err := strategy.Validate(streaming.Name, strategy.Config{Devices: 4, Batch: 128, LR: 0.01, DatasetSize: 1, Options: opts}); err != nil {
		t.Fatalf("validated on one point: %v", err)
	}
	if _, _, err := strategy.New(streaming.Name, strategy.Config{Devices: 4, Batch: 128, LR: 0.01, DatasetSize: 4880, Options: opts}); err != nil {
		t.Fatalf("h 5 on Bibtex's size: %v", err)
	}
	if _, _, err := strategy.New(streaming.Name, strategy.Config{Devices: 4, Batch: 128, LR: 0.01, DatasetSize: 1000, Options: opts}); err == nil {
		t.Fatal("h 1: tau 2 accepted")
	}
}
