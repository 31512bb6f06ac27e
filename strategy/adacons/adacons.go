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
//
// When a device leaves the run (strategy.Leave) the step waits only for the
// devices still in it (a step that waited only for the device that left
// queries at once), the gone device's coefficient — NaN, as the engine
// answers for it — gets weight 0, and the sort, the momentum and the
// normalization run over the live devices alone. The momentum of the sorted
// coefficients restarts, as at the start of the run, from the first step's
// coefficients after the leave: its ranks were those of more devices.
//
// # Eq. 13 as printed
//
// The paper's text asks for an unbiased estimator, the weights constrained
// to sum to one, and says equal gradients reduce the scheme to averaging;
// that is the default above. Its eq. 13 prints something else:
//
//	ψ = Σ λ·(⟨g_i, ḡ⟩/‖g_i‖)·(g_i/‖g_i‖),  λ = 1 / Σ_j ⟨g_j, ḡ⟩/‖g_j‖
//
// a combination of unit gradients whose coefficients λ·⟨g_i, ḡ⟩/‖g_i‖ sum
// to one — convex when every g_i agrees with ḡ, and ψ's norm is then at most
// 1 whatever the gradients' scale: equal gradients g give ψ = g/‖g‖, not g.
// --eq13 1 runs it as printed (its Algorithm 1 all-gathers these
// ⟨g_i, ḡ⟩/‖g_i‖ too). The momentum then smooths the sorted
// a_i = ⟨g_i, ḡ⟩/‖g_i‖ = c_i·‖g_i‖ (ConsensusOp's answer carries both c_i and
// ‖g_i‖), and device i, of rank r, gets weight λ·m_r/‖g_i‖ on its raw
// gradient, λ = 1/Σ_r m_r (0 for a zero gradient).
//
// Without momentum (β = 0) eq. 13's weights are the default's times
// Σ_j c_j / Σ_j a_j: the same direction, another length, which a line search
// or Adam (scale-free) largely absorbs and plain SGD does not, its step then
// being at most about lr whatever the gradients' size. With momentum the
// directions differ too: m smooths the a_i, which carry the gradients'
// norms, and each step divides the smoothed value by the current ‖g_i‖ of
// the device it is scattered to.
package adacons

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

func init() {
	strategy.Register(strategy.Info{
		Name:      "adacons",
		Summary:   "AdaCons: synchronous aggregation weighted by consensus coefficients with sorted-coefficient momentum",
		Evaluates: strategy.Replica0,
		Options: []strategy.Option{
			{Name: "beta", Default: 0.99, Range: setting.Unit, Usage: "momentum β of the sorted coefficients"},
			{Name: "eq13", Default: 0, Range: setting.Count(0, 1),
				Paper: "eq. 13 prints λ = 1/Σ⟨g_i,ḡ⟩/‖g_i‖ over unit gradients (eq13 = 1); the default follows the paper's text, which eq. 13 contradicts: unbiased, averaging for equal gradients",
				Usage: "1: the paper's eq. 13 as printed, ψ = λ·Σ(⟨g_i,ḡ⟩/‖g_i‖)·g_i/‖g_i‖, λ = 1/Σ⟨g_j,ḡ⟩/‖g_j‖ (0: weights ⟨g_i,ḡ⟩/‖g_i‖² summing to 1)"},
		},
		Defaults: strategy.Settings{Optimizer: "adam", LR: 1e-3, Batch: 128, Union: true, MaxLR: 0.01}, // as sync's (BENCHMARKS.md §8)
		New:      func(cfg strategy.Config) (strategy.Strategy, error) { return New(cfg) },
	})
}

// AdaCons is the strategy's state.
type AdaCons struct {
	n, b    int
	lr      float64
	beta    float64
	eq13    bool      // the paper's eq. 13 as printed
	M       []float64 // smoothed sorted coefficients, one per live device
	started bool      // M holds a first step's coefficients
	members strategy.Members
	barrier strategy.Barrier // the devices whose gradient the step waits for
	perm    []int            // the live devices, sorted by coefficient
	sorted  []float64
	weights []float64 // the step's weights (the action's, valid until the next Step)
	next    []float64 // the momentum's next value
}

// New returns AdaCons; --batch is the batch of each device.
func New(cfg strategy.Config) (*AdaCons, error) {
	beta, eq13 := cfg.Opt("beta"), cfg.Opt("eq13")
	n := cfg.Devices
	return &AdaCons{n: n, b: cfg.Batch, lr: cfg.LR, beta: beta, eq13: eq13 == 1,
		members: strategy.NewMembers(n), barrier: strategy.NewBarrier(n),
		M: make([]float64, n), perm: make([]int, 0, n), sorted: make([]float64, 0, n),
		weights: make([]float64, n), next: make([]float64, 0, n)}, nil
}

