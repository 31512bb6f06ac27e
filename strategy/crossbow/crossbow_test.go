package crossbow_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/strategy/crossbow"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/crossbow.txt") }

func TestOptionErrors(t *testing.T) {
	for _, v := range []float64{0.5, 2, -1} {
		_, _, err := strategy.New("crossbow", strategy.Config{Devices: 2, Batch: 8, LR: 0.1, Options: map[string]float64{"correct-after": v}})
		if err == nil || !strings.Contains(err.Error(), "crossbow.correct-after") {
			t.Errorf("--correct-after %v: error %v", v, err)
		}
	}
}

// A device that leaves is waited for no more, and a grows by n/live so that
// the centre is pulled as much as before: with a = 1/4 on 4 devices, 1/3 on
// the 3 left. A synchronisation that waited only for the device that left
// comes at once.
func TestLeave(t *testing.T) {
	s, _, err := strategy.New("crossbow", strategy.Config{Devices: 4, Batch: 8, LR: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	step := func(ev strategy.Event) []strategy.Action { return s.Step(ev, nil) }
	step(strategy.Event{Kind: strategy.Start})
	for _, d := range []int{0, 1, 3} {
		if acts := step(strategy.Event{Kind: strategy.BatchDone, Device: d}); len(acts) != 0 {
			t.Fatalf("device %d done: %+v before the others", d, acts)
		}
	}
	acts := step(strategy.Event{Kind: strategy.Leave, Device: 2})
	if len(acts) != 1 || acts[0].Op != crossbow.SyncOp || math.Abs(acts[0].Params[0]-1.0/3) > 1e-15 || acts[0].Params[2] == 0 || acts[0].LR != 0.5 {
		t.Fatalf("the last device working left: %+v, want a centre sync with a = 1/3 and the gradients", acts)
	}
	for _, d := range []int{2, -1, 4} {
		if acts := step(strategy.Event{Kind: strategy.Leave, Device: d}); len(acts) != 0 {
			t.Fatalf("Leave %d answered %+v, want nothing", d, acts)
		}
	}
	acts = step(strategy.Event{Kind: strategy.CollectiveDone})
	if len(acts) != 3 || acts[0].Device != 0 || acts[1].Device != 1 || acts[2].Device != 3 || acts[2].Mode != strategy.Gradient {
		t.Fatalf("the next round dispatches %+v, want gradients of devices 0, 1, 3", acts)
	}
	for _, d := range []int{3, 0, 1} {
		acts = step(strategy.Event{Kind: strategy.BatchDone, Device: d})
	}
	if len(acts) != 1 || acts[0].Op != crossbow.SyncOp || math.Abs(acts[0].Params[0]-1.0/3) > 1e-15 {
		t.Fatalf("next round: %+v, want a centre sync with a = 1/3", acts)
	}
	// A second device leaving while the others work: a = 1/2.
	step(strategy.Event{Kind: strategy.CollectiveDone})
	if acts := step(strategy.Event{Kind: strategy.Leave, Device: 0}); len(acts) != 0 {
		t.Fatalf("device 0 left while devices 1 and 3 work: %+v", acts)
	}
	step(strategy.Event{Kind: strategy.BatchDone, Device: 1})
	acts = step(strategy.Event{Kind: strategy.BatchDone, Device: 3})
	if len(acts) != 1 || acts[0].Op != crossbow.SyncOp || acts[0].Params[0] != 0.5 {
		t.Fatalf("two devices left: %+v, want a centre sync with a = 1/2", acts)
	}
}

// The pull is capped at a = 1, the whole drift.
func TestLeaveCapsA(t *testing.T) {
	s, _, err := strategy.New("crossbow", strategy.Config{Devices: 4, Batch: 8, LR: 0.5, Options: map[string]float64{"a": 0.4}})
	if err != nil {
		t.Fatal(err)
	}
	s.Step(strategy.Event{Kind: strategy.Start}, nil)
	s.Step(strategy.Event{Kind: strategy.Leave, Device: 0}, nil)
	s.Step(strategy.Event{Kind: strategy.Leave, Device: 1}, nil)
	s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 2}, nil)
	acts := s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 3}, nil)
	if len(acts) != 1 || acts[0].Op != crossbow.SyncOp || acts[0].Params[0] != 0.8 {
		t.Fatalf("a = 0.4 on 2 of 4 devices: %+v, want a = 0.8", acts)
	}
	s.Step(strategy.Event{Kind: strategy.CollectiveDone}, nil)
	s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 3}, nil)
	acts = s.Step(strategy.Event{Kind: strategy.Leave, Device: 2}, nil)
	if len(acts) != 1 || acts[0].Op != crossbow.SyncOp || acts[0].Params[0] != 1 || acts[0].Params[2] == 0 {
		t.Fatalf("a = 0.4 on 1 of 4 devices, holding a gradient: %+v, want a = 1", acts)
	}
}

// Down to one device, CROSSBOW is plain SGD, as on one device: the round
// under way ends with the synchronisation the survivor computed its
// gradient for, the next ones are local steps and the centre takes the
// replica.
func TestLeaveDownToOne(t *testing.T) {
	s, _, err := strategy.New("crossbow", strategy.Config{Devices: 3, Batch: 8, LR: 0.5, Options: map[string]float64{"tau": 2}})
	if err != nil {
		t.Fatal(err)
	}
	step := func(ev strategy.Event) []strategy.Action { return s.Step(ev, nil) }
	step(strategy.Event{Kind: strategy.Start})
	step(strategy.Event{Kind: strategy.Leave, Device: 0})
	step(strategy.Event{Kind: strategy.BatchDone, Device: 1})
	acts := step(strategy.Event{Kind: strategy.BatchDone, Device: 2})
	if len(acts) != 1 || acts[0].Device != 2 || acts[0].Mode != strategy.Gradient {
		t.Fatalf("device 2's second batch: %+v, want a gradient", acts)
	}
	step(strategy.Event{Kind: strategy.Leave, Device: 1}) // with its gradient under way
	acts = step(strategy.Event{Kind: strategy.BatchDone, Device: 2})
	if len(acts) != 1 || acts[0].Op != crossbow.SyncOp || acts[0].Params[0] != 1 || acts[0].Params[2] == 0 {
		t.Fatalf("the survivor's gradient: %+v, want a centre sync applying it", acts)
	}
	for round := range 2 {
		acts = step(strategy.Event{Kind: strategy.CollectiveDone})
		for range 2 {
			if len(acts) != 1 || acts[0].Kind != strategy.Dispatch || acts[0].Device != 2 || acts[0].Mode != strategy.LocalStep {
				t.Fatalf("round %d: %+v, want a local step of device 2", round, acts)
			}
			acts = step(strategy.Event{Kind: strategy.BatchDone, Device: 2})
		}
		if len(acts) != 1 || acts[0].Op != strategy.MergeOp || !slices.Equal(acts[0].Weights, []float64{0, 0, 1}) || acts[0].Params[0] != 0 {
			t.Fatalf("round %d ends with %+v, want the centre to take replica 2", round, acts)
		}
	}
}
