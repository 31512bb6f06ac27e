// Package adacons is AdaCons (consensus-weighted gradient aggregation,
// synchronous): every step the devices compute gradients g_i from the same
// model; with ḡ their mean, each gets the consensus coefficient
//
//	c_i = ⟨g_i, ḡ⟩ / ‖g_i‖²
//
// the coefficients are smoothed by momentum on their *sorted* values —
// m ← βm + (1−β)·sort(c) — and each device receives back the smoothed value
// of its rank (a scatter through the sort permutation; the authors' code
// gathers instead, which differs for n ≥ 3); the weights are normalized to
// sum one and the update is ψ = Σ γ_i g_i. The paper leaves the momentum's
// starting value open; as in the authors' code it is the first step's sorted
// coefficients. (A zero start would, after the sum-one normalization, be a
// bias-corrected average that weights the first step no more than the
// next ones.)
//
// Guards: a zero gradient gets coefficient 0; when the weights' sum is zero
// or not finite the step falls back to plain averaging and says so in the
// run log. With equal gradients every c_i is 1 and AdaCons is averaging.
package adacons

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/hetsgd/hetsgd/strategy"
)

func init() {
	strategy.Register(strategy.Info{
		Name:      "adacons",
		Summary:   "AdaCons: synchronous aggregation weighted by consensus coefficients with sorted-coefficient momentum",
		Evaluates: strategy.Replica0,
		Options:   []strategy.Option{{Name: "beta", Default: 0.99, Usage: "momentum β of the sorted coefficients"}},
		Defaults:  strategy.Settings{Optimizer: "adam", LR: 1e-3, Batch: 128}, // BENCHMARKS.md §8
		New:       func(cfg strategy.Config) (strategy.Strategy, error) { return New(cfg) },
	})
}

// AdaCons is the strategy's state.
type AdaCons struct {
	n, b    int
	lr      float64
	beta    float64
	M       []float64 // smoothed sorted coefficients
	started bool      // M holds a first step's coefficients
	pending int
	perm    []int
	sorted  []float64
	weights []float64 // the step's weights (the action's, valid until the next Step)
	next    []float64 // the momentum's next value
}

// New returns AdaCons; --batch is the batch of each device.
func New(cfg strategy.Config) (*AdaCons, error) {
	beta := cfg.Opt("beta")
	if !(beta >= 0 && beta < 1) {
		return nil, fmt.Errorf("adacons: --beta %v: need β in [0, 1)", beta)
	}
	n := cfg.Devices
	return &AdaCons{n: n, b: cfg.Batch, lr: cfg.LR, beta: beta,
		M: make([]float64, n), perm: make([]int, n), sorted: make([]float64, n),
		weights: make([]float64, n), next: make([]float64, 0, n)}, nil
}

func (a *AdaCons) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start, strategy.CollectiveDone:
		a.pending = a.n
		return strategy.DispatchAll(out, a.n, a.b, a.lr, strategy.Gradient)
	case strategy.BatchDone:
		if a.pending--; a.pending == 0 {
			out = append(out, strategy.Action{Kind: strategy.QueryConsensus})
		}
	case strategy.Consensus:
		w, note := a.Weights(ev.Values)
		out = append(out, strategy.Action{Kind: strategy.AllReduce, LR: a.lr, Weights: w, Note: note})
	}
	return out
}

// Weights turns the step's consensus coefficients into aggregation weights,
// updating the momentum, and returns a note when it fell back to averaging.
func (a *AdaCons) Weights(c []float64) ([]float64, string) {
	// A zero gradient (NaN coefficient) contributes nothing.
	for i := range a.perm {
		a.perm[i] = i
	}
	coef := func(i int) float64 {
		if math.IsNaN(c[i]) {
			return 0
		}
		return c[i]
	}
	slices.SortStableFunc(a.perm, func(x, y int) int { return cmp.Compare(coef(x), coef(y)) })
	for r, i := range a.perm {
		a.sorted[r] = coef(i)
	}
	w, m := a.weights, a.next[:0]
	var sum float64
	for r := range a.sorted {
		v := a.sorted[r]
		if a.started {
			v = a.beta*a.M[r] + (1-a.beta)*v
		}
		m = append(m, v)
		w[a.perm[r]] = v // scatter: device perm[r] has rank r
		sum += v
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		for i := range w {
			w[i] = 1 / float64(a.n)
		}
		return w, fmt.Sprintf("consensus weights sum to %v: this step falls back to averaging", sum)
	}
	copy(a.M, m)
	a.started = true
	for i := range w {
		w[i] /= sum
	}
	return w, ""
}
