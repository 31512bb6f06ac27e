package ps

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/strategy"
)

// The parameter servers' commit rules, as ops (strategy.Committer). Each
// applies a worker's update, from the gradient g it computed on its copy s
// of θ, per parameter:
//
//	downpour:   θ ← θ + Δ,                 Δ = −lr·g
//	staleness:  θ ← θ + Δ/(τ+1)
//	gem:        m ← μ·m + Δ;  π = clamp((κ|m| − |θ − s|)/(|Δ| + ε), 0, clip);  θ ← θ + π⊙Δ
//
// with m the worker's own momentum (its state vector) and μ, κ, ε, clip
// Params[0…3] of the gem rule.
const (
	DownpourOp  = "downpour"
	StalenessOp = "staleness"
	GEMOp       = "gem"
)

func init() {
	strategy.RegisterOp(DownpourOp, func() strategy.Op { return &rule{name: DownpourOp} })
	strategy.RegisterOp(StalenessOp, func() strategy.Op { return &rule{name: StalenessOp} })
	strategy.RegisterOp(GEMOp, func() strategy.Op { return &rule{name: GEMOp} })
}

// rule is one commit rule on one rank, with GEM's sample of parameters its
// π is reported on.
type rule struct {
	name string
	pi   piSample
}

func (r *rule) Format(a *strategy.Action) string {
	s := fmt.Sprintf("commit dev=%d %s lr=%s", a.Device, r.name, strategy.G(a.LR))
	switch r.name {
	case StalenessOp:
		s += fmt.Sprintf(" tau=%d", a.Tau)
	case GEMOp:
		p := a.Params
		s += fmt.Sprintf(" mu=%s kappa=%s eps=%s clip=%s", strategy.G(p[0]), strategy.G(p[1]), strategy.G(p[2]), strategy.G(p[3]))
	}
	return s
}

// Cost: the commit's traffic is priced with the pull that follows it, on
// the server's link.
func (*rule) Cost(*strategy.Action) strategy.Cost { return strategy.Cost{} }

func (r *rule) Check(a *strategy.Action, _ int) error {
	if a.Tau < 0 {
		return fmt.Errorf("staleness %d", a.Tau)
	}
	if p := a.Params; r.name == GEMOp && !(p[0] >= 0 && p[0] < 1 && p[1] > 0 && p[2] > 0 && p[3] > 0) {
		return fmt.Errorf("mu %v, kappa %v, eps %v, clip %v: want mu in [0, 1) and the others positive", p[0], p[1], p[2], p[3])
	}
	return nil
}

// NeedsCenter: GEM's π compares the worker's copy with θ as it is now.
func (r *rule) NeedsCenter(*strategy.Action) bool { return r.name == GEMOp }

// CommitLocal adds the update to θ in the pass that computes it.
func (r *rule) CommitLocal(h strategy.Host, d strategy.Replica, a *strategy.Action) float64 {
	return r.commit(h, d, a, h.Center(), true)
}

// Delta turns the gradient into the update.
func (r *rule) Delta(h strategy.Host, d strategy.Replica, a *strategy.Action, theta []float32) float64 {
	return r.commit(h, d, a, theta, false)
}

// Apply adds the update: θ ← θ + Δ.
func (*rule) Apply(h strategy.Host, _ *strategy.Action, update []float32) {
	kernel.Axpy(1, update, h.Center())
}

func (r *rule) commit(h strategy.Host, d strategy.Replica, a *strategy.Action, theta []float32, apply bool) float64 {
	lr, g := float32(a.LR), d.Grad()
	switch r.name {
	case DownpourOp, StalenessOp:
		if r.name == StalenessOp {
			lr /= float32(a.Tau + 1)
		}
		if apply {
			kernel.Axpy(-lr, g, theta)
		} else {
			kernel.Scal(-lr, g)
		}
		return math.NaN()
	}
	p := a.Params
	mu, kappa, eps, clip := float32(p[0]), float32(p[1]), float32(p[2]), float32(p[3])
	m := d.State()
	pi := r.pi.median(h.Seed(), theta, d, lr, mu, kappa, eps, clip)
	if apply {
		kernel.GEMCommit(theta, d.Params(), m, g, lr, mu, kappa, eps, clip)
	} else {
		kernel.GEMDelta(g, theta, d.Params(), m, lr, mu, kappa, eps, clip)
	}
	return pi
}

// piSample measures GEM's scaling factors on a fixed sample of parameters.
type piSample struct {
	sample []int
	buf    []float64
}

// median returns the median of GEM's π over the sample, as the commit about
// to happen will compute them, counting only parameters the update changes
// (Δ ≠ 0): with sparse inputs most first-layer weights get no gradient from
// a batch and their π means nothing. NaN when none in the sample changes.
func (s *piSample) median(seed uint64, theta []float32, d strategy.Replica, lr, mu, kappa, eps, clip float32) float64 {
	if s.sample == nil {
		rng := rand.New(rand.NewPCG(seed, 0x91))
		k := min(512, len(theta))
		s.sample = rng.Perm(len(theta))[:k]
		s.buf = make([]float64, k)
	}
	g, m, p := d.Grad(), d.State(), d.Params()
	pis := s.buf[:0]
	for _, j := range s.sample {
		delta := -lr * g[j]
		if delta == 0 {
			continue
		}
		mj := mu*m[j] + delta
		pis = append(pis, float64(kernel.GEMFactor(theta[j], p[j], mj, delta, kappa, eps, clip)))
	}
	if len(pis) == 0 {
		return math.NaN()
	}
	slices.Sort(pis)
	return pis[len(pis)/2]
}
