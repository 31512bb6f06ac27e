package optim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
)

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// refStep is the plain float64 statement of each rule (torch.optim's).
type refState struct{ m, v []float64 }

func refStep(name string, p, g []float64, st *refState, t int, lr, wd float64) {
	const mu, b1, b2, eps = 0.9, 0.9, 0.999, 1e-8
	for j := range p {
		gj := g[j] + wd*p[j]
		switch name {
		case "sgd":
			p[j] -= lr * gj
		case "momentum":
			st.m[j] = mu*st.m[j] + gj
			p[j] -= lr * st.m[j]
		case "adam":
			st.m[j] = b1*st.m[j] + (1-b1)*gj
			st.v[j] = b2*st.v[j] + (1-b2)*gj*gj
			mh := st.m[j] / (1 - math.Pow(b1, float64(t)))
			vh := st.v[j] / (1 - math.Pow(b2, float64(t)))
			p[j] -= lr * mh / (math.Sqrt(vh) + eps)
		}
	}
}

func TestOptimizersMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, name := range Names {
		for _, n := range []int{1, 7, 1 << 16} { // short and parallel paths
			for _, wd := range []float64{0, 1e-2} {
				o, err := New(Config{Name: name, WeightDecay: wd}, n)
				if err != nil {
					t.Fatal(err)
				}
				p := randVec(r, n)
				p64 := make([]float64, n)
				for i, v := range p {
					p64[i] = float64(v)
				}
				st := &refState{m: make([]float64, n), v: make([]float64, n)}
				for step := 1; step <= 5; step++ {
					g := randVec(r, n)
					g64 := make([]float64, n)
					for i, v := range g {
						g64[i] = float64(v)
					}
					o.Step(p, g, 0.01)
					refStep(name, p64, g64, st, step, 0.01, wd)
				}
				for i := range p {
					if d := math.Abs(float64(p[i]) - p64[i]); d > 1e-5*(1+math.Abs(p64[i])) {
						t.Fatalf("%s n=%d wd=%v: p[%d]=%v, reference %v", name, n, wd, i, p[i], p64[i])
					}
				}
				o.Reset()
			}
		}
	}
}

func TestOptimizerErrorsAndAllocs(t *testing.T) {
	for _, c := range []Config{{Name: "rmsprop"}, {Name: "momentum", Momentum: 1.5}, {Name: "sgd", WeightDecay: -1}, {Name: "adam", Beta1: 1}} {
		if _, err := New(c, 3); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	p, g := randVec(r, 1<<17), randVec(r, 1<<17)
	for _, name := range Names {
		o, _ := New(Config{Name: name}, len(p))
		if a := testing.AllocsPerRun(10, func() { o.Step(p, g, 1e-3) }); !race.Enabled && a != 0 {
			t.Errorf("%s.Step allocates %v times", name, a)
		}
	}
}

// An optimizer whose State and Steps are copied into a new one continues
// exactly as the first: what a checkpoint relies on.
func TestOptimizerStateRestores(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	const n = 33
	for _, name := range Names {
		a, _ := New(Config{Name: name, WeightDecay: 0.01}, n)
		p := randVec(r, n)
		for range 3 {
			a.Step(p, randVec(r, n), 0.1)
		}
		b, _ := New(Config{Name: name, WeightDecay: 0.01}, n)
		for i, v := range a.State() {
			copy(b.State()[i], v)
		}
		b.SetSteps(a.Steps())
		q := slices.Clone(p)
		for k := range 3 {
			g := randVec(r, n)
			a.Step(p, g, 0.1)
			b.Step(q, g, 0.1)
			if !slices.Equal(p, q) {
				t.Fatalf("%s: step %d after the restore differs: %v vs %v", name, k, p[:3], q[:3])
			}
		}
		if name == "adam" && a.Steps() != 6 {
			t.Errorf("adam counted %d steps, want 6", a.Steps())
		}
	}
}
