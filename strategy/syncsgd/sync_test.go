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

// A device that leaves is waited for no more: its weight is 0, the others
// share 1, it gets no more batches, and a step that waited only for it
// all-reduces at once. A second Leave for it, or one for no device, is
// ignored.
func TestLeave(t *testing.T) {
	want := []float64{1.0 / 3, 1.0 / 3, 0, 1.0 / 3}
	for _, name := range []string{"sync", "lsgd", "sum"} {
		for _, when := range []string{"last pending", "busy", "done"} {
			s, _, err := strategy.New(name, strategy.Config{Devices: 4, Batch: 8, LR: 0.1})
			if err != nil {
				t.Fatal(err)
			}
			where := name + ", device 2 leaves " + when
			step := func(ev strategy.Event) []strategy.Action { return s.Step(ev, nil) }
			step(strategy.Event{Kind: strategy.Start})
			var acts []strategy.Action
			switch when {
			case "last pending":
				for _, d := range []int{0, 1, 3} {
					if acts = step(strategy.Event{Kind: strategy.BatchDone, Device: d}); len(acts) != 0 {
						t.Fatalf("%s: device %d done: %+v before the others", where, d, acts)
					}
				}
				acts = step(strategy.Event{Kind: strategy.Leave, Device: 2})
			case "busy", "done":
				if when == "done" {
					step(strategy.Event{Kind: strategy.BatchDone, Device: 2})
				}
				if acts = step(strategy.Event{Kind: strategy.Leave, Device: 2}); len(acts) != 0 {
					t.Fatalf("%s: %+v while devices 0, 1 and 3 work", where, acts)
				}
				step(strategy.Event{Kind: strategy.BatchDone, Device: 0})
				step(strategy.Event{Kind: strategy.BatchDone, Device: 1})
				acts = step(strategy.Event{Kind: strategy.BatchDone, Device: 3})
			}
			checkAllReduce(t, where, acts, want, name == "lsgd")
			for _, d := range []int{2, -1, 4} {
				if a := step(strategy.Event{Kind: strategy.Leave, Device: d}); len(a) != 0 {
					t.Fatalf("%s: Leave %d answered %+v, want nothing", where, d, a)
				}
			}
			// The next step: batches for 0, 1 and 3 only, the same weights.
			acts = step(strategy.Event{Kind: strategy.CollectiveDone})
			if len(acts) != 3 || acts[0].Device != 0 || acts[1].Device != 1 || acts[2].Device != 3 {
				t.Fatalf("%s: next step dispatches %+v, want devices 0, 1, 3", where, acts)
			}
			for _, d := range []int{3, 1, 0} {
				acts = step(strategy.Event{Kind: strategy.BatchDone, Device: d})
			}
			checkAllReduce(t, where+", next step", acts, want, name == "lsgd")
		}
	}
}

func checkAllReduce(t *testing.T, where string, acts []strategy.Action, want []float64, layered bool) {
	t.Helper()
	if len(acts) != 1 || acts[0].Kind != strategy.AllReduce || acts[0].Layered != layered || acts[0].LR != 0.1 {
		t.Fatalf("%s: %+v, want one all-reduce at 0.1 (layered %v)", where, acts, layered)
	}
	for i, w := range want {
		if math.Abs(acts[0].Weights[i]-w) > 1e-15 {
			t.Fatalf("%s: weights %v, want %v", where, acts[0].Weights, want)
		}
	}
}

// A device that leaves before the run starts gets nothing.
func TestLeaveBeforeStart(t *testing.T) {
	s, _, err := strategy.New("sync", strategy.Config{Devices: 3, Batch: 8, LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	s.Step(strategy.Event{Kind: strategy.Leave, Device: 0}, nil)
	acts := s.Step(strategy.Event{Kind: strategy.Start}, nil)
	if len(acts) != 2 || acts[0].Device != 1 || acts[1].Device != 2 {
		t.Fatalf("start dispatches %+v, want devices 1 and 2", acts)
	}
	s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 2}, nil)
	acts = s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 1}, nil)
	checkAllReduce(t, "device 0 gone from the start", acts, []float64{0, 0.5, 0.5}, false)
}
