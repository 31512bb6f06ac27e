package optim

import (
	"fmt"
	"math"
	"strings"

	"github.com/hetsgd/hetsgd/internal/hugepage"
	"github.com/hetsgd/hetsgd/kernel"
)

// Optimizer updates parameters p in place from gradient g (same length as the
// vector it was made for) with learning rate lr.
type Optimizer interface {
	Step(p, g []float32, lr float32)
	// Reset clears the optimizer's state (momentum, moments, step count), as
	// after a model is replaced by a merged one.
	Reset()
	// Fused starts a step with learning rate lr (counting it, for Adam) and
	// returns it as an elementwise update, for kernels that apply it piece
	// by piece as they produce the gradient; Step is Fused applied at once.
	Fused(lr float32) kernel.Update
	// State returns the optimizer's state vectors — none for SGD, the
	// momentum buffer, Adam's two moments — themselves, not copies, and the
	// steps it counted (Adam's bias correction): a checkpoint saves them, and
	// restores them by writing into the vectors and calling SetSteps.
	State() [][]float32
	Steps() int
	SetSteps(n int)
}

// Config selects and parameterises an optimizer.
type Config struct {
	Name        string  // "sgd", "momentum" or "adam"
	Momentum    float64 // momentum coefficient (momentum); default 0.9
	WeightDecay float64 // L2 coefficient added to the gradient
	Beta1       float64 // Adam; default 0.9
	Beta2       float64 // Adam; default 0.999
	Eps         float64 // Adam; default 1e-8
}

// DefaultMomentum is the momentum coefficient of "momentum" when Config
// leaves it at zero.
const DefaultMomentum = 0.9

// Names lists the optimizers New accepts.
var Names = []string{"sgd", "momentum", "adam"}

// StateVectors returns how many parameter-sized vectors of state the
// optimizer name keeps (momentum 1, Adam 2), for memory estimates.
func StateVectors(name string) int {
	switch strings.ToLower(name) {
	case "momentum":
		return 1
	case "adam":
		return 2
	}
	return 0
}

// New returns the optimizer cfg names for vectors of length n.
func New(cfg Config, n int) (Optimizer, error) {
	def := func(v, d float64) float32 {
		if v == 0 {
			return float32(d)
		}
		return float32(v)
	}
	if cfg.WeightDecay < 0 || math.IsNaN(cfg.WeightDecay) {
		return nil, fmt.Errorf("optim: weight decay %v must be ≥ 0", cfg.WeightDecay)
	}
	wd := float32(cfg.WeightDecay)
	switch strings.ToLower(cfg.Name) {
	case "sgd", "":
		return &SGD{WeightDecay: wd}, nil
	case "momentum":
		mu := def(cfg.Momentum, DefaultMomentum)
		if !(mu > 0 && mu < 1) {
			return nil, fmt.Errorf("optim: momentum %v must be in (0, 1)", cfg.Momentum)
		}
		return &Momentum{Mu: mu, WeightDecay: wd, buf: hugepage.Floats(n)}, nil
	case "adam":
		a := &Adam{Beta1: def(cfg.Beta1, 0.9), Beta2: def(cfg.Beta2, 0.999), Eps: def(cfg.Eps, 1e-8),
			WeightDecay: wd, m: hugepage.Floats(n), v: hugepage.Floats(n)}
		if !(a.Beta1 >= 0 && a.Beta1 < 1 && a.Beta2 >= 0 && a.Beta2 < 1 && a.Eps > 0) {
			return nil, fmt.Errorf("optim: Adam needs 0 ≤ β1, β2 < 1 and ε > 0, got %v, %v, %v", a.Beta1, a.Beta2, a.Eps)
		}
		return a, nil
	}
	return nil, fmt.Errorf("optim: unknown optimizer %q (want %s)", cfg.Name, strings.Join(Names, ", "))
}

// SGD is plain stochastic gradient descent:
//
//	p ← p − lr·(g + wd·p)
type SGD struct {
	WeightDecay float32
	u           kernel.Update
}

func (o *SGD) Step(p, g []float32, lr float32) {
	check(p, g, len(p))
	o.u = o.Fused(lr)
	kernel.ApplyUpdate(p, g, &o.u, 0)
}

// Fused returns the step's update.
func (o *SGD) Fused(lr float32) kernel.Update {
	return kernel.Update{Rule: kernel.SGDRule, LR: lr, WD: o.WeightDecay}
}

func (o *SGD) Reset() {}

func (o *SGD) State() [][]float32 { return nil }
func (o *SGD) Steps() int         { return 0 }
func (o *SGD) SetSteps(int)       {}

// Momentum is SGD with heavy-ball momentum, as torch.optim.SGD:
//
//	b ← μ·b + (g + wd·p);  p ← p − lr·b
type Momentum struct {
	Mu, WeightDecay float32
	buf             []float32
	u               kernel.Update
}

func (o *Momentum) Step(p, g []float32, lr float32) {
	check(p, g, len(o.buf))
	o.u = o.Fused(lr)
	kernel.ApplyUpdate(p, g, &o.u, 0)
}

// Fused returns the step's update.
func (o *Momentum) Fused(lr float32) kernel.Update {
	return kernel.Update{Rule: kernel.MomentumRule, LR: lr, Mu: o.Mu, WD: o.WeightDecay, M: o.buf}
}

func (o *Momentum) Reset() { clear(o.buf) }

func (o *Momentum) State() [][]float32 { return [][]float32{o.buf} }
func (o *Momentum) Steps() int         { return 0 }
func (o *Momentum) SetSteps(int)       {}

// Adam is torch.optim.Adam (L2 decay coupled to the gradient, not AdamW):
//
//	g' = g + wd·p;  m ← β1·m + (1−β1)·g';  v ← β2·v + (1−β2)·g'²
//	p ← p − lr/(1−β1ᵗ) · m / (√v/√(1−β2ᵗ) + ε)
type Adam struct {
	Beta1, Beta2, Eps, WeightDecay float32
	m, v                           []float32
	steps                          int
	u                              kernel.Update
}

func (o *Adam) Step(p, g []float32, lr float32) {
	check(p, g, len(o.m))
	o.u = o.Fused(lr)
	kernel.ApplyUpdate(p, g, &o.u, 0)
}

// Fused counts the step and returns its update.
func (o *Adam) Fused(lr float32) kernel.Update {
	o.steps++
	c1 := 1 - math.Pow(float64(o.Beta1), float64(o.steps))
	c2 := 1 - math.Pow(float64(o.Beta2), float64(o.steps))
	return kernel.Update{Rule: kernel.AdamRule, LR: float32(float64(lr) / c1), Beta1: o.Beta1, Beta2: o.Beta2,
		Eps: o.Eps, WD: o.WeightDecay, C2: float32(1 / math.Sqrt(c2)), M: o.m, V: o.v}
}

func (o *Adam) Reset() {
	clear(o.m)
	clear(o.v)
	o.steps = 0
}

func (o *Adam) State() [][]float32 { return [][]float32{o.m, o.v} }
func (o *Adam) Steps() int         { return o.steps }
func (o *Adam) SetSteps(n int)     { o.steps = n }

func check(p, g []float32, n int) {
	if len(p) != n || len(g) != n {
		panic(fmt.Sprintf("optim: vectors of length %d and %d, want %d", len(p), len(g), n))
	}
}
