package asynclocal_test

import (
	"context"
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/comm/commtest"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/optim"
	_ "github.com/hetsgd/hetsgd/strategy/elastic"
	"github.com/hetsgd/hetsgd/workload"
)

// Asynchronous Local-SGD runs in the engine as any strategy does, through
// its ops alone: these tests hold it to the engine's equivalences.

func bibtex(t *testing.T) *workload.XML {
	t.Helper()
	train, test, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.NewXML(train, test, []int{16}, 0.2, 0, 256)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func config(strat string, devices int, clock engine.Clock) engine.Config {
	return engine.Config{Strategy: strat, Devices: devices, Batch: 32, LR: 0.004,
		Optimizer: optim.Config{Name: "adam"}, Clock: clock, Epochs: 1, EvalEvery: 0.25, Seed: 3,
		Cost: cost.Default(), Net: comm.DefaultModel, Options: map[string]float64{"h": 4}}
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// It learns with devices of different speeds, the slow ones take fewer
// local steps, and a virtual-time run continued from any of its checkpoints
// ends on the uninterrupted run's model and evaluations, bit for bit, with
// a device crashing on the way: the server's momentum and each device's
// starting point travel in the checkpoints.
func TestResumeIsTheSameRun(t *testing.T) {
	w := bibtex(t)
	cfg := config("async-local", 4, engine.Virtual)
	cfg.Speeds, cfg.Noise = []float64{1, 0.9, 0.5, 0.25}, 0.1
	probe, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Faults = []engine.Fault{{Device: 2, At: 0.4 * probe.TrainSeconds, Kind: engine.Crash}}
	dir := t.TempDir()
	cfg.Checkpoint = engine.Checkpointing{Dir: dir, Every: 0.25, Keep: 100}
	full, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, last := full.Evals[0].P1, full.Evals[len(full.Evals)-1].P1
	if !(last > first+0.05) || len(full.Taus) < 2 || len(full.Faults) == 0 {
		t.Fatalf("P@1 %.3f → %.3f, pushes by staleness %v, faults %+v: want learning, stale pushes and the crash", first, last, full.Taus, full.Faults)
	}
	list, err := checkpoint.Dir(dir).List()
	if err != nil || len(list) < 4 {
		t.Fatalf("%d checkpoints (%v)", len(list), err)
	}
	for _, path := range list[:len(list)-1] {
		rd, err := checkpoint.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		again := cfg
		again.Checkpoint, again.Resume = engine.Checkpointing{}, rd
		res, err := engine.Run(context.Background(), again, w, nil, nil)
		rd.Close()
		if err != nil {
			t.Fatalf("resuming from %s: %v", path, err)
		}
		if !equalBits(res.Model, full.Model) || res.Samples != full.Samples {
			t.Fatalf("resumed from %s: the model or the samples (%d vs %d) differ", path, res.Samples, full.Samples)
		}
		if a, b := res.Evals[len(res.Evals)-1], full.Evals[len(full.Evals)-1]; a != b {
			t.Fatalf("resumed from %s: last evaluation %+v, uninterrupted %+v", path, a, b)
		}
	}
}

// On one device with η = 1, β = 0 and a delay of 1 every push moves θ to
// the replica, which goes on from there: plain local SGD, as elastic
// averaging is on one device (up to the rounding of θ − (θ − w)).
func TestOneDeviceWithoutMomentumIsLocalSGD(t *testing.T) {
	w := bibtex(t)
	cfg := config("async-local", 1, engine.Virtual)
	cfg.Options = map[string]float64{"h": 4, "outer-lr": 1, "outer-momentum": 0, "delay": 1}
	got, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := config("elastic", 1, engine.Virtual)
	ref.Options = map[string]float64{"k": 4}
	want, err := engine.Run(context.Background(), ref, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var diff, scale float64
	for i := range want.Model {
		diff = max(diff, math.Abs(float64(got.Model[i]-want.Model[i])))
		scale = max(scale, math.Abs(float64(want.Model[i])))
	}
	if diff > 1e-4*scale || got.Samples != want.Samples {
		t.Fatalf("difference %g (scale %g), samples %d/%d", diff, scale, got.Samples, want.Samples)
	}
}

// Across four ranks (goroutines over comm.Mem) each push crosses to rank 0
// and θ comes back; the run learns as in one process.
func TestDistributedLearns(t *testing.T) {
	w := bibtex(t)
	cfg := config("async-local", 4, engine.Real)
	cfg.Epochs = 2
	cfg.Options = map[string]float64{"h": 4, "outer-lr": 0.7, "outer-momentum": 0.5}
	var got *engine.Result
	errs := commtest.OnMem(4, func(c comm.Comm) error {
		cfg := cfg
		cfg.World = c
		res, err := engine.Run(context.Background(), cfg, w, nil, nil)
		if c.Rank() == 0 {
			got = res
		}
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
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
