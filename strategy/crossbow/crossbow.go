// Package crossbow is CROSSBOW's synchronous model averaging (SMA): every
// device keeps a replica and the centre model z; after every τ local steps
//
//	d_j = w_j − z;  w_j ← w_j − a·d_j;  D = Σ a·d_j + μ·D_prev;  z ← z + D
//
// with a = 1/n and momentum μ = 0.9 by default (SPEC §3). Accuracy is that of z.
//
// With one device there is nothing to average: a = 1 would swap the replica
// and the centre at every step, which is not a training algorithm, so a
// single-device CROSSBOW is plain mini-batch SGD on its replica (z follows it).
package crossbow

import (
	"fmt"
	"math"

	"github.com/hetsgd/hetsgd/strategy"
)

func init() {
	strategy.Register(strategy.Info{
		Name:      "crossbow",
		Summary:   "CROSSBOW synchronous model averaging: replicas pulled towards a centre model with momentum",
		Evaluates: strategy.Center,
		Defaults:  strategy.Settings{Optimizer: "adam", LR: 1e-3, Batch: 128}, // BENCHMARKS.md §8
		Options: []strategy.Option{
			{Name: "tau", Default: 1, Usage: "local steps between synchronisations (τ)"},
			{Name: "a", Derive: func(c strategy.Config, _ map[string]float64) float64 { return 1 / float64(c.Devices) },
				Formula: "1/devices", Usage: "averaging coefficient"},
			{Name: "gamma", Default: 0.9, Usage: "momentum of the centre model's update"},
		},
		New: New,
	})
}

type crossbowSGD struct {
	n, b, tau int
	lr, a, mu float64
	steps     []int
	done      int
}

// New returns the crossbow strategy.
func New(cfg strategy.Config) (strategy.Strategy, error) {
	tau, a, mu := cfg.Opt("tau"), cfg.Opt("a"), cfg.Opt("gamma")
	switch {
	case tau < 1 || tau != math.Trunc(tau):
		return nil, fmt.Errorf("crossbow: --tau %v: need a whole number of steps ≥ 1", tau)
	case !(a > 0 && a <= 1):
		return nil, fmt.Errorf("crossbow: --a %v: need a coefficient in (0, 1]", a)
	case !(mu >= 0 && mu < 1):
		return nil, fmt.Errorf("crossbow: --gamma %v: need a momentum in [0, 1)", mu)
	}
	return &crossbowSGD{n: cfg.Devices, b: cfg.Batch, tau: int(tau), lr: cfg.LR, a: a, mu: mu, steps: make([]int, cfg.Devices)}, nil
}

func (c *crossbowSGD) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start, strategy.CollectiveDone:
		clear(c.steps)
		c.done = 0
		return strategy.DispatchAll(out, c.n, c.b, c.lr, strategy.LocalStep)
	case strategy.BatchDone:
		d := ev.Device
		if c.steps[d]++; c.steps[d] < c.tau {
			return append(out, strategy.Action{Kind: strategy.Dispatch, Device: d, Batch: c.b, LR: c.lr})
		}
		if c.done++; c.done < c.n {
			return out
		}
		if c.n == 1 {
			// Plain SGD: the centre is the replica.
			return append(out, strategy.IdentityMerge())
		}
		out = append(out, strategy.Action{Kind: strategy.CenterSync, A: c.a, Gamma: c.mu})
	}
	return out
}
