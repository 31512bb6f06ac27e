package tune_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/runlog"
	_ "github.com/hetsgd/hetsgd/strategy/all"
	"github.com/hetsgd/hetsgd/tune"
	"github.com/hetsgd/hetsgd/workload"
)

func evals(p1s ...float64) []runlog.Eval {
	var out []runlog.Eval
	for i, p := range p1s {
		out = append(out, runlog.Eval{Fields: metric.Fields{P1: p}, TrainSeconds: float64(i + 1)})
	}
	return out
}

// Both protocols on a hand-made grid: sync is best at 0.1, gem at 1; the
// shared rate among the powers of ten is the one with the best mean (1:
// (0.5 + 0.6)/2 against 0.1: (0.6 + 0.2)/2), and the half step 0.316 is
// never shared although gem is best there.
func TestSummarize(t *testing.T) {
	r := func(s string, lr float64, seed uint64, p1s ...float64) tune.Result {
		e := evals(p1s...)
		best, _ := runlog.Best(e)
		return tune.Result{Strategy: s, LR: lr, Batch: 128, Seed: seed, Optimizer: "sgd", BestP1: best.P1, Evals: e}
	}
	results := []tune.Result{
		r("sync", 0.1, 1, 0.3, 0.6), r("sync", 0.1, 2, 0.4, 0.6),
		r("sync", 1, 1, 0.5, 0.4), r("sync", 1, 2, 0.5, 0.5),
		r("gem", 0.1, 1, 0.1, 0.2), r("gem", 0.1, 2, 0.1, 0.2),
		r("gem", 0.316, 1, 0.7, 0.7), r("gem", 0.316, 2, 0.3, 0.7),
		r("gem", 1, 1, 0.2, 0.6), r("gem", 1, 2, 0.6, 0.6),
	}
	sum := tune.Summarize(results, 0.55)
	if sum.SharedLR != 1 || sum.SharedBatch != 128 || len(sum.Shared) != 2 {
		t.Fatalf("shared %g/%d %+v", sum.SharedLR, sum.SharedBatch, sum.Shared)
	}
	want := map[string]tune.Point{
		"sync": {Strategy: "sync", LR: 0.1, Batch: 128, BestP1: 0.6, TTA: 2, Reached: true, Seeds: 2},
		"gem":  {Strategy: "gem", LR: 0.316, Batch: 128, BestP1: 0.7, TTA: 1.5, Reached: true, Seeds: 2},
	}
	for _, p := range sum.Own {
		w := want[p.Strategy]
		if math.Abs(p.BestP1-w.BestP1) > 1e-12 || p.LR != w.LR || p.Reached != w.Reached || math.Abs(p.TTA-w.TTA) > 1e-12 {
			t.Errorf("own %s: %+v, want %+v", p.Strategy, p, w)
		}
	}
	// sync at the shared rate: seed 1 never reaches 0.55.
	if s := sum.Shared[0]; s.Strategy != "sync" || s.Reached || math.Abs(s.BestP1-0.5) > 1e-12 {
		t.Errorf("shared sync %+v", s)
	}
	// The default target is 90% of the best mean P@1.
	if got := tune.Summarize(results, 0).Target; math.Abs(got-0.63) > 1e-12 {
		t.Errorf("default target %v, want 0.63", got)
	}
	// Different local optimizers share no rate.
	results[0].Optimizer = "adam"
	if s := tune.Summarize(results, 0.5); s.Shared != nil || s.SharedNote == "" {
		t.Errorf("mixed optimizers: %+v", s)
	}
}

