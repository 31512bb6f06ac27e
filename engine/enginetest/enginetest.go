package enginetest

import (
	"context"
	"testing"

	"github.com/hetsgd/hetsgd/internal/testdata"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/comm/commtest"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/workload"
)

// Bibtex is the bundled Bibtex set as the tests' workload: one hidden
// layer of 16 units, dropout 0.2 (every device draws its own masks).
func Bibtex(t testing.TB) *workload.XML {
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

// Config is a run of strat on devices under clock: batches of 32, Adam at
// 0.004, one epoch, evaluated every quarter, seed 3, the default cost and
// network models.
func Config(strat string, devices int, clock engine.Clock) engine.Config {
	return engine.Config{Strategy: strat, Devices: devices, Batch: 32, LR: 0.004,
		Optimizer: optim.Config{Name: "adam"}, Clock: clock, Epochs: 1, EvalEvery: 0.25, Seed: 3,
		Cost: cost.Default(), Net: comm.DefaultModel}
}

// ResumeIsTheSameRun runs cfg (a virtual-time run) on w with device 2
// crashing at 0.4 of its time and a checkpoint every quarter epoch, checks
// that it learns (its last P@1 at least 0.05 above its first) and that the
// crash struck, and resumes it from each of its checkpoints but the last:
// each resumed run must end on the uninterrupted run's model, samples and
// last evaluation, bit for bit. It returns the uninterrupted run's result.
func ResumeIsTheSameRun(t *testing.T, cfg engine.Config, w engine.Workload) *engine.Result {
	t.Helper()
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
	if !(last > first+0.05) || len(full.Faults) == 0 {
		t.Fatalf("%s: P@1 %.3f → %.3f, faults %+v: want learning and the crash", cfg.Strategy, first, last, full.Faults)
	}
	list, err := checkpoint.Dir(dir).List()
	if err != nil || len(list) < 4 {
		t.Fatalf("%s: %d checkpoints (%v)", cfg.Strategy, len(list), err)
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
			t.Fatalf("%s: resuming from %s: %v", cfg.Strategy, path, err)
		}
		if !testdata.EqualBits(res.Model, full.Model) || res.Samples != full.Samples {
			t.Fatalf("%s: resumed from %s: the model or the samples (%d vs %d) differ", cfg.Strategy, path, res.Samples, full.Samples)
		}
		if a, b := res.Evals[len(res.Evals)-1], full.Evals[len(full.Evals)-1]; a != b {
			t.Fatalf("%s: resumed from %s: last evaluation %+v, uninterrupted %+v", cfg.Strategy, path, a, b)
		}
	}
	return full
}

// OnRanks runs cfg on w on ranks ranks in this process (goroutines over
// comm.Mem) and returns rank 0's result, failing the test on any rank's
// error.
func OnRanks(t *testing.T, cfg engine.Config, w engine.Workload, ranks int) *engine.Result {
	t.Helper()
	return OnRanksFrom(t, cfg, w, ranks, "")
}

// OnRanksFrom is OnRanks resuming the checkpoint at path ("": none), which
// every rank opens and reads, as ranks under mpirun do.
func OnRanksFrom(t *testing.T, cfg engine.Config, w engine.Workload, ranks int, path string) *engine.Result {
	t.Helper()
	var got *engine.Result
	errs := commtest.OnMem(ranks, func(c comm.Comm) error {
		cfg := cfg
		cfg.World = c
		if path != "" {
			rd, err := checkpoint.Open(path)
			if err != nil {
				return err
			}
			defer rd.Close()
			cfg.Resume = rd
		}
		res, err := engine.Run(context.Background(), cfg, w, nil, nil)
		if c.Rank() == 0 {
			got = res
		}
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("%s on %d ranks, rank %d: %v", cfg.Strategy, ranks, r, err)
		}
	}
	return got
}
