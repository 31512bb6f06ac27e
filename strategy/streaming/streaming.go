// Package streaming is Streaming DiLoCo (Douillard et al., 2025,
// "Streaming DiLoCo with overlapping communication: Towards a Distributed
// Free Lunch"): DiLoCo (package diloco) whose outer step is taken one
// fragment of the model at a time, on a staggered schedule, with each
// fragment's all-reduce overlapping the inner steps that follow it.
//
// The model's parameters are cut into P fragments (P = --fragments). Every
// device takes inner steps of its own optimizer. Fragment p is synchronised
// every H inner steps, at steps s with s mod H = ⌊(p+1)·H/P⌋ mod H, so that
// one fragment's all-reduce is under way at a time and the last is synced
// at the end of each H, as all of DiLoCo's model is. At its step the
// devices' outer gradients of the fragment start their all-reduce,
//
//	Δ_p = Σ_i w_i (θ_p − θ_{i,p})   (w_i = 1/live)
//
// and the devices go on with their inner steps. τ steps later (--tau) the
// sum has arrived: the outer Nesterov step (DiLoCo's) updates the global
// fragment θ_p with the fragment's momentum v_p,
//
//	v_p ← μ·v_p + Δ_p;  θ_p ← θ_p − η·(Δ_p + μ·v_p)
//
// and every device merges it into the fragment it has trained since,
//
//	θ_{i,p} ← α·θ_{i,p} + (1 − α)·θ_p   (α = --alpha)
//
// With τ = 0 the all-reduce is waited for at once (no overlap); with one
// fragment, τ = 0 and α = 0 Streaming DiLoCo is DiLoCo, bit for bit
// (tested). Accuracy is that of θ.
//
// Decisions where this workload is not the paper's:
//   - Fragments are P contiguous, equal ranges of the model's parameter
//     vector, not the paper's strided groups of transformer blocks: an op
//     sees the model as one vector, and an MLP of two or three layers has no
//     blocks to stride over.
//   - τ is at most ⌊H/P⌋, so that a fragment's sum arrives before the next
//     fragment starts and at most one is in flight. The default τ = 1 and
//     α = 0.5 are the paper's overlapped setting; the default H is the
//     round of the other model-averaging strategies (DiLoCo's), for a
//     comparison at equal communication; P defaults to min(2, H).
//   - --bits 4 quantizes every device's outer gradient to 4-bit floats
//     before the sum (E3M0: a sign and a power of two from 2^−6 to 1 of the
//     fragment's largest magnitude, or zero below s·2^−6.5; rounded to the
//     nearest power in the log domain), and the sum is kept in 32 bits, as
//     the paper accumulates. A sum of codes is no code, so devices that
//     send codes must gather each other's: the virtual clock prices an
//     all-gather of an eighth of the fragment from every device, n/2 times
//     an all-reduce of that eighth (no saving at 16 devices). The transport
//     under mpirun still carries float32 sums: there the bits do not
//     shrink.
//
// Barriers: every device steps to the next step at which a fragment starts
// or finishes, and the op runs there with every device idle (DiLoCo's
// rounds are barriers too). The overlap is of the network's time with the
// inner steps: the op's Cost says what it starts and what it awaits, and
// the engine's clocks price it (the virtual one carries the all-reduce on
// the network while the devices compute; the real one under mpirun
// progresses it on its own goroutine).
package streaming