func (a *AdaCons) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start, strategy.CollectiveDone:
		a.barrier.Open(&a.members)
		return a.members.Dispatch(out, a.b, a.lr, strategy.Gradient)
	case strategy.BatchDone:
		d := ev.Device
		if !a.barrier.Waits(d) {
			panic(fmt.Sprintf("adacons: BatchDone from device %d, which has no batch", d))
		}
		out = a.arrived(out, d)
	case strategy.Leave:
		if !a.members.Leave(ev.Device) {
			return out // already gone, or no device
		}
		a.started = false // the momentum's ranks were those of more devices
		if a.barrier.Waits(ev.Device) {
			// Its batch is lost: the step goes on without it.
			out = a.arrived(out, ev.Device)
		}
	case strategy.Answer:
		w, note := a.Weights(ev.Values, ev.Second)
		out = append(out, strategy.Action{Kind: strategy.AllReduce, LR: a.lr, Weights: w, Note: note})
	}
	return out
}

// arrived takes device d off the step's wait list and asks for the
// consensus once no device is left on it.
func (a *AdaCons) arrived(out []strategy.Action, d int) []strategy.Action {
	if a.barrier.Arrive(d) {
		out = append(out, strategy.Action{Kind: strategy.Query, Op: ConsensusOp})
	}
	return out
}

// Weights turns the step's consensus coefficients c_i = ⟨g_i, ḡ⟩/‖g_i‖² and
// the gradients' norms (needed by eq. 13 only) into aggregation weights,
// updating the momentum, and returns a note when it fell back to averaging.
// Only the devices in the run take part; the others get weight 0.
func (a *AdaCons) Weights(c, norms []float64) ([]float64, string) {
	if a.eq13 && len(norms) < a.n {
		panic("adacons: eq. 13 needs the gradients' norms in the answer to ConsensusOp")
	}
	a.perm = a.perm[:0]
	for i := range a.n {
		if a.members.In(i) {
			a.perm = append(a.perm, i)
		}
	}
	// A zero gradient (NaN coefficient) contributes nothing.
	coef := func(i int) float64 {
		v := c[i]
		if a.eq13 {
			v *= norms[i] // ⟨g_i, ḡ⟩/‖g_i‖
		}
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	slices.SortStableFunc(a.perm, func(x, y int) int { return cmp.Compare(coef(x), coef(y)) })
	a.sorted = a.sorted[:0]
	for _, i := range a.perm {
		a.sorted = append(a.sorted, coef(i))
	}
	w, m := a.weights, a.next[:0]
	clear(w) // the devices out of the run keep 0
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
		a.members.Uniform(w)
		return w, fmt.Sprintf("consensus weights sum to %v: this step falls back to averaging", sum)
	}
	a.M = append(a.M[:0], m...) // one per rank among the live devices
	a.started = true
	for _, i := range a.perm {
		w[i] /= sum
		if a.eq13 {
			// λ·m_r/‖g_i‖: the weight of the unit gradient, moved onto
			// the raw one. A zero gradient gets 0 (its smoothed value may
			// not be).
			if norms[i] > 0 {
				w[i] /= norms[i]
			} else {
				w[i] = 0
			}
		}
	}
	return w, ""
}

type adaconsState struct {
	M       []float64
	Started bool
	Members strategy.Members
	Barrier strategy.Barrier
}

// MarshalBinary implements strategy.Strategy. The permutation, sorted
// coefficients and weights are scratch, rebuilt by every step.
func (a *AdaCons) MarshalBinary() ([]byte, error) {
	return strategy.EncodeState(adaconsState{M: a.M, Started: a.started, Members: a.members, Barrier: a.barrier})
}

// UnmarshalBinary implements strategy.Strategy.
func (a *AdaCons) UnmarshalBinary(b []byte) error {
	var st adaconsState
	if err := strategy.DecodeState(b, &st); err != nil {
		return err
	}
	if err := strategy.CheckLens(a.n,
		strategy.Len{What: "members", N: st.Members.Devices()},
		strategy.Len{What: "a barrier", N: st.Barrier.Devices()},
	); err != nil {
		return err
	}
	if len(st.M) > a.n {
		return strategy.CheckLens(a.n, strategy.Len{What: "coefficients", N: len(st.M)})
	}
	a.M = append(make([]float64, 0, a.n), st.M...)
	a.started, a.members, a.barrier = st.Started, st.Members, st.Barrier
	return nil
}
