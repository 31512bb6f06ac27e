// Package asynclocal is asynchronous Local-SGD for heterogeneous devices
// (Liu et al., 2024, "Asynchronous Local-SGD Training for Language
// Modeling"): each device takes H_w steps of its own (inner) optimizer from
// the global model θ it last had, then pushes its pseudo-gradient
//
//	δ = θ_w,start − θ_w
//
// without waiting for anyone; the server applies it at once with the
// paper's Delayed Nesterov update (their Algorithm 3, c = 0), whose
// momentum m moves once every N pushes, on their mean:
//
//	Δ̃ ← Δ̃ + δ_t
//	every N-th push:  m ← β·m + Δ̃/N;  θ ← θ − η·(β·m + δ_t/N);  Δ̃ ← 0
//	otherwise:        θ ← θ − η·δ_t/N
//
// and the device goes on from the θ its push made (their Algorithm 2's
// sync). Dynamic local updates (their DyLU, eq. 6) give each device local
// steps in proportion to its speed, H_w = ⌊v_w / max v · H⌋ (at least 1):
// every device then takes about as long per round as the fastest, the idea
// of Adaptive SGD's batch-size scaling applied to the number of steps. The
// speeds are estimated from observation, as the paper allows: v_w is the
// number of batches device w has finished, all batches being the same
// size.
//
// Defaults: H is elastic's k (⌈min(100, ⌈N/(2·b)⌉)/devices⌉: the same
// communication as the other model-averaging strategies; the paper's is
// 50); N is the number of devices (the paper's delay periods 4, 8, 16 go
// with as many workers); η = 0.7, DiLoCo's, which the paper's grid for η
// includes (its chosen value is not stated). The momentum β defaults to 0:
// on Bibtex and Delicious with devices of different speeds every β > 0 of
// the grid reached the target later, 0.9 (the authors' example) much later
// or never (BENCHMARKS.md §15) — the stale momentum the paper's delay
// tames was still too much here — so by default the Delayed Nesterov
// update is plain asynchronous averaging at η/N per push; give
// --async-local.outer-momentum for the paper's method.
// The inner optimizer is the run's (the paper's is AdamW; the default here
// is Adam).
//
// The arithmetic is this package's ops: BeginOp, a collective before the
// first batch that records where each device starts, and PushOp, the
// commit (strategy.Committer and Restarter) with the server's momentum in
// the centre's state vector and each device's starting point in its own.
// Ops read the steps of the delay from the action: the strategy counts the
// pushes. A device that leaves the run (strategy.Leave) takes no more work
// and its round is lost; nobody waits for anyone.
package asynclocal

import (
	"fmt"
	"slices"

	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

func init() {
	strategy.Register(strategy.Info{
		Name:        "async-local",
		Summary:     "asynchronous Local-SGD: local steps scaled to each device's speed, pseudo-gradients pushed to a delayed-Nesterov server",
		Evaluates:   strategy.Center,
		Async:       true,
		DeviceState: true,
		Options: slices.Concat(
			[]strategy.Option{strategy.RoundStepsOption("h", "the paper's H is 50 inner steps", "local steps of the fastest device between its pushes")},
			strategy.OuterOptions("the server's learning rate η", 0,
				"the authors' example runs β 0.9, which trained worse or not to the grid's target on Bibtex and Delicious; 0 reached it first (BENCHMARKS.md §15)",
				"the server's Nesterov momentum β"),
			[]strategy.Option{
				{Name: "delay", Derive: func(c strategy.Config, _ map[string]float64) float64 { return float64(c.Devices) },
					Formula: "devices", Range: setting.Count(1, setting.MaxCount),
					Usage: "N: the momentum moves once every N pushes (1: plain Nesterov at every push)"},
				{Name: "dylu", Default: 1, Range: setting.Count(0, 1), Usage: "1: local steps in proportion to each device's speed (dynamic local updates); 0: H for every device"},
			}),
		Defaults: strategy.Settings{Optimizer: "adam", LR: 0.01, Batch: 128}, // elastic's (BENCHMARKS.md §8); see §15
		Paper:    &strategy.Preset{Source: "Asynchronous Local-SGD, Liu et al. 2024, §5 (H 50; DN with c = 0; DyLU; β 0.9 of the authors' example)", Options: map[string]float64{"h": 50, "outer-momentum": 0.9}},
		New:      New,
	})
	strategy.RegisterOp(BeginOp, func() strategy.Op { return begin{} })
	strategy.RegisterOp(PushOp, func() strategy.Op { return push{} })
}

type asyncLocal struct {
	n, b, h     int
	lr, eta, mu float64
	delay       int
	dylu        bool
	members     strategy.Members
	steps       []int   // local steps taken this round
	quota       []int   // local steps of this round (H_w)
	finished    []int64 // batches finished, for the speeds
	syncedAt    []int   // pushes when the device last had θ
	working     []bool
	pushes      int
	started     bool // the begin collective is done
}

// New returns the asynchronous Local-SGD strategy.
func New(cfg strategy.Config) (strategy.Strategy, error) {
	n := cfg.Devices
	s := &asyncLocal{n: n, b: cfg.Batch, h: int(cfg.Opt("h")), lr: cfg.LR, eta: cfg.Opt("outer-lr"), mu: cfg.Opt("outer-momentum"),
		delay: int(cfg.Opt("delay")), dylu: cfg.Opt("dylu") == 1, members: strategy.NewMembers(n),
		steps: make([]int, n), quota: make([]int, n), finished: make([]int64, n), syncedAt: make([]int, n), working: make([]bool, n)}
	for d := range s.quota {
		s.quota[d] = s.h
	}
	return s, nil
}

func (s *asyncLocal) dispatch(out []strategy.Action, d int) []strategy.Action {
	s.working[d] = true
	return append(out, strategy.Action{Kind: strategy.Dispatch, Device: d, Batch: s.b, LR: s.lr, Mode: strategy.LocalStep})
}

func (s *asyncLocal) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start:
		s.started = false
		return append(out, strategy.Action{Kind: strategy.Collective, Op: BeginOp})
	case strategy.CollectiveDone:
		s.started = true
		for d := range s.n {
			if s.members.In(d) {
				out = s.dispatch(out, d)
			}
		}
	case strategy.BatchDone:
		d := ev.Device
		if !s.members.In(d) || !s.working[d] {
			panic(fmt.Sprintf("async-local: BatchDone from device %d, which has no batch", d))
		}
		s.working[d] = false
		s.finished[d]++
		if s.steps[d]++; s.steps[d] < s.quota[d] {
			return s.dispatch(out, d)
		}
		out = append(out, s.push(d))
		s.steps[d] = 0
		s.quota[d] = s.quotaOf(d)
		return s.dispatch(out, d)
	case strategy.Leave:
		if s.members.Leave(ev.Device) {
			s.working[ev.Device] = false // its batch and its round are lost
		}
	}
	return out
}

