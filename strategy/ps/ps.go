// Package ps holds the asynchronous parameter-server strategies: a server
// holds the centre model θ; each worker pulls θ, computes Δ = −η∇L(s) on
// its copy s, and commits, without waiting for anyone. Staleness τ — the
// number of commits between a worker's pull and its commit — emerges from
// the workers' speeds.
//
//   - "downpour" (Dean et al.): commit Δ as it is.
//   - "staleness": commit Δ/(τ+1), the adaptive staleness rescaling of
//     λ-SOFTSYNC and DYNSGD the GEM paper compares against.
//   - "gem" (Hermans & Louppe, Gradient Energy Matching): each worker keeps a
//     momentum m ← μm + Δ and commits π⊙Δ with, per parameter,
//     π = (κ|m| − |θ − s|)/(|Δ| + ε), so that the workers together match the
//     kinetic energy of momentum SGD. π is clamped to [0, 5], as in the
//     authors' code, and a NaN never reaches θ (SPEC §3).
//
// The rules' arithmetic is this package's ops (DownpourOp, StalenessOp,
// GEMOp), which the engine runs for each Commit; the strategy decides when,
// with which rule, and counts staleness.
//
// A worker that leaves the run (strategy.Leave) gets no more batches; its
// batch under way, if any, is lost and never committed. Nobody waits for
// anyone, so nothing else changes.
package ps

import (
	"fmt"

	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

func init() {
	for _, r := range []struct {
		name, summary string
		rule          string
		options       []strategy.Option
		defaults      strategy.Settings
	}{
		{"downpour", "asynchronous parameter server, updates committed as they are (DOWNPOUR)", DownpourOp, nil, downpourDefaults},
		{"staleness", "asynchronous parameter server, updates scaled by 1/(staleness+1)", StalenessOp, nil, stalenessDefaults},
		{"gem", "Gradient Energy Matching: asynchronous updates rescaled per parameter to match momentum SGD's energy", GEMOp, []strategy.Option{
			{Name: "mu", Default: 0.9, Range: setting.Unit, Usage: "momentum μ of the target dynamics"},
			{Name: "kappa", Default: 1, Range: setting.Positive, Usage: "energy scale κ"},
			{Name: "eps", Default: 1e-12, Range: setting.Positive, Paper: "the paper's Algorithm 1 prints 1e-16; ε matters only where |Δ| ≲ ε, commits below float32's resolution of θ either way (Bibtex: best P@1 0.6068 vs 0.6060, BENCHMARKS.md §8)", Usage: "ε of the denominator"},
			{Name: "clip", Default: 5, Range: setting.Positive, Usage: "upper clamp of the scaling factors π (the authors' code)"},
		}, gemDefaults},
	} {
		strategy.Register(strategy.Info{
			Name: r.name, Summary: r.summary, Evaluates: strategy.Center, Options: r.options, Async: true, OwnUpdate: true, DeviceState: r.rule == GEMOp,
			Defaults: r.defaults, Paper: &strategy.Preset{Source: "GEM, Hermans & Louppe, §4 (η 0.05, b 64)", Settings: strategy.Settings{Optimizer: "sgd", LR: 0.05, Batch: 64}},
			New: func(cfg strategy.Config) (strategy.Strategy, error) { return New(cfg, r.rule) },
		})
	}
}

// The parameter servers' defaults (BENCHMARKS.md §8). Their update is
// Δ = −lr·g committed by the rule: "sgd" names that update, no local
// optimizer runs.
// Staleness divides every commit by τ+1 ≈ devices, so it takes a larger
// rate.
var (
	downpourDefaults  = strategy.Settings{Optimizer: "sgd", LR: 0.316, Batch: 64, MaxLR: 0.316}
	stalenessDefaults = strategy.Settings{Optimizer: "sgd", LR: 1, Batch: 64, MaxLR: 3.16}
	gemDefaults       = strategy.Settings{Optimizer: "sgd", LR: 0.316, Batch: 64, MaxLR: 1}
)

// Server is the strategy's state: one commit counter and, per worker, the
// count at its last pull.
type Server struct {
	n, b     int
	lr       float64
	rule     string
	params   [strategy.MaxParams]float64 // the rule's
	commits  int
	pulledAt []int
	working  []bool
	members  strategy.Members
}

// New returns a parameter-server strategy committing by rule.
func New(cfg strategy.Config, rule string) (*Server, error) {
	s := &Server{n: cfg.Devices, b: cfg.Batch, lr: cfg.LR, rule: rule,
		pulledAt: make([]int, cfg.Devices), working: make([]bool, cfg.Devices), members: strategy.NewMembers(cfg.Devices)}
	if rule == GEMOp {
		s.params = [strategy.MaxParams]float64{cfg.Opt("mu"), cfg.Opt("kappa"), cfg.Opt("eps"), cfg.Opt("clip")}
	}
	return s, nil
}

func (s *Server) dispatch(out []strategy.Action, d int) []strategy.Action {
	s.pulledAt[d] = s.commits
	s.working[d] = true
	return append(out, strategy.Action{Kind: strategy.Dispatch, Device: d, Batch: s.b, LR: s.lr, Mode: strategy.Pull})
}

func (s *Server) Step(ev strategy.Event, out []strategy.Action) []strategy.Action {
	switch ev.Kind {
	case strategy.Start:
		for d := 0; d < s.n; d++ {
			if s.members.In(d) {
				out = s.dispatch(out, d)
			}
		}
	case strategy.BatchDone:
		d := ev.Device
		if d < 0 || d >= s.n || !s.working[d] {
			panic(fmt.Sprintf("ps: BatchDone from device %d, which has no batch", d))
		}
		s.working[d] = false
		out = append(out, strategy.Action{Kind: strategy.Commit, Device: d, Op: s.rule, LR: s.lr,
			Tau: s.commits - s.pulledAt[d], Params: s.params})
		s.commits++
		out = s.dispatch(out, d)
	case strategy.Leave:
		if s.members.Leave(ev.Device) {
			s.working[ev.Device] = false // its batch is lost: nothing to commit
		}
	}
	return out
}

type serverState struct {
	Commits  int
	PulledAt []int
	Working  []bool
	Members  strategy.Members
}

// MarshalBinary implements strategy.Strategy.
func (s *Server) MarshalBinary() ([]byte, error) {
	return strategy.EncodeState(serverState{Commits: s.commits, PulledAt: s.pulledAt, Working: s.working, Members: s.members})
}

// UnmarshalBinary implements strategy.Strategy.
func (s *Server) UnmarshalBinary(b []byte) error {
	var st serverState
	if err := strategy.DecodeState(b, &st); err != nil {
		return err
	}
	if err := strategy.CheckLens(s.n,
		strategy.Len{What: "pulls", N: len(st.PulledAt)},
		strategy.Len{What: "workers", N: len(st.Working)},
		strategy.Len{What: "members", N: st.Members.Devices()},
	); err != nil {
		return err
	}
	s.commits, s.pulledAt, s.working, s.members = st.Commits, st.PulledAt, st.Working, st.Members
	return nil
}
