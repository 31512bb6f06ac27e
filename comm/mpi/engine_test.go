//go:build mpi

package mpi_test

import (
	"context"
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/optim"
	_ "github.com/hetsgd/hetsgd/strategy/all"
	"github.com/hetsgd/hetsgd/workload"
)

// The engine across MPI ranks, on every rank of jobs of 1 to 4: the same
// checks as its tests over comm.Mem, on the real transport.

func bibtex(t *testing.T, dropout float64) *workload.XML {
	t.Helper()
	train, test, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.NewXML(train, test, []int{16}, dropout, 0, 256)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func config(strategy string, devices int) engine.Config {
	return engine.Config{Strategy: strategy, Devices: devices, Batch: 32, LR: 0.5,
		Optimizer: optim.Config{Name: "sgd"}, Clock: engine.Real, Epochs: 0.5, EvalEvery: 0.25, Seed: 3,
		Cost: cost.Default(), Net: comm.DefaultModel}
}

// onWorld runs cfg on every rank; rank 0 returns its result.
func onWorld(t *testing.T, cfg engine.Config, w engine.Workload) *engine.Result {
	t.Helper()
	cfg.World = world(t)
	res, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if (res != nil) != (cfg.World.Rank() == 0) {
		t.Fatalf("rank %d: result %v", cfg.World.Rank(), res)
	}
	return res
}

// Synchronous strategies give the in-process run's parameters and
// evaluations, on any number of ranks, with one or two devices each.
func TestEngineMatchesInProcess(t *testing.T) {
	size := world(t).Size()
	w := bibtex(t, 0.2)
	for _, c := range []struct {
		strategy string
		perRank  int
	}{{"sync", 1}, {"sync", 2}, {"sum", 1}, {"adacons", 1}, {"adacons", 2}, {"crossbow", 1}} {
		cfg := config(c.strategy, size*c.perRank)
		got := onWorld(t, cfg, w)
		if got == nil {
			continue
		}
		want, err := engine.Run(context.Background(), cfg, w, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		diff := testdata.MaxRelDiff(got.Model, want.Model)
		t.Logf("%s on %d ranks × %d: %d steps, max relative difference %.2g", c.strategy, size, c.perRank, got.Steps, diff)
		if diff > 1e-4 || got.Samples != want.Samples || got.Steps != want.Steps || len(got.Evals) != len(want.Evals) {
			t.Fatalf("%s on %d ranks × %d: difference %g, samples %d/%d, steps %d/%d, %d/%d evaluations", c.strategy, size, c.perRank,
				diff, got.Samples, want.Samples, got.Steps, want.Steps, len(got.Evals), len(want.Evals))
		}
		for i := range got.Evals {
			if math.Abs(got.Evals[i].P1-want.Evals[i].P1) > 0.002 {
				t.Errorf("%s evaluation %d: P@1 %.4f, in process %.4f", c.strategy, i, got.Evals[i].P1, want.Evals[i].P1)
			}
		}
	}
}

// Layered SGD on MPI — MPI_Reduce within each node, MPI_Iallreduce among
// the nodes' first ranks polled while the next batch is prepared, MPI_Bcast
// back — computes what sync computes in one process.
func TestEngineLSGDEqualsSync(t *testing.T) {
	size := world(t).Size()
	if size < 2 {
		t.Skip("one rank has no nodes")
	}
	w := bibtex(t, 0)
	cfg := config("lsgd", size)
	cfg.Net.GroupSize = 2
	got := onWorld(t, cfg, w)
	if got == nil {
		return
	}
	cfg.Strategy = "sync"
	want, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	diff := testdata.MaxRelDiff(got.Model, want.Model)
	t.Logf("lsgd on %d ranks in nodes of 2: max relative difference to sync %.2g", size, diff)
	if diff > 1e-4 || got.Steps != want.Steps {
		t.Fatalf("lsgd: difference %g, steps %d/%d", diff, got.Steps, want.Steps)
	}
}

// Model averaging, the parameter servers and the Local-SGD strategies
// learn across ranks; the servers' commits and the asynchronous pushes are
// really stale.
func TestEngineStrategiesLearn(t *testing.T) {
	size := world(t).Size()
	if size < 3 {
		t.Skip("the asynchronous strategies are checked on 3 and 4 ranks")
	}
	w := bibtex(t, 0)
	for _, c := range []struct {
		strategy string
		opts     map[string]float64
	}{{"elastic", nil}, {"adaptive", map[string]float64{"mega-batch": 10, "delta": 0}}, {"gem", nil}, {"downpour", nil},
		{"diloco", map[string]float64{"h": 4}}, {"async-local", map[string]float64{"h": 4}}} {
		cfg := config(c.strategy, size)
		cfg.Epochs, cfg.EvalEvery, cfg.Options = 2, 1, c.opts
		if c.strategy == "gem" || c.strategy == "downpour" {
			cfg.LR = 0.25
		}
		res := onWorld(t, cfg, w)
		if res == nil {
			continue
		}
		p1 := res.Evals[len(res.Evals)-1].P1
		t.Logf("%s on %d ranks: P@1 %.3f, staleness %v", c.strategy, size, p1, res.Taus)
		if !(p1 > 0.2) {
			t.Errorf("%s on %d ranks: P@1 %.3f after 2 epochs", c.strategy, size, p1)
		}
		if len(res.Taus) > 0 && len(res.Taus) < 2 {
			t.Errorf("%s: no stale commit: %v", c.strategy, res.Taus)
		}
	}
}
