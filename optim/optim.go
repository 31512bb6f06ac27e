package optim

import (
	"fmt"
	"math"
	"strings"

	"github.com/hetsgd/hetsgd/kernel"
)

// Optimizer updates parameters p in place from gradient g (same length as the
// vector it was made for) with learning rate lr.
type Optimizer interface {
	Step(p, g []float32, lr float32)
	// Reset clears the optimizer's state (momentum, moments, step count), as
	// after a model is replaced by a merged one.
	Reset()
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

// Names lists the optimizers New accepts.
var Names = []string{"sgd", "momentum", "adam"}

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
		mu := def(cfg.Momentum, 0.9)
		if !(mu > 0 && mu < 1) {
			return nil, fmt.Errorf("optim: momentum %v must be in (0, 1)", cfg.Momentum)
		}
		return &Momentum{Mu: mu, WeightDecay: wd, buf: make([]float32, n)}, nil
	case "adam":
		a := &Adam{Beta1: def(cfg.Beta1, 0.9), Beta2: def(cfg.Beta2, 0.999), Eps: def(cfg.Eps, 1e-8),
			WeightDecay: wd, m: make([]float32, n), v: make([]float32, n)}
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
	t           task
}

func (o *SGD) Step(p, g []float32, lr float32) {
	check(p, g, len(p))
	o.t = task{op: opSGD, p: p, g: g, lr: lr, wd: o.WeightDecay}
	run(&o.t)
}

func (o *SGD) Reset() {}

// Momentum is SGD with heavy-ball momentum, as torch.optim.SGD:
//
//	b ← μ·b + (g + wd·p);  p ← p − lr·b
type Momentum struct {
	Mu, WeightDecay float32
	buf             []float32
	t               task
}

func (o *Momentum) Step(p, g []float32, lr float32) {
	check(p, g, len(o.buf))
	o.t = task{op: opMomentum, p: p, g: g, lr: lr, wd: o.WeightDecay, mu: o.Mu, m: o.buf}
	run(&o.t)
}

func (o *Momentum) Reset() { clear(o.buf) }

// Adam is torch.optim.Adam (L2 decay coupled to the gradient, not AdamW):
//
//	g' = g + wd·p;  m ← β1·m + (1−β1)·g';  v ← β2·v + (1−β2)·g'²
//	p ← p − lr/(1−β1ᵗ) · m / (√v/√(1−β2ᵗ) + ε)
type Adam struct {
	Beta1, Beta2, Eps, WeightDecay float32
	m, v                           []float32
	steps                          int
	t                              task
}

func (o *Adam) Step(p, g []float32, lr float32) {
	check(p, g, len(o.m))
	o.steps++
	c1 := 1 - math.Pow(float64(o.Beta1), float64(o.steps))
	c2 := 1 - math.Pow(float64(o.Beta2), float64(o.steps))
	o.t = task{op: opAdam, p: p, g: g, wd: o.WeightDecay, m: o.m, v: o.v,
		b1: o.Beta1, b2: o.Beta2, eps: o.Eps,
		lr: float32(float64(lr) / c1), c2: float32(1 / math.Sqrt(c2))}
	run(&o.t)
}

func (o *Adam) Reset() {
	clear(o.m)
	clear(o.v)
	o.steps = 0
}

func check(p, g []float32, n int) {
	if len(p) != n || len(g) != n {
		panic(fmt.Sprintf("optim: vectors of length %d and %d, want %d", len(p), len(g), n))
	}
}

type opKind uint8

const (
	opSGD opKind = iota
	opMomentum
	opAdam
)

type task struct {
	op              opKind
	p, g, m, v      []float32
	lr, wd, mu      float32
	b1, b2, eps, c2 float32
}

// chunks is the fixed number of parts a long vector is cut into.
const chunks = 32

func run(t *task) {
	if len(t.p) < 1<<15 {
		for i := 0; i < chunks; i++ {
			t.Part(i, chunks)
		}
		return
	}
	kernel.Default().Run(t, chunks)
}

func (t *task) Part(i, n int) {
	lo, hi := i*len(t.p)/n, (i+1)*len(t.p)/n
	p, g := t.p[lo:hi], t.g[lo:hi:hi]
	lr, wd := t.lr, t.wd
	switch t.op {
	case opSGD:
		if wd == 0 {
			for j, gj := range g {
				p[j] -= lr * gj
			}
			return
		}
		for j, gj := range g {
			p[j] -= lr * (gj + wd*p[j])
		}
	case opMomentum:
		b := t.m[lo:hi:hi]
		for j, gj := range g {
			b[j] = t.mu*b[j] + gj + wd*p[j]
			p[j] -= lr * b[j]
		}
	case opAdam:
		m, v := t.m[lo:hi:hi], t.v[lo:hi:hi]
		b1, b2, eps, c2 := t.b1, t.b2, t.eps, t.c2
		for j, gj := range g {
			gj += wd * p[j]
			m[j] = b1*m[j] + (1-b1)*gj
			v[j] = b2*v[j] + (1-b2)*gj*gj
			p[j] -= lr * m[j] / (float32(math.Sqrt(float64(v[j])))*c2 + eps)
		}
	}
}
