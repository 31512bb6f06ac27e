package streaming

import (
	"fmt"
	"math"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/strategy/diloco"
)

// OuterOp is Streaming DiLoCo's outer step, a Collective with the devices'
// Weights and Params: outer rate η [0], momentum μ [1], mixing α [2], the
// number of fragments P [3], the fragment whose all-reduce finishes here
// [4] and the one whose all-reduce starts here [5] (−1: none), the bits of
// the outer gradients on the wire [6] (0: float32) and τ [7]: with τ = 0
// the fragment that starts here also finishes here (a blocking
// all-reduce); else a fragment that finishes here is merged before one
// starts (the same one, with one fragment and τ = h). The fragments' momenta are the
// op's vector beside the centre; the sum in flight is the Host's Pending,
// which a checkpoint saves.
const OuterOp = "streaming-outer"

// Outer returns a Collective of OuterOp.
func Outer(weights []float64, eta, mu, alpha float64, fragments, finish, start int, bits float64, tau int) strategy.Action {
	a := strategy.Action{Kind: strategy.Collective, Op: OuterOp, Weights: weights}
	a.Params = [strategy.MaxParams]float64{eta, mu, alpha, float64(fragments), float64(finish), float64(start), bits, float64(tau)}
	return a
}

// outer is OuterOp on one rank: every rank sums the same fragment and
// takes the same step.
type outer struct {
	work strategy.Work // the all-reduce in flight (nil after a resume: Pending holds its sum)
	frag int           // its fragment, −1: none
	w    []float32
	vecs [][]float32
}

// span returns fragment p's range of a model of n parameters cut into
// frags.
func span(p, frags, n int) (lo, hi int) {
	return int(int64(p) * int64(n) / int64(frags)), int(int64(p+1) * int64(n) / int64(frags))
}

// fragments returns an action's fragment count, finish and start.
func fragments(a *strategy.Action) (frags, finish, start int) {
	return int(a.Params[3]), int(a.Params[4]), int(a.Params[5])
}

func (*outer) Format(a *strategy.Action) string {
	_, fin, st := fragments(a)
	return fmt.Sprintf("streaming-outer weights=%s outer-lr=%s momentum=%s alpha=%s fragments=%s finish=%d start=%d bits=%s tau=%s",
		strategy.Gs(a.Weights), strategy.G(a.Params[0]), strategy.G(a.Params[1]), strategy.G(a.Params[2]), strategy.G(a.Params[3]), fin, st, strategy.G(a.Params[6]), strategy.G(a.Params[7]))
}

// Cost: a fragment's all-reduce (a 1/P part of the model), started and
// left in flight, or waited for at once when the same action finishes it
// (τ 0). Quantized, the devices' codes cannot be summed on the way and
// stay 4 bits (a sum of codes is no code): every device gathers every
// other's, an all-gather of an eighth of the fragment from each, which on
// a ring costs (n − 1)/(2(n − 1)/n) = n/2 times an all-reduce of that
// eighth; at 16 devices as much as the float32 all-reduce. The sum's
// passes when quantized (each device's Δ, its codes), and three to form
// Δ, v and θ, one more to mix.
func (*outer) Cost(a *strategy.Action) strategy.Cost {
	frags, fin, st := fragments(a)
	frac := 1 / float64(frags)
	bits := a.Params[6]
	var c strategy.Cost
	blocking := a.Params[7] == 0
	if st >= 0 {
		switch {
		case bits > 0 && blocking:
			c.GatherModel = frac * bits / 32
		case bits > 0:
			c.StartedGather = frac * bits / 32
		case blocking:
			c.AllReduces = frac
		default:
			c.Started = frac
		}
		if bits > 0 {
			c.Passes += 2 * frac
		}
	}
	if fin >= 0 {
		c.Awaits = !blocking
		c.Passes += 3 * frac
		if a.Params[2] != 0 {
			c.Passes += frac
		}
	}
	return c
}

func (*outer) Check(a *strategy.Action, n int) error {
	if err := diloco.CheckOuter(a, n); err != nil {
		return err
	}
	if alpha := a.Params[2]; !(alpha >= 0 && alpha < 1) {
		return fmt.Errorf("mixing %v: want it in [0, 1)", alpha)
	}
	frags, fin, st := fragments(a)
	if float64(frags) != a.Params[3] || frags < 1 || fin < -1 || fin >= frags || st < -1 || st >= frags || fin == -1 && st == -1 {
		return fmt.Errorf("fragments %v, finish %v, start %v: want whole fragments, and one to finish or start", a.Params[3], a.Params[4], a.Params[5])
	}
	if bits := a.Params[6]; bits != 0 && bits != 4 {
		return fmt.Errorf("%v bits: 0 or 4", bits)
	}
	if tau := a.Params[7]; !(tau >= 0) || tau != math.Trunc(tau) || tau == 0 && fin != st {
		return fmt.Errorf("tau %v with finish %d and start %d: want whole steps, and with 0 one fragment that starts and finishes", tau, fin, st)
	}
	return nil
}

