// Package diloco is DiLoCo (Douillard et al., 2023, "DiLoCo: Distributed
// Low-Communication Training of Language Models"): each device takes H
// steps of its own (inner) optimizer from the global model θ, then the
// devices' mean displacement is the outer gradient
//
//	Δ = (1/k) Σ_i (θ − θ_i)
//
// which an outer Nesterov momentum step applies to θ (PyTorch's SGD with
// nesterov, as the asynchronous Local-SGD paper's eq. 4 writes it):
//
//	v ← μ·v + Δ;  θ ← θ − η·(Δ + μ·v)
//
// and every device restarts from θ. The paper's outer rate η = 0.7 is the
// default; its momentum μ = 0.9 reached the grid's target later than 0.5
// on Bibtex and Delicious (BENCHMARKS.md §15), so the default is 0.5. Its
// H = 500 inner steps is a run of 88,000 steps, so here H defaults to the
// mega-batch the other model-averaging strategies share (elastic's k), for
// a comparison at equal communication. The paper's inner optimizer is
// AdamW: the default is Adam. --paper takes μ 0.9 and H 500.
// Accuracy is that of θ.
//
// The arithmetic is this package's op, OuterOp; the strategy is the round
// of elastic averaging (strategy.Rounds), ended by the outer step. With one device Δ is that device's own
// displacement, and DiLoCo is not plain SGD (the outer step scales and
// accelerates it). When a device leaves the run (strategy.Leave) the round
// averages the devices still in it, weight 1/live each.
package diloco

import (
	"fmt"
	"math"
	"slices"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/strategy"
)

func init() {
	strategy.Register(strategy.Info{
		Name:      "diloco",
		Summary:   "DiLoCo: H inner steps per device, then an outer Nesterov step on the mean displacement",
		Evaluates: strategy.Center,
		Options: slices.Concat(
			[]strategy.Option{strategy.RoundStepsOption("h", "the paper's H is 500 inner steps, in runs of 88,000",
				"inner steps per device between outer steps (by default elastic's k: the same communication)")},
			strategy.OuterOptions("outer learning rate η", 0.5,
				"the paper's μ is 0.9, which reached the grid's target later or not at all on Bibtex and Delicious (BENCHMARKS.md §15)",
				"outer Nesterov momentum μ")),
		Defaults: strategy.Settings{Optimizer: "adam", LR: 0.01, Batch: 128}, // elastic's (BENCHMARKS.md §8); see §15
		Paper:    &strategy.Preset{Source: "DiLoCo, Douillard et al. 2023, §3 (outer η 0.7, μ 0.9, H 500; inner AdamW)", Options: map[string]float64{"h": 500, "outer-momentum": 0.9}},
		New:      New,
	})
	strategy.RegisterOp(OuterOp, func() strategy.Op { return &outer{} })
}

// New returns the DiLoCo strategy: rounds of H inner steps, each ended by
// the outer step (OuterOp) over the replicas' mean.
func New(cfg strategy.Config) (strategy.Strategy, error) {
	eta, mu := cfg.Opt("outer-lr"), cfg.Opt("outer-momentum")
	return strategy.NewRounds("diloco", cfg.Devices, cfg.Batch, int(cfg.Opt("h")), cfg.LR,
		func(w []float64) strategy.Action { return Outer(w, eta, mu) }), nil
}

// OuterOp is DiLoCo's outer step, a Collective with the devices' Weights
// (their mean: 1/live each), outer rate η = Params[0] and momentum
// μ = Params[1]. Its momentum v is the op's vector beside the centre.
const OuterOp = "diloco-outer"

// Outer returns a Collective of OuterOp.
func Outer(weights []float64, eta, mu float64) strategy.Action {
	a := strategy.Action{Kind: strategy.Collective, Op: OuterOp, Weights: weights}
	a.Params[0], a.Params[1] = eta, mu
	return a
}

// outer is OuterOp on one rank: every rank computes the same mean, step and
// momentum from one all-reduce.
type outer struct {
	w    []float32
	vecs [][]float32
}

func (*outer) Format(a *strategy.Action) string {
	return fmt.Sprintf("diloco-outer weights=%s outer-lr=%s momentum=%s", strategy.Gs(a.Weights), strategy.G(a.Params[0]), strategy.G(a.Params[1]))
}

// Cost: the mean's all-reduce, and a few passes to form Δ, v and θ.
func (*outer) Cost(*strategy.Action) strategy.Cost { return strategy.Cost{AllReduces: 1, Passes: 3} }

func (*outer) Check(a *strategy.Action, n int) error { return CheckOuter(a, n) }

// CheckOuter checks an outer step's action on n devices: the rate η in
// Params[0] and momentum μ in Params[1] that Nesterov takes, and a weight
// per device (Streaming DiLoCo's op checks its own the same way).
func CheckOuter(a *strategy.Action, n int) error {
	if eta, mu := a.Params[0], a.Params[1]; !(eta > 0) || math.IsInf(eta, 0) || !(mu >= 0 && mu < 1) {
		return fmt.Errorf("outer rate %v and momentum %v, want a rate > 0 and momentum in [0, 1)", eta, mu)
	}
	if len(a.Weights) != n {
		return fmt.Errorf("%d weights for %d devices", len(a.Weights), n)
	}
	return nil
}

func (o *outer) Collect(h strategy.Host, a *strategy.Action) error {
	theta := h.Center()
	if theta == nil {
		return nil
	}
	eta, mu := float32(a.Params[0]), float32(a.Params[1])
	o.w, o.vecs = o.w[:0], o.vecs[:0]
	for _, r := range h.Replicas() {
		o.w = append(o.w, float32(a.Weights[r.ID()]))
		o.vecs = append(o.vecs, r.Params())
	}
	delta := h.Scratch()
	if err := h.WeightedAllReduce(delta, o.w, o.vecs); err != nil {
		return fmt.Errorf("averaging the replicas: %w", err)
	}
	// Δ = θ − mean, in place of the mean.
	kernel.Scal(-1, delta)
	kernel.Axpy(1, theta, delta)
	Nesterov(theta, delta, h.CenterState(), eta, mu)
	for _, r := range h.Replicas() {
		copy(r.Params(), theta)
	}
	return nil
}

// Nesterov is the outer step: with outer gradient delta, momentum v,
// rate eta and momentum mu, v ← μ·v + Δ and θ ← θ − η·(Δ + μ·v), in place
// (Streaming DiLoCo takes it on each fragment).
func Nesterov(theta, delta, v []float32, eta, mu float32) {
	kernel.Scal(mu, v)
	kernel.Axpy(1, delta, v)
	kernel.Axpy(-eta, delta, theta)
	kernel.Axpy(-eta*mu, v, theta)
}
