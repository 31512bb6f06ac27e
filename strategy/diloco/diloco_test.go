package diloco_test

import (
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/strategy/diloco"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/diloco.txt") }

func near(a, b []float32) bool {
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return len(a) == len(b)
}

// The outer step by hand: θ = (1,1), replicas (0,1) and (2,3) weighted
// 1/2 each: the mean is (1,2), Δ = θ − mean = (0,−1). With v = (1,0),
// μ = 0.5 and η = 0.5:
//
//	v = 0.5·(1,0) + (0,−1) = (0.5,−1)
//	θ = (1,1) − 0.5·((0,−1) + 0.5·(0.5,−1)) = (0.875, 1.75)
//
// and both replicas restart from θ.
func TestOuterKnownAnswer(t *testing.T) {
	h := &strategytest.Host{C: []float32{1, 1}, CS: []float32{1, 0},
		Reps: []*strategytest.Replica{{Dev: 0, P: []float32{0, 1}}, {Dev: 1, P: []float32{2, 3}}}}
	op, err := strategy.NewOp(diloco.OuterOp)
	if err != nil {
		t.Fatal(err)
	}
	a := diloco.Outer([]float64{0.5, 0.5}, 0.5, 0.5)
	if err := op.Check(&a, 2); err != nil {
		t.Fatal(err)
	}
	if err := op.(strategy.Collector).Collect(h, &a); err != nil {
		t.Fatal(err)
	}
	want := []float32{0.875, 1.75}
	if !near(h.C, want) || !near(h.CS, []float32{0.5, -1}) || !near(h.Reps[0].P, want) || !near(h.Reps[1].P, want) {
		t.Fatalf("θ %v v %v replicas %v %v, want θ = replicas = %v, v = (0.5, −1)", h.C, h.CS, h.Reps[0].P, h.Reps[1].P, want)
	}
}

// With η = 1 and μ = 0 the outer step is the average itself: DiLoCo is
// elastic averaging, and on one device the centre follows the replica.
func TestOuterWithoutMomentumIsAveraging(t *testing.T) {
	h := &strategytest.Host{C: []float32{5, 5}, Reps: []*strategytest.Replica{{Dev: 0, P: []float32{1, 2}}}}
	op, _ := strategy.NewOp(diloco.OuterOp)
	a := diloco.Outer([]float64{1}, 1, 0)
	if err := op.(strategy.Collector).Collect(h, &a); err != nil {
		t.Fatal(err)
	}
	if !near(h.C, []float32{1, 2}) {
		t.Fatalf("θ %v, want the replica (1, 2)", h.C)
	}
}

func TestOptionErrors(t *testing.T) {
	for opt, v := range map[string]float64{"outer-lr": 0, "outer-momentum": 1, "h": 0} {
		if _, _, err := strategy.New("diloco", strategy.Config{Devices: 2, Batch: 8, LR: 0.1, Options: map[string]float64{opt: v}}); err == nil {
			t.Errorf("%s %v: no error", opt, v)
		}
	}
}
