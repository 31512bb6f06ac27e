package asynclocal_test

import (
	"context"
	"testing"

	"github.com/hetsgd/hetsgd/internal/testdata"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/engine/enginetest"
	_ "github.com/hetsgd/hetsgd/strategy/elastic"
)

// Asynchronous Local-SGD runs in the engine as any strategy does, through
// its ops alone: these tests hold it to the engine's equivalences.

// It learns with devices of different speeds, and a virtual-time run
// continued from any of its checkpoints ends on the uninterrupted run's
// model and evaluations, bit for bit, with a device crashing on the way:
// the server's momentum and each device's starting point travel in the
// checkpoints.
func TestResumeIsTheSameRun(t *testing.T) {
	cfg := enginetest.Config("async-local", 4, engine.Virtual)
	cfg.Options = map[string]float64{"h": 4}
	cfg.Speeds, cfg.Noise = []float64{1, 0.9, 0.5, 0.25}, 0.1
	if full := enginetest.ResumeIsTheSameRun(t, cfg, enginetest.Bibtex(t)); len(full.Taus) < 2 {
		t.Fatalf("pushes by staleness %v: want stale pushes", full.Taus)
	}
}

// On one device with η = 1, β = 0 and a delay of 1 every push moves θ to
// the replica, which goes on from there: plain local SGD, as elastic
// averaging is on one device (up to the rounding of θ − (θ − w)).
func TestOneDeviceWithoutMomentumIsLocalSGD(t *testing.T) {
	w := enginetest.Bibtex(t)
	cfg := enginetest.Config("async-local", 1, engine.Virtual)
	cfg.Options = map[string]float64{"h": 4, "outer-lr": 1, "outer-momentum": 0, "delay": 1}
	got, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := enginetest.Config("elastic", 1, engine.Virtual)
	ref.Options = map[string]float64{"k": 4}
	want, err := engine.Run(context.Background(), ref, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := testdata.MaxRelDiff(got.Model, want.Model); d > 1e-4 || got.Samples != want.Samples {
		t.Fatalf("relative difference %g, samples %d/%d", d, got.Samples, want.Samples)
	}
}

// Across four ranks (goroutines over comm.Mem) each push crosses to rank 0
// and θ comes back; the run learns as in one process.
func TestDistributedLearns(t *testing.T) {
	cfg := enginetest.Config("async-local", 4, engine.Real)
	cfg.Epochs = 2
	cfg.Options = map[string]float64{"h": 4, "outer-lr": 0.7, "outer-momentum": 0.5}
	got := enginetest.OnRanks(t, cfg, enginetest.Bibtex(t), 4)
	first, last := got.Evals[0].P1, got.Evals[len(got.Evals)-1].P1
	var pushes int64
	for _, n := range got.Taus {
		pushes += n
	}
	t.Logf("P@1 %.3f → %.3f after %d pushes", first, last, pushes)
	if !(last > 0.25) || pushes == 0 {
		t.Fatalf("P@1 %.3f → %.3f after %d pushes", first, last, pushes)
	}
}
