package adacons

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/strategy"
)

// ConsensusOp is AdaCons's query: for each device the coefficient
// c_i = ⟨g_i, ḡ⟩/‖g_i‖² of its gradient against the devices' mean ḡ (NaN
// where g_i = 0) and, second, ‖g_i‖₂. It costs an all-reduce of the
// gradients and an all-gather of two scalars per device. In one process ḡ
// is never stored; across ranks it is all-reduced first.
const ConsensusOp = "query-consensus"

func init() { strategy.RegisterOp(ConsensusOp, func() strategy.Op { return &consensusOp{} }) }

type consensusOp struct {
	mean       []float32
	grads      [][]float32
	dots, sums []float64
}

func (*consensusOp) Format(*strategy.Action) string { return "query-consensus" }

// SampleAnswer draws consensus coefficients as the conformance suite sends
// them, with the gradients' norms: about 1, in [0.5, 1.5]; one in twenty a
// zero gradient's (NaN coefficient, norm 0); and, where negatives may be
// sent (a gradient pointing away from the mean, which the engine can
// report), now and then one below 0 — the first answer's last device's
// when one must be, so that the momentum starts below 0.
func (*consensusOp) SampleAnswer(rng *rand.Rand, gone []bool, mayNegative, mustNegative bool, values, second []float64) bool {
	last := -1 // the last device in the run
	for d := range gone {
		if !gone[d] {
			last = d
		}
	}
	sent := false
	for i := range values {
		second[i] = 0.1 + 10*rng.Float64()
		switch r := rng.IntN(20); {
		case gone[i]:
			values[i], second[i] = math.NaN(), math.NaN()
		case mustNegative && !sent && i == last:
			values[i], sent = -0.3, true
		case r == 0:
			values[i], second[i] = math.NaN(), 0 // a zero gradient
		case r < 3 && mayNegative:
			values[i], sent = -0.5*rng.Float64(), true
		default:
			values[i] = 0.5 + rng.Float64()
		}
	}
	return sent
}

func (*consensusOp) Cost(*strategy.Action) strategy.Cost {
	return strategy.Cost{AllReduces: 1, Gather: 16}
}

// Gradients implements strategy.GradientUser: the coefficients are of the
// gradients, which the all-reduce that follows applies.
func (*consensusOp) Gradients(*strategy.Action) (reads, applies bool) { return true, false }

func (*consensusOp) Check(*strategy.Action, int) error { return nil }

func (c *consensusOp) Measure(h strategy.Host, _ *strategy.Action, coef, norms []float64) error {
	reps := h.Replicas()
	if h.Center() == nil {
		// No vectors: the answer of equal gradients.
		for i := range reps {
			coef[i], norms[i] = 1, 1
		}
		return nil
	}
	c.mean, c.grads = c.mean[:0], c.grads[:0]
	w := 1 / float32(h.Live())
	for _, r := range reps {
		c.mean = append(c.mean, w)
		c.grads = append(c.grads, r.Grad())
	}
	if cap(c.dots) < len(reps) {
		c.dots, c.sums = make([]float64, len(reps)), make([]float64, len(reps))
	}
	dots, sums := c.dots[:len(reps)], c.sums[:len(reps)]
	if h.Ranks() == 1 {
		kernel.Consensus(dots, sums, c.grads)
	} else {
		mean := h.Scratch()
		if err := h.WeightedAllReduce(mean, c.mean, c.grads); err != nil {
			return fmt.Errorf("the mean gradient of the consensus: %w", err)
		}
		kernel.DotsNorms(dots, sums, c.grads, mean)
	}
	for i, sq := range sums {
		norms[i] = math.Sqrt(sq)
		if sq > 0 {
			coef[i] = dots[i] / sq
		} else {
			coef[i] = math.NaN()
		}
	}
	return nil
}