import (
	"fmt"
	"slices"

	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

// Name is the strategy's registered name.
const Name = "streaming-diloco"

func init() {
	strategy.Register(strategy.Info{
		Name:      Name,
		Summary:   "Streaming DiLoCo: DiLoCo's outer step by fragments of the model, each fragment's all-reduce overlapping the next inner steps",
		Evaluates: strategy.Center,
		Options: slices.Concat(
			[]strategy.Option{
				strategy.RoundStepsOption("h", "the paper's H is 100 inner steps",
					"inner steps per device between two syncs of a fragment (by default elastic's k: DiLoCo's communication)"),
				{Name: "fragments", Derive: func(_ strategy.Config, opt map[string]float64) float64 { return min(2, opt["h"]) }, Formula: "min(2, h)",
					Range: setting.Count(1, setting.MaxCount), Usage: "fragments of the model, synced in turn (at most h)"},
				{Name: "tau", Default: 1, Range: setting.Count(0, setting.MaxCount),
					Usage: "inner steps a fragment's all-reduce overlaps (0: it blocks; at most ⌊h/fragments⌋)"},
				{Name: "alpha", Default: 0.5, Range: setting.Unit,
					Usage: "mixing factor: a device keeps α of its fragment and takes 1 − α of the synced one"},
				{Name: "bits", Default: 0, Range: setting.Count(0, 32),
					Usage: "bits of each outer gradient's values on the wire: 0 (float32) or 4 (E3M0)"},
			},
			strategy.OuterOptions("outer learning rate η", 0.5,
				"the DiLoCo paper's μ is 0.9, which reached the grid's target later or not at all on Bibtex and Delicious (BENCHMARKS.md §15)",
				"outer Nesterov momentum μ")),
		Defaults: strategy.Settings{Optimizer: "adam", LR: 0.01, Batch: 128}, // DiLoCo's
		Check:    check,
		New:      New,
	})
	strategy.RegisterOp(OuterOp, func() strategy.Op { return &outer{frag: -1} })
}

// check refuses what no run accepts, before the data is loaded (Info.Check).
func check(cfg strategy.Config) error {
	if bits := cfg.Opt("bits"); bits != 0 && bits != 4 {
		return fmt.Errorf("%s: bits %v: 0 (float32) or 4 (E3M0)", Name, bits)
	}
	return nil
}

// checkSchedule refuses fragments and an overlap that do not fit h, which
// New checks once the training set is known: h's default depends on its
// size, which Info.Check does not know.
func checkSchedule(cfg strategy.Config) error {
	h, p, tau := int(cfg.Opt("h")), int(cfg.Opt("fragments")), int(cfg.Opt("tau"))
	if p > h {
		return fmt.Errorf("%s: %d fragments synced within h = %d steps: at most h fragments", Name, p, h)
	}
	if tau > h/p {
		return fmt.Errorf("%s: tau %d: at most ⌊h/fragments⌋ = ⌊%d/%d⌋ = %d, so that a fragment's sum arrives before the next fragment starts", Name, tau, h, p, h/p)
	}
	return nil
}

// Streaming is the strategy: the schedule of the fragments' starts and
// finishes, and the barriers at them.
type Streaming struct {
	n, b, h, frags, tau int
	lr                  float64
	params              [strategy.MaxParams]float64 // the op's, less the fragments of an action
	s                   int                         // the barrier the devices last passed: steps since Start
	next                int                         // the barrier they are stepping to
	steps               []int                       // each device's steps since Start
	done                int                         // devices in the run at next
	waiting             bool                        // stepping to next: its action is not yet asked for
	merged              int                         // steps at the last merge record
	weights             []float64
	members             strategy.Members
}

// New returns Streaming DiLoCo.
func New(cfg strategy.Config) (strategy.Strategy, error) {
	if err := checkSchedule(cfg); err != nil {
		return nil, err
	}
	s := &Streaming{n: cfg.Devices, b: cfg.Batch, h: int(cfg.Opt("h")), frags: int(cfg.Opt("fragments")), tau: int(cfg.Opt("tau")),
		lr: cfg.LR, steps: make([]int, cfg.Devices), weights: strategy.Uniform(cfg.Devices), members: strategy.NewMembers(cfg.Devices)}
	s.params = [strategy.MaxParams]float64{cfg.Opt("outer-lr"), cfg.Opt("outer-momentum"), cfg.Opt("alpha"), float64(s.frags), -1, -1, cfg.Opt("bits"), float64(s.tau)}
	return s, nil
}

// startAt returns the fragment whose all-reduce starts at step s, or −1.
func (st *Streaming) startAt(s int) int {
	if s < 1 {
		return -1
	}
	r := s % st.h
	for p := range st.frags {
		if (p+1)*st.h/st.frags%st.h == r {
			return p
		}
	}
	return -1
}

// finishAt returns the fragment whose all-reduce finishes at step s, or −1.
func (st *Streaming) finishAt(s int) int { return st.startAt(s - st.tau) }

// barrierAfter returns the first step after s at which a fragment starts
// or finishes.
func (st *Streaming) barrierAfter(s int) int {
	for t := s + 1; ; t++ {
		if st.startAt(t) >= 0 || st.finishAt(t) >= 0 {
			return t
		}
	}
}

// Step implements strategy.Strategy.
func (st *Streaming) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start, strategy.CollectiveDone:
		if ev.Kind == strategy.Start {
			st.s, st.merged = 0, 0
			clear(st.steps)
		} else {
			st.s = st.next
		}
		st.next, st.done, st.waiting = st.barrierAfter(st.s), 0, true
		return st.members.Dispatch(out, st.b, st.lr, strategy.LocalStep)
	case strategy.BatchDone:
		d := ev.Device
		if !st.members.In(d) {
			panic(fmt.Sprintf("%s: BatchDone from device %d, which is not in the run", Name, d))
		}
		if st.steps[d]++; st.steps[d] < st.next {
			return append(out, strategy.Action{Kind: strategy.Dispatch, Device: d, Batch: st.b, LR: st.lr})
		}
		st.done++
		return st.barrier(out)
	case strategy.Leave:
		d := ev.Device
		if !st.members.Leave(d) {
			return out
		}
		// A new slice: the records already written keep their weights.
		st.weights = st.members.Uniform(make([]float64, st.n))
		if st.steps[d] >= st.next {
			st.done--
		}
		return st.barrier(out)
	}
	return out
}

