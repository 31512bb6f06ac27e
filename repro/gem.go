package repro

import (
	"context"
	"fmt"
	"math"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/report"
)

var psStrategies = []string{"gem", "downpour", "staleness"}

// GEM reproduces the Gradient Energy Matching paper's MNIST experiments
// (§4.1–4.2) on set (MNIST through the papers' MLP).
func GEM(ctx context.Context, rep *report.Dir, set Set, opt Options) error {
	opt.Reuse = false // the analysis reads counts a run log does not hold
	r, err := newRunner(rep, opt)
	if err != nil {
		return err
	}
	rep.Printf(`# GEM, DOWNPOUR and adaptive staleness

Reproduction of "Gradient Energy Matching for Distributed Asynchronous
Gradient Descent" (§4.1–4.2) on MNIST, with the papers' MLP (784 inputs,
hidden 128, 10 classes) in place of the paper's small convolutional network.
Asynchronous parameter server in virtual time: every worker pulls θ, computes
Δ = −η∇L on its batch of 64, commits; commits and pulls queue on the server's
link (10 µs, 10 GB/s), so staleness emerges from the workers' speeds (all 1,
with 5%% noise per batch). η = 0.05, μ = 0.9, κ = 1, ε = 1e-12, π clamped to
[0, 5]; every worker contributes one epoch of data (the run processes n
epochs). Training loss is the mean loss of the batches committed since the
previous evaluation (each computed on the worker's stale copy), as the paper
plots at the master; test loss and accuracy are the centre model's.

`)
	counts := []int{5, 10, 20, 30}
	if opt.Quick {
		counts = []int{5}
	}
	base := func(strat string, n, batch int, lr float64) engine.Config {
		return engine.Config{Strategy: strat, Devices: n, Batch: batch, LR: lr, Optimizer: optim.Config{Name: "sgd"},
			Clock: engine.Virtual, Epochs: float64(n), EvalEvery: max(0.25, float64(n)/20), Seed: opt.Seed,
			Cost: cost.Default(), Net: comm.DefaultModel, Noise: engine.DefaultNoise}
	}
	if opt.Quick {
		base0 := base
		base = func(strat string, n, batch int, lr float64) engine.Config {
			c := base0(strat, n, batch, lr)
			c.Epochs = 0.5
			c.EvalEvery = 0.1
			return c
		}
	}

	// Stability over the number of workers (Fig. 1) and at 100 (Fig. 2).
	rep.Printf("## Training loss against the number of workers (Fig. 1, 2, 3)\n\n")
	t := &report.Table{Header: []string{"workers", "strategy", "final train loss", "final test loss", "test accuracy", "mean staleness", "median π (last)", "diverged"}}
	all := append(append([]int{}, counts...), 100)
	if opt.Quick {
		all = counts
	}
	final := map[string]map[int]float64{}
	var piSeries []report.Series
	for _, strat := range psStrategies {
		final[strat] = map[int]float64{}
		var lossS []report.Series
		for _, n := range all {
			res, div, err := r.runPS(ctx, fmt.Sprintf("gem-%s-%d", strat, n), set, base(strat, n, 64, 0.05))
			if err != nil {
				return err
			}
			row, fl := psRow(n, strat, res, div)
			t.Add(row...)
			final[strat][n] = fl
			var x, y, pt, pv []float64
			for _, e := range res.Evals {
				x = append(x, float64(e.Samples)/float64(n*64)) // steps per worker
				y = append(y, e.TrainLoss)
			}
			lossS = append(lossS, report.Series{Name: fmt.Sprintf("%d workers", n), X: x, Y: y})
			if strat == "gem" {
				for _, a := range res.Async {
					if a.MedianPi != nil {
						pt = append(pt, a.Time)
						pv = append(pv, *a.MedianPi)
					}
				}
				piSeries = append(piSeries, report.Series{Name: fmt.Sprintf("%d workers", n), X: pt, Y: pv})
			}
		}
		if err := rep.Figure("gem-loss-"+strat, report.Plot{Title: strat + ": training loss against steps per worker", X: "steps per worker (batches of 64)", Y: "training loss (cross-entropy)", Series: lossS}); err != nil {
			return err
		}
	}
	rep.Table(t)
	if err := rep.Figure("gem-median-pi", report.Plot{Title: "GEM: median scaling factor π against time (Fig. 3)", X: "training time (virtual seconds)", Y: "median π (scaling factor)", Series: piSeries}); err != nil {
		return err
	}
	if !opt.Quick {
		g, d := final["gem"][100], final["downpour"][100]
		rep.Printf("Bar — at 100 workers GEM stays finite and converges where DOWNPOUR diverges or stalls: %s (GEM final training loss %.4f, DOWNPOUR %s).\n\n",
			yesNo(!math.IsNaN(g) && g < 0.5 && (math.IsNaN(d) || d > 2*g)), g, lossText(d))
	}

	// Misspecified learning rate (Fig. 6).
	n := 20
	if opt.Quick {
		n = 5
	}
	rep.Printf("## Misspecified learning rate η = 0.1 (Fig. 6), %d workers\n\n", n)
	t = &report.Table{Header: t.Header}
	var series []report.Series
	for _, strat := range []string{"gem", "downpour"} {
		res, div, err := r.runPS(ctx, fmt.Sprintf("gem-lr0p1-%s-%d", strat, n), set, base(strat, n, 64, 0.1))
		if err != nil {
			return err
		}
		row, _ := psRow(n, strat, res, div)
		t.Add(row...)
		var x, y []float64
		for _, e := range res.Evals {
			x = append(x, float64(e.Samples)/float64(n*64))
			y = append(y, e.TrainLoss)
		}
		series = append(series, report.Series{Name: strat, X: x, Y: y})
	}
	rep.Table(t)
	if err := rep.Figure("gem-lr0p1", report.Plot{Title: fmt.Sprintf("η = 0.1, %d workers: training loss against steps", n), X: "steps per worker (batches of 64)", Y: "training loss (cross-entropy)", Series: series}); err != nil {
		return err
	}

	// Speed-up by splitting an effective batch (Fig. 4).
	splits := []int{1, 2, 4, 8, 16}
	if opt.Quick {
		splits = []int{1, 2}
	}
	rep.Printf("## Speed-up by splitting an effective batch of 256 (Fig. 4)\n\nGEM with n workers of batch 256/n, 5 epochs in all; the time to reach a training loss of 0.2 against one worker's.\n\n")
	t = &report.Table{Header: []string{"workers", "batch", "virtual s to train loss 0.2", "speed-up", "final test accuracy"}}
	series = nil
	var t1 float64
	for _, k := range splits {
		c := base("gem", k, 256/k, 0.05)
		c.Epochs, c.EvalEvery = 5, 0.1
		if opt.Quick {
			c.Epochs = 0.5
		}
		res, _, err := r.runPS(ctx, fmt.Sprintf("gem-split-%d", k), set, c)
		if err != nil {
			return err
		}
		tt := math.NaN()
		for _, e := range res.Evals {
			if e.TrainLoss > 0 && e.TrainLoss <= 0.2 {
				tt = e.TrainSeconds
				break
			}
		}
		if k == 1 {
			t1 = tt
		}
		last := res.Evals[len(res.Evals)-1]
		t.Add(k, 256/k, tt, t1/tt, last.P1)
		x, y := timeCurveLoss(res)
		series = append(series, report.Series{Name: fmt.Sprintf("%d × %d", k, 256/k), X: x, Y: y})
	}
	rep.Table(t)
	return rep.Figure("gem-speedup", report.Plot{Title: "GEM, effective batch 256: training loss against time", X: "training time (virtual seconds, log scale)", Y: "training loss (cross-entropy)", Series: series, LogX: true})
}

