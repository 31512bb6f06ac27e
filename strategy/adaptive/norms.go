package adaptive

import (
	"math"
	"math/rand/v2"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/strategy"
)

// NormsOp is the query Adaptive SGD asks before a merge: for each device,
// the L2 norm of its replica ‖w_i‖₂ (the regularization measure its
// perturbation is gated on) and, second, how far the replica went along the
// centre's last step, ⟨w_i − w̄, w̄ − w̄_prev⟩ (the momentum restart's test).
const NormsOp = "query-norms"

func init() { strategy.RegisterOp(NormsOp, func() strategy.Op { return normsOp{} }) }

type normsOp struct{}

func (normsOp) Format(*strategy.Action) string { return "query-norms" }

// SampleAnswer draws norms as the conformance suite sends them: ‖w‖/|w| in
// [0.001, 0.13] for Dim 1000, around the default pert-thr 0.1, so that the
// perturbation fires now and then. Norms are never negative.
func (normsOp) SampleAnswer(rng *rand.Rand, gone []bool, _, _ bool, values, second []float64) bool {
	for i := range values {
		values[i], second[i] = 1+129*rng.Float64(), 0
		if gone[i] {
			values[i], second[i] = math.NaN(), math.NaN()
		}
	}
	return false
}

// Cost: an all-gather of a norm and a dot per device.
func (normsOp) Cost(*strategy.Action) strategy.Cost { return strategy.Cost{Gather: 16} }

func (normsOp) Check(*strategy.Action, int) error { return nil }

// Measure computes ⟨w_i − w̄, m⟩ as ⟨w_i, m⟩ − ⟨w̄, m⟩ with m = w̄ − w̄_prev
// (in the scratch vector), so that each replica is read once.
func (normsOp) Measure(h strategy.Host, _ *strategy.Action, norms, along []float64) error {
	center := h.Center()
	var m []float32
	var cm float64
	if center != nil {
		m = h.Scratch()
		copy(m, center)
		kernel.Axpy(-1, h.Prev(), m)
		cm = kernel.Dot(center, m)
	}
	for i, r := range h.Replicas() {
		norms[i], along[i] = 0, 0
		if p := r.Params(); p != nil {
			norms[i] = kernel.Nrm2(p)
			if m != nil {
				along[i] = kernel.Dot(p, m) - cm
			}
		}
	}
	return nil
}