// push is device d's commit: the t-th push opens a period of the delay
// when t mod N = 0 and closes one when (t+1) mod N = 0.
func (s *asyncLocal) push(d int) strategy.Action {
	t := s.pushes
	a := strategy.Action{Kind: strategy.Commit, Device: d, Op: PushOp, LR: s.eta, Tau: t - s.syncedAt[d]}
	a.Params[0], a.Params[1] = s.mu, float64(s.delay)
	if t%s.delay == 0 {
		a.Params[2] = 1
	}
	if (t+1)%s.delay == 0 {
		a.Params[3] = 1
	}
	s.pushes++
	s.syncedAt[d] = s.pushes
	return a
}

// quotaOf is device d's local steps for its next round: H, or with dynamic
// local updates H scaled by its speed over the fastest device's.
func (s *asyncLocal) quotaOf(d int) int {
	if !s.dylu {
		return s.h
	}
	var fastest int64
	for e := range s.n {
		if s.members.In(e) {
			fastest = max(fastest, s.finished[e])
		}
	}
	if fastest == 0 {
		return s.h
	}
	return max(1, int(float64(s.finished[d])/float64(fastest)*float64(s.h)))
}

type asyncState struct {
	Steps, Quota, SyncedAt []int
	Finished               []int64
	Working                []bool
	Pushes                 int
	Started                bool
	Members                strategy.Members
}

// MarshalBinary implements strategy.Strategy.
func (s *asyncLocal) MarshalBinary() ([]byte, error) {
	return strategy.EncodeState(asyncState{Steps: s.steps, Quota: s.quota, SyncedAt: s.syncedAt, Finished: s.finished,
		Working: s.working, Pushes: s.pushes, Started: s.started, Members: s.members})
}

// UnmarshalBinary implements strategy.Strategy.
func (s *asyncLocal) UnmarshalBinary(b []byte) error {
	var st asyncState
	if err := strategy.DecodeState(b, &st); err != nil {
		return err
	}
	if err := strategy.CheckLens(s.n,
		strategy.Len{What: "steps", N: len(st.Steps)},
		strategy.Len{What: "quotas", N: len(st.Quota)},
		strategy.Len{What: "syncs", N: len(st.SyncedAt)},
		strategy.Len{What: "batch counts", N: len(st.Finished)},
		strategy.Len{What: "workers", N: len(st.Working)},
		strategy.Len{What: "members", N: st.Members.Devices()},
	); err != nil {
		return err
	}
	s.steps, s.quota, s.syncedAt, s.finished, s.working = st.Steps, st.Quota, st.SyncedAt, st.Finished, st.Working
	s.pushes, s.started, s.members = st.Pushes, st.Started, st.Members
	return nil
}