// runPS runs a parameter-server configuration; a diverged run is a result.
func (r *runner) runPS(ctx context.Context, name string, set Set, c engine.Config) (*engine.Result, bool, error) {
	res, err := r.run(ctx, name, set, c)
	if err != nil {
		return nil, false, err
	}
	div := len(res.Evals) == 0 || math.IsNaN(res.Evals[len(res.Evals)-1].TrainLoss)
	return res, div || res.Diverged, nil
}

func psRow(n int, strat string, res *engine.Result, diverged bool) ([]any, float64) {
	fl, tl, acc := math.NaN(), math.NaN(), math.NaN()
	if len(res.Evals) > 0 {
		last := res.Evals[len(res.Evals)-1]
		fl, tl, acc = last.TrainLoss, last.Loss, last.P1
	}
	var commits, tau int64
	for s, c := range res.Taus {
		commits += c
		tau += int64(s) * c
	}
	pi := math.NaN()
	if len(res.Async) > 0 && res.Async[len(res.Async)-1].MedianPi != nil {
		pi = *res.Async[len(res.Async)-1].MedianPi
	}
	if diverged {
		fl = math.NaN()
	}
	return []any{n, strat, fl, tl, acc, float64(tau) / float64(max(commits, 1)), pi, diverged}, fl
}

func lossText(v float64) string {
	if math.IsNaN(v) {
		return "diverged"
	}
	return fmt.Sprintf("%.4f", v)
}

func timeCurveLoss(res *engine.Result) (x, y []float64) {
	for _, e := range res.Evals {
		x = append(x, e.TrainSeconds)
		y = append(y, e.TrainLoss)
	}
	return x, y
}
