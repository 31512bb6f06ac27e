package asynclocal_test

import (
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/strategy/asynclocal"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/asynclocal.txt") }

func near(a, b []float32) bool {
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return len(a) == len(b)
}

func pushOp(t *testing.T) strategy.Committer {
	t.Helper()
	op, err := strategy.NewOp(asynclocal.PushOp)
	if err != nil {
		t.Fatal(err)
	}
	return op.(strategy.Committer)
}

func pushAction(eta, beta, n float64, opens, closes bool) strategy.Action {
	a := strategy.Action{Kind: strategy.Commit, Op: asynclocal.PushOp, LR: eta}
	a.Params[0], a.Params[1] = beta, n
	if opens {
		a.Params[2] = 1
	}
	if closes {
		a.Params[3] = 1
	}
	return a
}

// The Delayed Nesterov step by hand, N = 2, β = 0.5, η = 1, from θ = (1,1)
// and m = (2,0):
//
//	push 1 (opens), δ = (2,0):  θ = (1,1) − δ/2 = (0,1)
//	push 2 (closes), δ = (0,4): m = 0.5·(2,0) + ((2,0) + (0,4))/2 = (2,2)
//	                            θ = (0,1) − (0.5·(2,2) + (0,4)/2) = (−1,−2)
func TestDelayedNesterovKnownAnswer(t *testing.T) {
	op := pushOp(t)
	h := &strategytest.Host{C: []float32{1, 1}, CS: []float32{2, 0}}
	a := pushAction(1, 0.5, 2, true, false)
	if err := op.Check(&a, 1); err != nil {
		t.Fatal(err)
	}
	op.Apply(h, &a, []float32{2, 0})
	if !near(h.C, []float32{0, 1}) {
		t.Fatalf("after the first push θ = %v, want (0, 1)", h.C)
	}
	a = pushAction(1, 0.5, 2, false, true)
	op.Apply(h, &a, []float32{0, 4})
	if !near(h.C, []float32{-1, -2}) || !near(h.CS, []float32{2, 2}) {
		t.Fatalf("after the second push θ = %v, m = %v, want (−1, −2) and (2, 2)", h.C, h.CS)
	}
}

// With N = 1 every push opens and closes a period: plain Nesterov,
// m = β·m + δ; θ = θ − η·(δ + β·m), as DiLoCo's outer step.
func TestDelayOneIsNesterov(t *testing.T) {
	op := pushOp(t)
	h := &strategytest.Host{C: []float32{1, 1}, CS: []float32{1, 0}}
	a := pushAction(0.5, 0.5, 1, true, true)
	op.Apply(h, &a, []float32{0, -1}) // v = (0.5, −1), θ = (1,1) − 0.5·((0,−1) + (0.25,−0.5))
	if !near(h.C, []float32{0.875, 1.75}) || !near(h.CS, []float32{0.5, -1}) {
		t.Fatalf("θ %v m %v, want (0.875, 1.75) and (0.5, −1)", h.C, h.CS)
	}
}

// The pseudo-gradient is where the device started minus where it is, and
// after its push the device goes on from θ and measures from there.
func TestDeltaAndRestart(t *testing.T) {
	op := pushOp(t)
	r := &strategytest.Replica{P: []float32{0.5, 2}, G: []float32{9, 9}, St: []float32{1, 1}}
	h := &strategytest.Host{C: []float32{3, 4}, Reps: []*strategytest.Replica{r}}
	a := pushAction(1, 0, 1, true, true)
	if !math.IsNaN(op.Delta(h, r, &a, nil)) || !near(r.G, []float32{0.5, -1}) {
		t.Fatalf("δ = %v, want (0.5, −1)", r.G)
	}
	op.(strategy.Restarter).Restart(h, r, &a, h.C)
	if !near(r.P, []float32{3, 4}) || !near(r.St, []float32{3, 4}) {
		t.Fatalf("after the push the replica is %v and its start %v, want θ = (3, 4)", r.P, r.St)
	}
	begin, _ := strategy.NewOp(asynclocal.BeginOp)
	r.P = []float32{7, 8}
	if err := begin.(strategy.Collector).Collect(h, &strategy.Action{}); err != nil || !near(r.St, []float32{7, 8}) {
		t.Fatalf("begin: start %v (%v), want the replica (7, 8)", r.St, err)
	}
}

func TestOptionErrors(t *testing.T) {
	for opt, v := range map[string]float64{"outer-lr": 0, "outer-momentum": 1, "h": 0, "delay": 0, "dylu": 2} {
		if _, _, err := strategy.New("async-local", strategy.Config{Devices: 2, Batch: 8, LR: 0.1, Options: map[string]float64{opt: v}}); err == nil {
			t.Errorf("%s %v: no error", opt, v)
		}
	}
}
