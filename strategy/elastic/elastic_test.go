package elastic_test

import (
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/elastic"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/elastic.txt") }

// A device that leaves is waited for no more: the round merges when every
// device left in the run took its K steps (at once when the device that
// left was the last one working), with weights 1/3 and 0 for the gone one,
// which the record lists with no batch and no update.
func TestLeave(t *testing.T) {
	for _, when := range []string{"last working", "busy", "idle"} {
		s, _, err := strategy.New("elastic", strategy.Config{Devices: 4, Batch: 8, LR: 0.1, Options: map[string]float64{"k": 2}})
		if err != nil {
			t.Fatal(err)
		}
		where := "device 2 leaves " + when
		step := func(ev strategy.Event) []strategy.Action { return s.Step(ev, nil) }
		done := func(d int) []strategy.Action { return step(strategy.Event{Kind: strategy.BatchDone, Device: d}) }
		leave := func(d int) []strategy.Action { return step(strategy.Event{Kind: strategy.Leave, Device: d}) }
		step(strategy.Event{Kind: strategy.Start})
		var acts []strategy.Action
		switch when {
		case "last working":
			done(2)
			for _, d := range []int{0, 1, 3, 0, 1, 3} {
				if acts = done(d); len(acts) > 1 || len(acts) == 1 && acts[0].Kind != strategy.Dispatch {
					t.Fatalf("%s: device %d done: %+v", where, d, acts)
				}
			}
			acts = leave(2)
		case "busy", "idle":
			if when == "idle" {
				done(2)
				done(2)
			}
			if acts = leave(2); len(acts) != 0 {
				t.Fatalf("%s: %+v while the others work", where, acts)
			}
			for _, d := range []int{0, 1, 3, 0, 1, 3} {
				acts = done(d)
			}
		}
		checkMerge(t, where, acts)
		for _, d := range []int{2, -1, 4} {
			if acts := leave(d); len(acts) != 0 {
				t.Fatalf("%s: Leave %d answered %+v, want nothing", where, d, acts)
			}
		}
		acts = step(strategy.Event{Kind: strategy.CollectiveDone})
		if len(acts) != 3 || acts[0].Device != 0 || acts[1].Device != 1 || acts[2].Device != 3 {
			t.Fatalf("%s: the next round dispatches %+v, want devices 0, 1, 3", where, acts)
		}
		for _, d := range []int{3, 1, 0, 3, 1, 0} {
			acts = done(d)
		}
		checkMerge(t, where+", next round", acts)
	}
}

func checkMerge(t *testing.T, where string, acts []strategy.Action) {
	t.Helper()
	w := []float64{1.0 / 3, 1.0 / 3, 0, 1.0 / 3}
	if len(acts) != 1 || acts[0].Op != strategy.MergeOp || !slices.Equal(acts[0].Weights, w) || acts[0].Record == nil {
		t.Fatalf("%s: %+v, want a merge with weights %v", where, acts, w)
	}
	r := acts[0].Record
	if !slices.Equal(r.Updates, []int{2, 2, 0, 2}) || !slices.Equal(r.BatchSizes, []int{8, 8, 0, 8}) ||
		!slices.Equal(r.LRs, []float64{0.1, 0.1, 0, 0.1}) || !slices.Equal(r.Weights, w) {
		t.Fatalf("%s: merge record %+v", where, *r)
	}
}