// barrier asks for the op at the barrier once every device in the run
// reached it.
func (st *Streaming) barrier(out []strategy.Action) []strategy.Action {
	if !st.waiting || st.done < st.members.Live() {
		return out
	}
	st.waiting = false
	fin := st.finishAt(st.next)
	p := st.params
	a := Outer(st.weights, p[0], p[1], p[2], st.frags, fin, st.startAt(st.next), p[6], st.tau)
	if fin >= 0 {
		// A fragment merged: the steps since the last record.
		bs, lrs, updates := make([]int, st.n), make([]float64, st.n), make([]int, st.n)
		for i := range bs {
			if st.members.In(i) {
				bs[i], lrs[i], updates[i] = st.b, st.lr, st.next-st.merged
			}
		}
		st.merged = st.next
		a.Record = &strategy.MergeRecord{BatchSizes: bs, LRs: lrs, Updates: updates, Weights: st.weights}
	}
	return append(out, a)
}

// state is a Streaming's snapshot.
type state struct {
	S, Next, Done, Merged int
	Steps                 []int
	Waiting               bool
	Weights               []float64
	Members               strategy.Members
}

// MarshalBinary implements strategy.Strategy.
func (st *Streaming) MarshalBinary() ([]byte, error) {
	return strategy.EncodeState(state{S: st.s, Next: st.next, Done: st.done, Merged: st.merged, Steps: st.steps,
		Waiting: st.waiting, Weights: st.weights, Members: st.members})
}

// UnmarshalBinary implements strategy.Strategy.
func (st *Streaming) UnmarshalBinary(b []byte) error {
	var v state
	if err := strategy.DecodeState(b, &v); err != nil {
		return err
	}
	if err := strategy.CheckLens(st.n,
		strategy.Len{What: "steps", N: len(v.Steps)},
		strategy.Len{What: "weights", N: len(v.Weights)},
		strategy.Len{What: "members", N: v.Members.Devices()},
	); err != nil {
		return err
	}
	if v.S < 0 || v.Next < v.S || v.Done < 0 || v.Merged < 0 || v.Merged > v.Next {
		return fmt.Errorf("%s: a snapshot at steps %d→%d, merged at %d", Name, v.S, v.Next, v.Merged)
	}
	st.s, st.next, st.done, st.merged, st.steps = v.S, v.Next, v.Done, v.Merged, v.Steps
	st.waiting, st.weights, st.members = v.Waiting, v.Weights, v.Members
	return nil
}
