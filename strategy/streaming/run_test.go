package streaming_test

import (
	"context"
	"testing"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/engine/enginetest"
	"github.com/hetsgd/hetsgd/internal/testdata"
	_ "github.com/hetsgd/hetsgd/strategy/diloco"
	"github.com/hetsgd/hetsgd/strategy/streaming"
)

// Streaming DiLoCo runs in the engine as any strategy does, through its op
// alone: these tests hold it to the engine's equivalences.

// It learns, and a virtual-time run continued from any of its checkpoints
// ends on the uninterrupted run's model and evaluations, bit for bit — with
// a device crashing on the way, checkpoints taken while a fragment's sum is
// in flight (Host.Pending carries it), quantized or not, and with one
// fragment in flight for a whole round.
func TestResumeIsTheSameRun(t *testing.T) {
	w := enginetest.Bibtex(t)
	for _, opts := range []map[string]float64{{"h": 4}, {"h": 4, "bits": 4}, {"h": 3, "fragments": 1, "tau": 3}} {
		cfg := enginetest.Config(streaming.Name, 4, engine.Virtual)
		cfg.Options = opts
		cfg.Speeds, cfg.Noise = []float64{1, 0.9, 0.8, 0.68}, 0.1
		// A network slow enough that a checkpoint finds the network busy
		// with a fragment's sum (the virtual clock saves when it frees).
		cfg.Net.Intra.Bandwidth, cfg.Net.Inter.Bandwidth = 1e9, 1e9
		if full := enginetest.ResumeIsTheSameRun(t, cfg, w); len(full.Merges) == 0 {
			t.Fatalf("%v: no fragment merged", opts)
		}
	}
}

// With one fragment, τ = 0 and α = 0 Streaming DiLoCo is DiLoCo: the same
// model, evaluations and merges, bit for bit, and the same virtual time
// (the op's cost is DiLoCo's).
func TestOneFragmentIsDiLoCoInTheEngine(t *testing.T) {
	w := enginetest.Bibtex(t)
	cfg := enginetest.Config("diloco", 4, engine.Virtual)
	cfg.Options = map[string]float64{"h": 4}
	cfg.Speeds, cfg.Noise = []float64{1, 0.9, 0.8, 0.68}, 0.1
	want, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Strategy = streaming.Name
	cfg.Options = map[string]float64{"h": 4, "fragments": 1, "tau": 0, "alpha": 0}
	got, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !testdata.EqualBits(got.Model, want.Model) || len(got.Evals) != len(want.Evals) || len(got.Merges) != len(want.Merges) {
		t.Fatalf("models equal %v, evaluations %d/%d, merges %d/%d", testdata.EqualBits(got.Model, want.Model), len(got.Evals), len(want.Evals), len(got.Merges), len(want.Merges))
	}
	for i := range got.Evals {
		if got.Evals[i] != want.Evals[i] {
			t.Fatalf("evaluation %d: %+v, DiLoCo's %+v", i, got.Evals[i], want.Evals[i])
		}
	}
}

// Under the virtual clock the all-reduce of a fragment overlaps the inner
// steps: where it takes about a step's time (Bibtex's steps are short, so
// the network is made slow), the same steps take less time with τ = 1 than
// with τ = 0, which waits for every all-reduce. (The overlap hides at most
// τ steps' computing a sync: 0.80 of the time here, deterministic.)
func TestOverlapHidesTheNetwork(t *testing.T) {
	w := enginetest.Bibtex(t)
	cfg := enginetest.Config(streaming.Name, 4, engine.Virtual)
	cfg.Epochs = 0.5
	// took returns the virtual seconds of the run at τ 0 and 1 on a
	// network of bandwidth bw.
	took := func(bw float64) (blocking, overlapped float64) {
		cfg.Net.Intra.Bandwidth, cfg.Net.Inter.Bandwidth = bw, bw
		var secs [2]float64
		for tau := range secs {
			cfg.Options = map[string]float64{"h": 4, "tau": float64(tau)}
			res, err := engine.Run(context.Background(), cfg, w, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			secs[tau] = res.TrainSeconds
		}
		return secs[0], secs[1]
	}
	if t0, t1 := took(1e9); !(t1 < 0.9*t0) {
		t.Fatalf("τ = 1 took %.4g s, τ = 0 %.4g s: want the overlap to hide the network", t1, t0)
	}
	// On a network a hundred times slower the all-reduce dwarfs the steps
	// it overlaps: the merge waits for it, and τ = 1 takes nearly τ = 0's
	// time (0.994 of it).
	if t0, t1 := took(1e7); !(t1 > 0.95*t0 && t1 < t0) {
		t.Fatalf("on a slow network τ = 1 took %.4g s, τ = 0 %.4g s: want the merge to wait for the network", t1, t0)
	}
}

// With one inner step between syncs there is one fragment, in flight
// during every step (τ = 1), and every barrier dispatches a batch to each
// device at once, so the positions in the stream are fixed: a run on four
// ranks (goroutines over comm.Mem, the sums in flight on their own
// goroutines) equals the run in one process.
func TestDistributedEqualsInProcess(t *testing.T) {
	w := enginetest.Bibtex(t)
	cfg := enginetest.Config(streaming.Name, 4, engine.Real)
	cfg.Options = map[string]float64{"h": 1}
	cfg.Epochs = 0.5
	want, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := enginetest.OnRanks(t, cfg, w, 4)
	if d := testdata.MaxRelDiff(got.Model, want.Model); d > 1e-4 || got.Samples != want.Samples || len(got.Merges) != len(want.Merges) {
		t.Fatalf("4 ranks: relative difference %g, samples %d/%d, merges %d/%d", d, got.Samples, want.Samples, len(got.Merges), len(want.Merges))
	}
}

// Across ranks (goroutines over comm.Mem) with a fragment's sum in flight
// between every two barriers, checkpoints are taken (each waits for the
// sum and saves it) and a run resumed from one on four ranks ends on the
// uninterrupted run's model and samples.
func TestDistributedResumeWithSumsInFlight(t *testing.T) {
	w := enginetest.Bibtex(t)
	cfg := enginetest.Config(streaming.Name, 4, engine.Real)
	cfg.Options = map[string]float64{"h": 1}
	cfg.Epochs = 0.5
	dir := t.TempDir()
	saving := cfg
	saving.Checkpoint = engine.Checkpointing{Dir: dir, Every: 0.2, Keep: 100}
	full := enginetest.OnRanks(t, saving, w, 4)
	list, err := checkpoint.Dir(dir).List()
	if err != nil || len(list) < 2 {
		t.Fatalf("%d checkpoints (%v)", len(list), err)
	}
	got := enginetest.OnRanksFrom(t, cfg, w, 4, list[0])
	if d := testdata.MaxRelDiff(got.Model, full.Model); d > 1e-4 || got.Samples != full.Samples {
		t.Fatalf("resumed from %s on 4 ranks: relative difference %g, samples %d/%d", list[0], d, got.Samples, full.Samples)
	}
}
