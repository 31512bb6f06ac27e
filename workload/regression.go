package workload

import (
	"fmt"
	"math/rand/v2"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/runlog"
)

// Regression is the stochastic linear regression task of the aggregation
// paper of SPEC §3 (its §4.1):
//
//	min over w ∈ R^d of  f(w) = E[(wᵀζ)²/2],  ζ ~ U[0,1]^d
//
// Each sample is a fresh ζ drawn from the worker's own seeded stream. Since
// E[ζζᵀ] = A = I/12 + 11ᵀ/4, the objective is known exactly: f(w) = wᵀAw/2,
// minimised at w* = 0. Evaluate reports f(w) as the loss (P@k do not apply),
// and Step gives the "optimal (analytical) step size" the paper provides to
// every aggregation method.
//
// The paper does not say which step that is; the authors' published code
// takes the step that brings w closest to the optimum, η = ψᵀ(w − w*)/‖ψ‖²
// (RuleDistance, the default). RuleLoss is the other reading, the exact line
// search of f along ψ. The two rank the aggregation methods differently, so
// the study reports both.
type Regression struct {
	D      int    // dimension (the paper: 1000)
	Points int    // nominal training-set size, for epochs
	Rule   string // RuleDistance ("" too) or RuleLoss
}

// Step rules of Regression.
const (
	RuleDistance = "distance" // η minimising ‖w − ηψ − w*‖: the authors' code
	RuleLoss     = "loss"     // η minimising f(w − ηψ): exact line search
)

func (r *Regression) Name() string   { return "regression" }
func (r *Regression) Size() int      { return r.Points }
func (r *Regression) NumParams() int { return r.D }
func (r *Regression) Shape() Shape   { return Shape{Dense: float64(r.D), Params: float64(r.D)} }

// Init starts from w with entries U[−5, 5], as the authors' code does.
func (r *Regression) Init(p []float32, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5e9))
	for i := range p {
		p[i] = float32(10*rng.Float64() - 5)
	}
}

// applyA writes A·v into out.
func applyA(out, v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	q := float32(s / 4)
	for i, x := range v {
		out[i] = x/12 + q
	}
}

// Evaluate returns f(w) = wᵀAw/2 as the loss.
func (r *Regression) Evaluate(p []float32) metric.Scores {
	a := make([]float32, len(p))
	applyA(a, p)
	return metric.Scores{Loss: kernel.Dot(p, a) / 2, Points: 1}
}

// CheckRule reports whether the step rule is known.
func (r *Regression) CheckRule() error {
	switch r.Rule {
	case "", RuleDistance, RuleLoss:
		return nil
	}
	return fmt.Errorf("workload: regression step rule %q: want %s or %s", r.Rule, RuleDistance, RuleLoss)
}

// Step returns the step along −dir from p: under RuleDistance
// dirᵀp/‖dir‖² (w* = 0), under RuleLoss (dirᵀAp)/(dirᵀA·dir); 0 when dir is 0.
func (r *Regression) Step(p, dir []float32) float64 {
	if r.Rule == RuleLoss {
		a := make([]float32, len(dir))
		applyA(a, dir)
		den := kernel.Dot(dir, a)
		if den == 0 {
			return 0
		}
		return kernel.Dot(p, a) / den
	}
	den := kernel.Dot(dir, dir)
	if den == 0 {
		return 0
	}
	return kernel.Dot(p, dir) / den
}

func (r *Regression) NewWorker(maxBatch int, seed uint64, _ bool) (Worker, error) {
	pcg := rand.NewPCG(seed, 0x2e7a)
	return &regressionWorker{d: r.D, zeta: make([]float32, maxBatch*r.D), rng: rand.New(pcg), pcg: pcg}, nil
}

func (w *regressionWorker) RandomState() ([]byte, error)  { return w.pcg.MarshalBinary() }
func (w *regressionWorker) SetRandomState(b []byte) error { return w.pcg.UnmarshalBinary(b) }

type regressionWorker struct {
	d    int
	n    int
	zeta []float32
	rng  *rand.Rand
	pcg  *rand.PCG // rng's source
}

// Load draws n fresh samples; the shared stream only counts them.
func (w *regressionWorker) Load(s *data.Sampler, n int) {
	w.n = n
	z := w.zeta[:n*w.d]
	for i := range z {
		z[i] = float32(w.rng.Float64())
	}
}

// Gradient of the batch mean of (wᵀζ)²/2: the mean of (wᵀζ)·ζ.
func (w *regressionWorker) Gradient(p, g []float32) float64 {
	clear(g)
	var loss float64
	inv := 1 / float32(w.n)
	for i := 0; i < w.n; i++ {
		z := w.zeta[i*w.d : (i+1)*w.d]
		r := float32(kernel.Dot(p, z))
		loss += float64(r) * float64(r) / 2
		kernel.Axpy(r*inv, z, g)
	}
	return loss / float64(w.n)
}

func (w *regressionWorker) Loaded() (int, int) { return w.n, 0 }

// Kind implements Describer.
func (r *Regression) Kind() string { return r.Name() }

// Describe implements Describer.
func (r *Regression) Describe(rec *runlog.Config, lineSearch bool) {
	rec.Workload = "regression"
	if lineSearch {
		rec.StepRule = r.Rule
		if rec.StepRule == "" {
			rec.StepRule = RuleDistance
		}
	}
}

// ScoredByLoss implements LossScored: the regression has no P@k.
func (r *Regression) ScoredByLoss() {}
