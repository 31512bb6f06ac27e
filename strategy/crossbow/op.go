package crossbow

import (
	"fmt"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/strategy"
)

// SyncOp is CROSSBOW's synchronous model averaging step, a Collective with
// coefficient a = Params[0] and momentum γ = Params[1]:
//
//	d_i = w_i − z;  w_i ← w_i − a·d_i;  D = Σ a·d_i + γ·D_prev;  z ← z + D
//
// With Params[2] = 1 the devices hold a gradient g_i computed in Gradient
// mode on w_i and not yet applied, and the step is the paper's, whose
// gradient step and correction both start from that iterate:
//
//	d_i = w_i − z;  w_i ← w_i − LR·g_i − a·d_i;  D, z as above
//
// with −LR·g_i the step of the device's optimizer. D_prev is the op's
// state beside the centre; γ·D_prev is counted once, on rank 0.
const SyncOp = "center-sync"

// Sync returns a Collective of SyncOp; withGradient applies the devices'
// gradients at lr.
func Sync(a, gamma float64, withGradient bool, lr float64) strategy.Action {
	act := strategy.Action{Kind: strategy.Collective, Op: SyncOp}
	act.Params[0], act.Params[1] = a, gamma
	if withGradient {
		act.Params[2], act.LR = 1, lr
	}
	return act
}

func init() { strategy.RegisterOp(SyncOp, func() strategy.Op { return syncOp{} }) }

type syncOp struct{}

func (syncOp) Format(a *strategy.Action) string {
	s := fmt.Sprintf("center-sync a=%s gamma=%s", strategy.G(a.Params[0]), strategy.G(a.Params[1]))
	if a.Params[2] != 0 {
		s += fmt.Sprintf(" with-gradient lr=%s", strategy.G(a.LR))
	}
	return s
}

// Cost: a few element-wise passes and, with the gradient, the optimizer
// step the τ-th batch left to it (and did not charge, computed in Gradient
// mode), every device in parallel.
func (syncOp) Cost(a *strategy.Action) strategy.Cost {
	c := strategy.Cost{AllReduces: 1, Passes: 3}
	if a.Params[2] != 0 {
		c.Passes++
	}
	return c
}

// Gradients implements strategy.GradientUser: the paper's step applies the
// devices' gradients.
func (syncOp) Gradients(a *strategy.Action) (reads, applies bool) {
	return a.Params[2] != 0, a.Params[2] != 0
}

func (syncOp) Check(a *strategy.Action, _ int) error {
	if !(a.Params[0] > 0 && a.Params[0] <= 1) || !(a.Params[1] >= 0 && a.Params[1] < 1) {
		return fmt.Errorf("a %v and momentum %v, want a in (0, 1] and momentum in [0, 1)", a.Params[0], a.Params[1])
	}
	return nil
}

func (syncOp) Collect(h strategy.Host, act *strategy.Action) error {
	z := h.Center()
	if z == nil {
		return nil
	}
	a, gamma, withGrad := float32(act.Params[0]), float32(act.Params[1]), act.Params[2] != 0
	dprev, d := h.CenterState(), h.Scratch()
	if h.Rank() == 0 {
		kernel.Scal(gamma, dprev)
	} else {
		clear(dprev)
	}
	for _, r := range h.Replicas() {
		w := r.Params()
		copy(d, w)
		kernel.Axpy(-1, z, d) // d_i = w_i − z
		kernel.Axpy(a, d, dprev)
		if withGrad {
			// The step from w_i itself (momentum, Adam's moments and
			// weight decay all see the iterate the gradient came from);
			// the correction, measured before it, is added after.
			r.Step(r.Grad(), float32(act.LR))
		}
		kernel.Axpy(-a, d, w)
	}
	if h.Ranks() > 1 {
		if err := h.AllReduce(dprev); err != nil {
			return fmt.Errorf("CROSSBOW's synchronisation: %w", err)
		}
	}
	kernel.Axpy(1, dprev, z)
	return nil
}
