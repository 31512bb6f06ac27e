package syncsgd_test

import (
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
	_ "github.com/hetsgd/hetsgd/strategy/syncsgd"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/sync.txt") }

// Layered SGD's schedule by hand: 100 points, 2 devices of 10, so a step is
// a fifth of an epoch. A warm-up of 1 epoch from 0.1·lr ramps 0.1, 0.28,
// 0.46, 0.64, 0.82, then the rate is lr = 1 until epoch 2, where the step
// decay of 0.5 every 2 epochs halves it, and again at epoch 4.
func TestWarmupThenStepDecay(t *testing.T) {
	s, _, err := strategy.New("lsgd", strategy.Config{Devices: 2, Batch: 10, LR: 1, DatasetSize: 100,
		Options: map[string]float64{"warmup": 1, "decay-every": 2, "decay-factor": 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.1, 0.28, 0.46, 0.64, 0.82, 1, 1, 1, 1, 1, // epochs 0–2
		0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25} // 2–4, 4
	acts := s.Step(strategy.Event{Kind: strategy.Start}, nil)
	for i, w := range want {
		if len(acts) != 2 || math.Abs(acts[0].LR-w) > 1e-12 || acts[1].LR != acts[0].LR {
			t.Fatalf("step %d: %+v, want two dispatches at %g", i, acts, w)
		}
		acts = s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 0}, acts[:0])
		acts = s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 1}, acts)
		if len(acts) != 1 || acts[0].Kind != strategy.AllReduce || math.Abs(acts[0].LR-w) > 1e-12 {
			t.Fatalf("step %d: %+v, want an all-reduce at %g", i, acts, w)
		}
		acts = s.Step(strategy.Event{Kind: strategy.CollectiveDone}, acts[:0])
	}
}