func (o *outer) Collect(h strategy.Host, a *strategy.Action) error {
	theta := h.Center()
	if theta == nil {
		return nil
	}
	frags, fin, st := fragments(a)
	if a.Params[7] == 0 {
		// A blocking all-reduce: start, then finish at once.
		if err := o.start(h, a, st, frags); err != nil {
			return err
		}
		return o.finish(h, a, fin, frags)
	}
	if fin >= 0 {
		if err := o.finish(h, a, fin, frags); err != nil {
			return err
		}
	}
	if st >= 0 {
		return o.start(h, a, st, frags)
	}
	return nil
}

// start sums the devices' outer gradients of fragment p (their mean
// replica, unquantized: Δ is formed when it arrives, as DiLoCo forms it)
// into Pending and starts its all-reduce.
func (o *outer) start(h strategy.Host, a *strategy.Action, p, frags int) error {
	theta := h.Center()
	lo, hi := span(p, frags, len(theta))
	sum := h.Pending()[lo:hi]
	o.w, o.vecs = o.w[:0], o.vecs[:0]
	if a.Params[6] == 0 {
		for _, r := range h.Replicas() {
			o.w = append(o.w, float32(a.Weights[r.ID()]))
			o.vecs = append(o.vecs, r.Params()[lo:hi])
		}
		kernel.WeightedSum(sum, o.w, o.vecs)
	} else {
		clear(sum)
		d := h.Scratch()[lo:hi]
		for _, r := range h.Replicas() {
			copy(d, theta[lo:hi])
			kernel.Axpy(-1, r.Params()[lo:hi], d)
			QuantizeE3M0(d)
			kernel.Axpy(float32(a.Weights[r.ID()]), d, sum)
		}
	}
	w, err := h.IAllReduce(sum)
	if err != nil {
		return fmt.Errorf("fragment %d's outer gradients: %w", p, err)
	}
	o.work, o.frag = w, p
	return nil
}

// finish takes fragment p's outer step with the sum its all-reduce
// brought, and merges the synced fragment into every replica.
func (o *outer) finish(h strategy.Host, a *strategy.Action, p, frags int) error {
	if o.work != nil {
		if o.frag != p {
			// Its sum may still be on its way into Pending.
			return fmt.Errorf("fragment %d merged while fragment %d's all-reduce is in flight", p, o.frag)
		}
		err := o.work.Wait()
		o.work, o.frag = nil, -1
		if err != nil {
			return fmt.Errorf("fragment %d's outer gradients: %w", p, err)
		}
	}
	theta := h.Center()
	lo, hi := span(p, frags, len(theta))
	th, delta := theta[lo:hi], h.Pending()[lo:hi]
	if a.Params[6] == 0 {
		// Δ = θ − mean, in place of the mean.
		kernel.Scal(-1, delta)
		kernel.Axpy(1, th, delta)
	}
	eta, mu, alpha := float32(a.Params[0]), float32(a.Params[1]), float32(a.Params[2])
	diloco.Nesterov(th, delta, h.CenterState()[lo:hi], eta, mu)
	for _, r := range h.Replicas() {
		rp := r.Params()[lo:hi]
		if alpha == 0 {
			copy(rp, th)
			continue
		}
		kernel.Scal(alpha, rp)
		kernel.Axpy(1-alpha, th, rp)
	}
	return nil
}

// QuantizeE3M0 rounds every value of v, in place, to what a 4-bit E3M0
// float with v's largest magnitude as its scale s holds: 0, or ±s·2^e for
// e in −6…0, the power nearest in the log domain (2^(e+½) is the tie).
func QuantizeE3M0(v []float32) {
	var s float32
	for _, x := range v {
		s = max(s, float32(math.Abs(float64(x))))
	}
	if s == 0 || math.IsInf(float64(s), 0) || math.IsNaN(float64(s)) {
		return
	}
	for i, x := range v {
		r := math.Abs(float64(x)) / float64(s)
		// r = m·2^k with m in [½, 1): log2 r is k + log2 m, nearest to k
		// when m ≥ 1/√2, else to k − 1.
		m, e := math.Frexp(r)
		if m < math.Sqrt2/2 {
			e--
		}
		switch {
		case r == 0 || e < -6:
			v[i] = 0
			continue
		case e > 0:
			e = 0
		}
		q := float32(math.Ldexp(float64(s), e))
		if x < 0 {
			q = -q
		}
		v[i] = q
	}
}
