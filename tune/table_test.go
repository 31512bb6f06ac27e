package tune_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/tune"
)

// A summary of two strategies at two rates, one of whose runs diverged,
// as tables: every point's best P@1, then both protocols' choices (the
// shared rate is 0.1, the better on average).
func ExampleSummary_Write() {
	g := tune.Grid{Strategies: []string{"sync", "gem"}, LRs: []float64{0.1, 1}, Batches: []int{128}, Seeds: []uint64{1}}
	r := func(s string, lr float64, diverged bool, p1s ...float64) tune.Result {
		var e []runlog.Eval
		for i, p := range p1s {
			e = append(e, runlog.Eval{Fields: metric.Fields{P1: p, PSP5: p / 2}, TrainSeconds: float64(i + 1)})
		}
		best, _ := runlog.Best(e)
		return tune.Result{Strategy: s, LR: lr, Batch: 128, Seed: 1, Optimizer: "sgd", EffectiveLR: lr, BestP1: best.P1, PSP5: best.PSP5, Diverged: diverged, Evals: e}
	}
	results := []tune.Result{r("sync", 0.1, false, 0.3, 0.6), r("sync", 1, false, 0.5, 0.5), r("gem", 0.1, false, 0.2, 0.4), r("gem", 1, true, 0.45)}
	if err := tune.Summarize(results, 0.4).Write(os.Stdout, g); err != nil {
		panic(err)
	}
	// Output:
	// best P@1 (mean over 1 seed(s)) by learning rate; *: a run diverged (its best before diverging):
	//   strategy  batch     0.1        1
	//       sync    128  0.6000   0.5000
	//        gem    128  0.4000  0.4500*
	//
	// time to P@1 0.4000 in training seconds of the run's clock; — : not reached by every seed
	// shared: lr 0.1, batch 128                      | own best rate and batch
	//   strategy  best P@1  time to target  |   lr  batch  best P@1  PSP@5 there  time to target
	//       sync    0.6000               2  |  0.1    128    0.6000       0.3000               2
	//        gem    0.4000               2  |    1    128    0.4500       0.2250               1
}

// A write error of the tables is Write's.
func TestSummaryWriteError(t *testing.T) {
	g := tune.Grid{Strategies: []string{"sync"}, LRs: []float64{1}, Batches: []int{128}, Seeds: []uint64{1}}
	sum := tune.Summarize([]tune.Result{{Strategy: "sync", LR: 1, Batch: 128, Seed: 1, Optimizer: "sgd", BestP1: 0.5}}, 0)
	if err := sum.Write(failingWriter{}, g); !errors.Is(err, errFull) {
		t.Fatalf("Write to a full disk: %v", err)
	}
}

var errFull = errors.New("no space left on device")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errFull }

// ParseSeeds reads a comma-separated list; a word that is not a seed is a
// setting error naming the grid's seeds.
func TestParseSeeds(t *testing.T) {
	if got, err := tune.ParseSeeds("1, 2,30"); err != nil || !slices.Equal(got, []uint64{1, 2, 30}) {
		t.Fatalf("seeds %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,", "-1", "x"} {
		_, err := tune.ParseSeeds(bad)
		var se *setting.Error
		if !errors.As(err, &se) || !slices.Equal(se.Fields(), []string{"tune.Grid.Seeds"}) {
			t.Errorf("%q: %v, want an error naming Grid.Seeds", bad, err)
		}
	}
}

// CheckVariants refuses a variant that cannot run at a batch of the grid,
// naming it and the batch, before any data; a grid that cannot run at all
// is Validate's error.
func TestCheckVariants(t *testing.T) {
	base := engine.Config{Devices: 4, Speeds: []float64{1, 2}, Clock: engine.Virtual, Epochs: 1, EvalEvery: 0.5,
		Cost: cost.Default(), Net: comm.Model{Intra: comm.DefaultNetwork, Inter: comm.DefaultNetwork, AllReduce: comm.Ring}}
	g := tune.Grid{Strategies: []string{"sync"}, LRs: []float64{0.1}, Batches: []int{64}, Seeds: []uint64{1}}
	err := g.CheckVariants(base)
	var se *setting.Error
	if !errors.As(err, &se) || se.Fields()[0] != "tune.Grid.Strategies" || !strings.Contains(err.Error(), "sync, batch 64: engine:") {
		t.Errorf("4 devices at 2 speeds: %v", err)
	}
	base.Speeds = nil
	if err := g.CheckVariants(base); err != nil {
		t.Errorf("a grid that runs: %v", err)
	}
	g.Seeds = nil
	if err := g.CheckVariants(base); err == nil || err.Error() != g.Validate().Error() {
		t.Errorf("a grid without seeds: %v", err)
	}
}
