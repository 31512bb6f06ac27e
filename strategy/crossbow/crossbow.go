// Package crossbow is CROSSBOW's synchronous model averaging (SMA): every
// device keeps a replica w_j and the centre model z; each synchronisation
// computes a learner's gradient step and its correction towards the centre
// from the same iterate:
//
//	g_j = ∇L(w_j) on w_j's batch;  d_j = w_j − z
//	w_j ← w_j − lr·g_j − a·d_j;  D = Σ a·d_j + μ·D_prev;  z ← z + D
//
// with a = 1/n and momentum μ = 0.9 by default (SPEC §3). Accuracy is that
// of z. With τ > 1 the first τ−1 batches of a round are plain local steps and
// the τ-th is the combined one: its batch is computed in Gradient mode and
// the CenterSync applies it (through the device's optimizer, −lr·g_j being
// that optimizer's step) from the iterate d_j is measured on.
//
// --correct-after 1 takes the order this code used before: the τ-th batch is
// a local step too, and the correction is measured on the replica after it,
// d_j = w_j − lr·g_j − z, so the gradient and the correction come from
// different iterates. It changes what reaches the centre: in that order each
// D already holds −a·lr·Σ g_j, a synchronous gradient step on z; in the
// paper's, z learns of a gradient one synchronisation later, through the
// drift w_j − z it caused (with τ = 1 the run's first synchronisation, every
// replica at z, leaves z where it is).
//
// With one device there is nothing to average: a = 1 would swap the replica
// and the centre at every step, which is not a training algorithm, so a
// single-device CROSSBOW is plain mini-batch SGD on its replica (z follows it).
package crossbow

import (
	"github.com/hetsgd/hetsgd/strategy"
)

func init() {
	strategy.Register(strategy.Info{
		Name:      "crossbow",
		Summary:   "CROSSBOW synchronous model averaging: replicas pulled towards a centre model with momentum",
		Evaluates: strategy.Center,
		Defaults:  strategy.Settings{Optimizer: "adam", LR: 0.01, Batch: 128}, // BENCHMARKS.md §8
		Options: []strategy.Option{
			{Name: "tau", Default: 1, Range: strategy.Count(1, strategy.MaxCount), Usage: "local steps between synchronisations (τ)"},
			{Name: "a", Derive: func(c strategy.Config, _ map[string]float64) float64 { return 1 / float64(c.Devices) },
				Formula: "1/devices", Range: strategy.Fraction, Usage: "averaging coefficient"},
			{Name: "gamma", Default: 0.9, Range: strategy.Unit, Usage: "momentum of the centre model's update"},
			{Name: "correct-after", Default: 0, Range: strategy.Count(0, 1),
				Usage: "1: take the τ-th local step first and measure the correction w_j − z after it (0: the paper's order, gradient and correction from the same iterate)"},
		},
		New: New,
	})
}

type crossbowSGD struct {
	n, b, tau int
	lr, a, mu float64
	after     bool // correct after the local step (not the paper's order)
	steps     []int
	done      int
}

// New returns the crossbow strategy.
func New(cfg strategy.Config) (strategy.Strategy, error) {
	tau, a, mu, after := cfg.Opt("tau"), cfg.Opt("a"), cfg.Opt("gamma"), cfg.Opt("correct-after")
	return &crossbowSGD{n: cfg.Devices, b: cfg.Batch, tau: int(tau), lr: cfg.LR, a: a, mu: mu, after: after == 1,
		steps: make([]int, cfg.Devices)}, nil
}

// mode is how a device computes its batch after k of the round's: the last
// one, in the paper's order, only computes the gradient that the
// synchronisation applies. One device has no synchronisation: always a step.
func (c *crossbowSGD) mode(k int) strategy.Mode {
	if k == c.tau-1 && !c.after && c.n > 1 {
		return strategy.Gradient
	}
	return strategy.LocalStep
}

func (c *crossbowSGD) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start, strategy.CollectiveDone:
		clear(c.steps)
		c.done = 0
		return strategy.DispatchAll(out, c.n, c.b, c.lr, c.mode(0))
	case strategy.BatchDone:
		d := ev.Device
		if c.steps[d]++; c.steps[d] < c.tau {
			return append(out, strategy.Action{Kind: strategy.Dispatch, Device: d, Batch: c.b, LR: c.lr, Mode: c.mode(c.steps[d])})
		}
		if c.done++; c.done < c.n {
			return out
		}
		if c.n == 1 {
			// Plain SGD: the centre is the replica.
			return append(out, strategy.IdentityMerge())
		}
		sync := strategy.Action{Kind: strategy.CenterSync, A: c.a, Gamma: c.mu}
		if !c.after {
			sync.LR, sync.WithGradient = c.lr, true
		}
		out = append(out, sync)
	}
	return out
}
