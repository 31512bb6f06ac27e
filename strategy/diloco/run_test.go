package diloco_test

import (
	"context"
	"testing"

	"github.com/hetsgd/hetsgd/internal/testdata"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/engine/enginetest"
)

// DiLoCo runs in the engine as any strategy does, through its op alone:
// these tests hold it to the engine's equivalences.

// It learns, and a virtual-time run continued from any of its checkpoints
// ends on the uninterrupted run's model and evaluations, bit for bit — with
// a device crashing on the way, and the outer momentum carried by the
// checkpoints.
func TestResumeIsTheSameRun(t *testing.T) {
	cfg := enginetest.Config("diloco", 4, engine.Virtual)
	cfg.Options = map[string]float64{"h": 4}
	cfg.Speeds, cfg.Noise = []float64{1, 0.9, 0.8, 0.68}, 0.1
	if full := enginetest.ResumeIsTheSameRun(t, cfg, enginetest.Bibtex(t)); len(full.Merges) == 0 {
		t.Fatal("no outer step recorded")
	}
}

// With one inner step per round every round dispatches a batch to each
// device at once, so the positions in the stream are fixed, and a run on
// four ranks (goroutines over comm.Mem) equals the run in one process.
func TestDistributedEqualsInProcess(t *testing.T) {
	w := enginetest.Bibtex(t)
	cfg := enginetest.Config("diloco", 4, engine.Real)
	cfg.Options = map[string]float64{"h": 1}
	cfg.Epochs = 0.5
	want, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := enginetest.OnRanks(t, cfg, w, 4)
	if d := testdata.MaxRelDiff(got.Model, want.Model); d > 1e-4 || got.Samples != want.Samples || len(got.Merges) != len(want.Merges) {
		t.Fatalf("4 ranks: relative difference %g, samples %d/%d, outer steps %d/%d", d, got.Samples, want.Samples, len(got.Merges), len(want.Merges))
	}
}
