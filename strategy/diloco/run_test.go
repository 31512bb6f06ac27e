package diloco_test

import (
	"bytes"
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
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/workload"
)

// DiLoCo runs in the engine as any strategy does, through its op alone:
// these tests hold it to the engine's equivalences.

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

func config(devices int, clock engine.Clock) engine.Config {
	return engine.Config{Strategy: "diloco", Devices: devices, Batch: 32, LR: 0.004,
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

// It learns, and a virtual-time run continued from any of its checkpoints
// ends on the uninterrupted run's model and evaluations, bit for bit — with
// a device crashing on the way, and the outer momentum carried by the
// checkpoints.
func TestResumeIsTheSameRun(t *testing.T) {
	w := bibtex(t)
	cfg := config(4, engine.Virtual)
	cfg.Speeds, cfg.Noise = []float64{1, 0.9, 0.8, 0.68}, 0.1
	probe, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Faults = []engine.Fault{{Device: 2, At: 0.4 * probe.TrainSeconds, Kind: engine.Crash}}
	dir := t.TempDir()
	cfg.Checkpoint = engine.Checkpointing{Dir: dir, Every: 0.25, Keep: 100}
	var log bytes.Buffer
	full, err := engine.Run(context.Background(), cfg, w, runlog.NewLog(&log), nil)
	if err != nil {
		t.Fatal(err)
	}
	first, last := full.Evals[0].P1, full.Evals[len(full.Evals)-1].P1
	if !(last > first+0.05) || len(full.Merges) == 0 || len(full.Faults) == 0 {
		t.Fatalf("P@1 %.3f → %.3f, %d outer steps, faults %+v: want learning, outer steps and the crash", first, last, len(full.Merges), full.Faults)
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

// With one inner step per round every round dispatches a batch to each
// device at once, so the positions in the stream are fixed, and a run on
// four ranks (goroutines over comm.Mem) equals the run in one process.
func TestDistributedEqualsInProcess(t *testing.T) {
	w := bibtex(t)
	cfg := config(4, engine.Real)
	cfg.Options = map[string]float64{"h": 1}
	cfg.Epochs = 0.5
	want, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	var diff, scale float64
	for i := range want.Model {
		diff = max(diff, math.Abs(float64(got.Model[i]-want.Model[i])))
		scale = max(scale, math.Abs(float64(want.Model[i])))
	}
	if diff > 1e-4*scale || got.Samples != want.Samples || len(got.Merges) != len(want.Merges) {
		t.Fatalf("4 ranks: difference %g (scale %g), samples %d/%d, outer steps %d/%d", diff, scale, got.Samples, want.Samples, len(got.Merges), len(want.Merges))
	}
}
