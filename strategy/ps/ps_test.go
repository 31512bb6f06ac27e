package ps_test

import (
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/ps"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/ps.txt") }

// A worker that leaves gets no more batches and commits nothing: its batch
// under way is lost, and a BatchDone for it afterwards is a protocol error,
// not a commit. The others go on, staleness counting their commits only.
func TestLeave(t *testing.T) {
	for _, name := range []string{"downpour", "staleness", "gem"} {
		s, _, err := strategy.New(name, strategy.Config{Devices: 3, Batch: 8, LR: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		if acts := s.Step(strategy.Event{Kind: strategy.Leave, Device: 0}, nil); len(acts) != 0 {
			t.Fatalf("%s: Leave before the start answered %+v", name, acts)
		}
		acts := s.Step(strategy.Event{Kind: strategy.Start}, nil)
		if len(acts) != 2 || acts[0].Device != 1 || acts[1].Device != 2 {
			t.Fatalf("%s: start dispatches %+v, want devices 1 and 2", name, acts)
		}
		for _, d := range []int{2, 0, -1, 3} { // 2 leaves while working; the rest are ignored
			if acts := s.Step(strategy.Event{Kind: strategy.Leave, Device: d}, nil); len(acts) != 0 {
				t.Fatalf("%s: Leave %d answered %+v, want nothing", name, d, acts)
			}
		}
		for range 3 {
			acts = s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 1}, nil)
			if len(acts) != 2 || acts[0].Kind != strategy.Commit || acts[0].Tau != 0 || acts[1].Device != 1 {
				t.Fatalf("%s: device 1 done: %+v, want its commit with tau 0 and its next batch", name, acts)
			}
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("%s: a BatchDone from the device that left was taken", name)
				}
			}()
			s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 2}, nil)
		}()
	}
}