func TestParseRates(t *testing.T) {
	got, err := tune.ParseRates("1e-3:1")
	want := []float64{0.001, 0.00316, 0.01, 0.0316, 0.1, 0.316, 1}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("range: %v %v, want %v", got, err, want)
	}
	if got, err := tune.ParseRates("0.316:3.16"); err != nil || !slices.Equal(got, []float64{0.316, 1, 3.16}) {
		t.Fatalf("rounded ends: %v %v", got, err)
	}
	if got, err := tune.ParseRates("0.5, 2"); err != nil || !slices.Equal(got, []float64{0.5, 2}) {
		t.Fatalf("list: %v %v", got, err)
	}
	for _, bad := range []string{"", "0", "-1", "1:0.1", "a:b", "0:1", "x", "Inf", "NaN"} {
		if _, err := tune.ParseRates(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// bibtex16 is the grid tests' workload: Bibtex, one hidden layer of 16,
// 200 test points.
func bibtex16(t *testing.T) *workload.XML {
	t.Helper()
	tr, te, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.NewXML(tr, te, []int{16}, 0, 200, 256)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A tiny grid runs end to end: a result per point in the grid's order,
// parameter servers on their own update, and a summary of both protocols.
func TestRunGrid(t *testing.T) {
	w := bibtex16(t)
	base := engine.Config{Devices: 2, Clock: engine.Virtual, Epochs: 0.5, EvalEvery: 0.25, Optimizer: optim.Config{Name: "momentum"},
		Cost: cost.Default(), Net: comm.Model{Intra: comm.DefaultNetwork, Inter: comm.DefaultNetwork, AllReduce: comm.Ring}}
	g := tune.Grid{Strategies: []string{"sync", "gem"}, LRs: []float64{0.1, 1}, Batches: []int{64}, Seeds: []uint64{1}}
	var seen []string
	var told runs
	res, err := tune.Run(context.Background(), base, w, g, func(r tune.Result) error {
		seen = append(seen, fmt.Sprintf("%s/%g/%s", r.Strategy, r.LR, r.Optimizer))
		return nil
	}, &told)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sync/0.1/momentum", "sync/1/momentum", "gem/0.1/sgd", "gem/1/sgd"}; !slices.Equal(seen, want) {
		t.Fatalf("runs %v, want %v", seen, want)
	}
	// The grid is one stage of 4 runs: each run named as it starts, its
	// share rising within it, and counted whole at its end.
	if told.stage != "runs 4 runs" || !slices.IsSorted(told.done) || told.done[len(told.done)-1] != 4 {
		t.Errorf("told stage %q, done %v", told.stage, told.done)
	}
	if want := []string{"sync lr 0.1 batch 64 seed 1", "sync lr 0.1 batch 64 seed 1: best P@1", "sync lr 1 batch 64 seed 1", "sync lr 1 batch 64 seed 1: best P@1",
		"gem lr 0.1 batch 64 seed 1", "gem lr 0.1 batch 64 seed 1: best P@1", "gem lr 1 batch 64 seed 1", "gem lr 1 batch 64 seed 1: best P@1"}; len(told.details) != len(want) {
		t.Errorf("details %q", told.details)
	} else {
		for i := range want {
			if !strings.HasPrefix(told.details[i], want[i]) {
				t.Errorf("detail %d: %q, want %q…", i, told.details[i], want[i])
			}
		}
	}
	if fractions := slices.ContainsFunc(told.done, func(d float64) bool { return d != float64(int(d)) }); !fractions {
		t.Errorf("no share of a run was reported: %v", told.done)
	}
	for _, r := range res {
		if len(r.Evals) == 0 || !(r.BestP1 > 0.02) {
			t.Errorf("%s at %g: best P@1 %v over %d evaluations", r.Strategy, r.LR, r.BestP1, len(r.Evals))
		}
	}
	sum := tune.Summarize(res, 0)
	if len(sum.Own) != 2 || len(sum.Points) != 4 {
		t.Fatalf("summary %+v", sum)
	}
	if err := (tune.Grid{Strategies: []string{"nope"}, LRs: []float64{1}, Batches: []int{1}, Seeds: []uint64{1}}).Validate(); err == nil {
		t.Error("unknown strategy accepted")
	}
}

func TestParseVariant(t *testing.T) {
	v, err := tune.ParseVariant("adaptive[renorm=0, gamma=0.5,optimizer=adam,lr=0.01]")
	if err != nil || v.Strategy != "adaptive" || len(v.Options) != 2 || v.Options["renorm"] != 0 || v.Options["gamma"] != 0.5 || v.Optimizer != "adam" || v.LR != 0.01 {
		t.Fatalf("variant: %+v %v", v, err)
	}
	if v, err := tune.ParseVariant("sync"); err != nil || v.Strategy != "sync" || v.Options != nil || v.Optimizer != "" || v.LR != 0 {
		t.Fatalf("plain name: %+v %v", v, err)
	}
	for bad, msg := range map[string]string{
		"nope[k=1]":                   `unknown strategy "nope"`,
		"elastic[gamma=1]":            `elastic has no option "gamma"`,
		"elastic[k]":                  `"k" is not setting=value`,
		"elastic[k=x]":                `"k=x" is not setting=number`,
		"elastic[k=1":                 "want NAME or NAME[setting=value,...]",
		"elastic[k=1][k=2]":           "want NAME or NAME[setting=value,...]",
		"adaptive[delta=0,delta=0.1]": `"delta" given twice`,
		"sync[optimizer=rmsprop]":     "unknown optimizer",
		"sync[lr=0]":                  "lr=0 is not a positive learning rate",
	} {
		if _, err := tune.ParseVariant(bad); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want an error with %q", bad, err, msg)
		}
	}
	got := tune.SplitStrategies("sync, adaptive[renorm=0,gamma=0],elastic")
	if want := []string{"sync", "adaptive[renorm=0,gamma=0]", "elastic"}; !slices.Equal(got, want) {
		t.Fatalf("split %q, want %q", got, want)
	}
	if got, err := tune.ParseRates("default"); err != nil || !slices.Equal(got, []float64{0}) {
		t.Fatalf("default rate: %v %v", got, err)
	}
}

// An ablation is a grid of variants at their default rates: each variant's
// options reach its runs, and the rate each run took is recorded.
func TestRunVariantsAtDefaultRates(t *testing.T) {
	w := bibtex16(t)
	base := engine.Config{Devices: 2, Clock: engine.Virtual, Epochs: 0.5, EvalEvery: 0.25,
		Cost: cost.Default(), Net: comm.Model{Intra: comm.DefaultNetwork, Inter: comm.DefaultNetwork, AllReduce: comm.Ring}}
	g := tune.Grid{Strategies: []string{"elastic", "elastic[k=1]", "elastic[optimizer=sgd,lr=0.5]"}, LRs: []float64{0}, Batches: []int{64}, Seeds: []uint64{1}}
	res, err := tune.Run(context.Background(), base, w, g, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := base
	want.Strategy, want.Batch = "elastic", 64
	eff, err := want.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].EffectiveLR != eff.LR || res[1].EffectiveLR != eff.LR || res[0].Optimizer != eff.Optimizer.Name {
		t.Fatalf("results %+v, want both at elastic's default %s rate %g", res, eff.Optimizer.Name, eff.LR)
	}
	if res[0].BestP1 == res[1].BestP1 && res[0].TrainSeconds == res[1].TrainSeconds {
		t.Errorf("elastic and elastic[k=1] ran the same: %+v", res)
	}
	if r := res[2]; r.Optimizer != "sgd" || r.EffectiveLR != 0.5 || r.LR != 0 {
		t.Errorf("elastic[optimizer=sgd,lr=0.5] ran %s at %g (grid rate %g)", r.Optimizer, r.EffectiveLR, r.LR)
	}
	if sum := tune.Summarize(res[:2], 0); sum.Shared != nil || !strings.Contains(sum.SharedNote, "default rate") {
		t.Errorf("default rates shared: %+v", sum)
	}
}

func ExampleParseRates() {
	rates, _ := tune.ParseRates("0.01:1")
	fmt.Println(rates)
	// Output: [0.01 0.0316 0.1 0.316 1]
}

// runs records what a stage.Reporter is told.
type runs struct {
	stage   string
	done    []float64
	details []string
}

func (r *runs) Stage(name string, total float64, unit string) {
	r.stage = fmt.Sprintf("%s %g %s", name, total, unit)
}
func (r *runs) Update(done float64, detail string) {
	r.done = append(r.done, done)
	if detail != "" {
		r.details = append(r.details, detail)
	}
}
