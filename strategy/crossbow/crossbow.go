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
// the synchronisation (SyncOp) applies it (through the device's optimizer, −lr·g_j being
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
//
// When a device leaves the run (strategy.Leave) the synchronisation waits
// only for the devices still in it (at once, if only the device that left
// was still working) and corrects only them. a multiplies each live
// device's correction, so with fewer devices the centre would be pulled
// less: a becomes min(1, a·n/live), which keeps the total pull Σ_live a of
// the n devices (1 with the default a = 1/n, z then moving by the live
// replicas' mean drift), capped at a = 1, the whole drift. Once a single
// device remains CROSSBOW is what it is on one device, plain SGD with z
// following the replica; a round under way when the last but one device
// left ends with one more synchronisation if the survivor computed its
// batch for it.
package crossbow

import (
	"fmt"

	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

func init() {
	strategy.Register(strategy.Info{
		Name:      "crossbow",
		Summary:   "CROSSBOW synchronous model averaging: replicas pulled towards a centre model with momentum",
		Evaluates: strategy.Center,
		Defaults:  strategy.Settings{Optimizer: "adam", LR: 0.01, Batch: 128, MaxLR: 0.0316}, // BENCHMARKS.md §8
		Options: []strategy.Option{
			{Name: "tau", Default: 1, Range: setting.Count(1, setting.MaxCount), Usage: "local steps between synchronisations (τ)"},
			{Name: "a", Derive: func(c strategy.Config, _ map[string]float64) float64 { return 1 / float64(c.Devices) },
				Formula: "1/devices", Range: setting.Fraction, Usage: "averaging coefficient"},
			{Name: "gamma", Default: 0.9, Range: setting.Unit, Usage: "momentum of the centre model's update"},
			{Name: "correct-after", Default: 0, Range: setting.Count(0, 1),
				Usage: "1: take the τ-th local step first and measure the correction w_j − z after it (0: the paper's order, gradient and correction from the same iterate)"},
		},
		New: New,
	})
}

type crossbowSGD struct {
	n, b, tau int
	lr, a, mu float64
	after     bool // correct after the local step (not the paper's order)
	members   strategy.Members
	steps     []int
	gradient  []bool // the device's τ-th batch of the round is in Gradient mode
	done      int    // devices in the run that took their τ steps
	round     bool   // a round is under way: its synchronisation is not yet asked for
}

// New returns the crossbow strategy.
func New(cfg strategy.Config) (strategy.Strategy, error) {
	tau, a, mu, after := cfg.Opt("tau"), cfg.Opt("a"), cfg.Opt("gamma"), cfg.Opt("correct-after")
	return &crossbowSGD{n: cfg.Devices, b: cfg.Batch, tau: int(tau), lr: cfg.LR, a: a, mu: mu, after: after == 1,
		members: strategy.NewMembers(cfg.Devices), steps: make([]int, cfg.Devices), gradient: make([]bool, cfg.Devices)}, nil
}

// mode is how a device computes its batch after k of the round's: the last
// one, in the paper's order, only computes the gradient that the
// synchronisation applies. One device has no synchronisation: always a step.
func (c *crossbowSGD) mode(k int) strategy.Mode {
	if k == c.tau-1 && !c.after && c.members.Live() > 1 {
		return strategy.Gradient
	}
	return strategy.LocalStep
}

func (c *crossbowSGD) dispatch(out []strategy.Action, d int) []strategy.Action {
	m := c.mode(c.steps[d])
	c.gradient[d] = m == strategy.Gradient
	return append(out, strategy.Action{Kind: strategy.Dispatch, Device: d, Batch: c.b, LR: c.lr, Mode: m})
}

func (c *crossbowSGD) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start, strategy.CollectiveDone:
		clear(c.steps)
		c.done, c.round = 0, true
		for d := range c.n {
			if c.members.In(d) {
				out = c.dispatch(out, d)
			}
		}
		return out
	case strategy.BatchDone:
		d := ev.Device
		if !c.members.In(d) {
			panic(fmt.Sprintf("crossbow: BatchDone from device %d, which is not in the run", d))
		}
		if c.steps[d]++; c.steps[d] < c.tau {
			return c.dispatch(out, d)
		}
		c.done++
		return c.sync(out)
	case strategy.Leave:
		d := ev.Device
		if !c.members.Leave(d) {
			return out // already gone, or no device
		}
		if c.steps[d] >= c.tau {
			c.done-- // its replica, done or not, is not synchronised
		}
		return c.sync(out)
	}
	return out
}

// sync asks for the round's synchronisation once every device in the run
// took its τ steps.
func (c *crossbowSGD) sync(out []strategy.Action) []strategy.Action {
	live := c.members.Live()
	if !c.round || c.done < live {
		return out
	}
	c.round = false
	// With more than one device every live one computed its τ-th batch in
	// the same mode; with one left, the survivor may hold a gradient from
	// before the others left.
	gradient := false
	for d := range c.n {
		gradient = gradient || c.members.In(d) && c.gradient[d]
	}
	switch {
	case c.n == 1:
		// Plain SGD: the centre is the replica.
		return append(out, strategy.IdentityMerge())
	case live == 1 && !gradient:
		// The last device left: plain SGD, the centre follows it.
		return append(out, strategy.Merge(c.members.Uniform(make([]float64, c.n)), 0))
	}
	// a weighs each live device's correction: rescaled by n/live it keeps
	// the total pull Σ_live a that the n devices had (a·n), up to a = 1.
	a := c.a
	if live < c.n {
		a = min(1, c.a*float64(c.n)/float64(live))
	}
	return append(out, Sync(a, c.mu, gradient, c.lr))
}

type crossbowState struct {
	Steps    []int
	Gradient []bool
	Done     int
	Round    bool
	Members  strategy.Members
}

// MarshalBinary implements strategy.Strategy.
func (c *crossbowSGD) MarshalBinary() ([]byte, error) {
	return strategy.EncodeState(crossbowState{Steps: c.steps, Gradient: c.gradient, Done: c.done, Round: c.round, Members: c.members})
}

// UnmarshalBinary implements strategy.Strategy.
func (c *crossbowSGD) UnmarshalBinary(b []byte) error {
	var st crossbowState
	if err := strategy.DecodeState(b, &st); err != nil {
		return err
	}
	if err := strategy.CheckLens(c.n,
		strategy.Len{What: "steps", N: len(st.Steps)},
		strategy.Len{What: "modes", N: len(st.Gradient)},
		strategy.Len{What: "members", N: st.Members.Devices()},
	); err != nil {
		return err
	}
	c.steps, c.gradient, c.done, c.round, c.members = st.Steps, st.Gradient, st.Done, st.Round, st.Members
	return nil
}
