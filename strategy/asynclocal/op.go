package asynclocal

import (
	"fmt"
	"math"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/strategy"
)

// BeginOp is the collective before the first batch: every device records
// the model it starts from (its state vector), which its first push's
// pseudo-gradient is measured from.
const BeginOp = "async-local-begin"

type begin struct{}

func (begin) Format(*strategy.Action) string      { return "async-local-begin" }
func (begin) Cost(*strategy.Action) strategy.Cost { return strategy.Cost{Passes: 1} }
func (begin) Check(*strategy.Action, int) error   { return nil }
func (begin) Collect(h strategy.Host, _ *strategy.Action) error {
	if h.Center() == nil {
		return nil
	}
	for _, r := range h.Replicas() {
		copy(r.State(), r.Params())
	}
	return nil
}

// PushOp is a device's push, a Commit at the server's rate η = LR with
// momentum β = Params[0] and delay N = Params[1]; Params[2] and Params[3]
// are 1 when the push opens and closes a period of N. The server's
// momentum is the op's vector beside the centre. Before a period closes it
// holds β·m plus the period's pseudo-gradients over N so far: the sum Δ̃
// is never stored apart.
const PushOp = "async-local-push"

type push struct{}

func (push) Format(a *strategy.Action) string {
	p := a.Params
	s := fmt.Sprintf("push dev=%d tau=%d outer-lr=%s momentum=%s delay=%s", a.Device, a.Tau, strategy.G(a.LR), strategy.G(p[0]), strategy.G(p[1]))
	if p[2] != 0 {
		s += " opens"
	}
	if p[3] != 0 {
		s += " closes"
	}
	return s
}

// Cost: the pseudo-gradient to the server and θ back.
func (push) Cost(*strategy.Action) strategy.Cost { return strategy.Cost{Transfers: 2} }

func (push) Check(a *strategy.Action, _ int) error {
	p := a.Params
	if !(p[0] >= 0 && p[0] < 1) || !(p[1] >= 1) || math.IsInf(p[1], 0) || a.Tau < 0 {
		return fmt.Errorf("momentum %v, delay %v, staleness %d: want momentum in [0, 1), delay ≥ 1, staleness ≥ 0", p[0], p[1], a.Tau)
	}
	return nil
}

func (push) NeedsCenter(*strategy.Action) bool { return false }

// Delta writes δ = θ_start − θ_w over the device's gradient.
func (push) Delta(_ strategy.Host, r strategy.Replica, _ *strategy.Action, _ []float32) float64 {
	g, start, p := r.Grad(), r.State(), r.Params()
	if g == nil {
		return math.NaN()
	}
	copy(g, start)
	kernel.Axpy(-1, p, g)
	return math.NaN()
}

// Apply is the Delayed Nesterov step with c = 0.
func (push) Apply(h strategy.Host, a *strategy.Action, delta []float32) {
	theta := h.Center()
	if theta == nil {
		return
	}
	eta, beta, n := float32(a.LR), float32(a.Params[0]), float32(a.Params[1])
	m := h.CenterState()
	if a.Params[2] != 0 {
		kernel.Scal(beta, m) // the period opens: m ← β·m, then its pushes add up
	}
	kernel.Axpy(1/n, delta, m)
	kernel.Axpy(-eta/n, delta, theta)
	if a.Params[3] != 0 {
		kernel.Axpy(-eta*beta, m, theta) // the period closes: the momentum's step
	}
}

// Restart: the device goes on from θ, and measures its next push from it.
func (push) Restart(_ strategy.Host, r strategy.Replica, _ *strategy.Action, theta []float32) {
	if theta == nil || r.Params() == nil {
		return
	}
	copy(r.Params(), theta)
	copy(r.State(), theta)
}
