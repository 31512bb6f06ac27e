//go:build cuda

package gpu_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/cuda/cudatest"
	"github.com/hetsgd/hetsgd/gpu"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/sparse"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

// batch draws rows of up to 6 features with values and up to 3 labels;
// some rows have no label.
func batch(r *rand.Rand, rows, inputs, outputs int, pattern bool) (x, y *sparse.CSR) {
	bx := sparse.NewBuilder(inputs, pattern, rows, rows*6)
	by := sparse.NewBuilder(outputs, true, rows, rows*3)
	for range rows {
		for _, j := range r.Perm(inputs)[:1+r.IntN(6)] {
			bx.Append(int32(j), float32(r.Float64()))
		}
		bx.EndRow()
		if r.IntN(5) > 0 {
			for _, l := range r.Perm(outputs)[:1+r.IntN(3)] {
				by.Append(int32(l), 1)
			}
		}
		by.EndRow()
	}
	xs, ys := bx.Build(), by.Build()
	return &xs, &ys
}

func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("%s element %d: %v, want %v", what, i, got[i], want[i])
		}
	}
}

// The gradient and loss on the GPU equal the host's (model.Workspace), for
// networks with and without hidden layers, either layout of the output
// layer, binary and valued inputs, and an empty batch.
func TestGradientMatchesHost(t *testing.T) {
	g := cudatest.GPU(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		cfg     model.Config
		rows    int
		pattern bool
	}{
		{model.Config{Inputs: 50, Hidden: []int{16}, Outputs: 300}, 9, false},
		{model.Config{Inputs: 40, Hidden: []int{24, 8}, Outputs: 33}, 5, true},
		{model.Config{Inputs: 30, Outputs: 7}, 4, false},
		{model.Config{Inputs: 30, Hidden: []int{12}, Outputs: 260, LabelMajor: true}, 6, false},
		{model.Config{Inputs: 30, Hidden: []int{12}, Outputs: 20}, 0, false},
	} {
		m, err := model.New(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float32, m.NumParams())
		m.Init(p, 7)
		x, y := batch(r, c.rows, c.cfg.Inputs, c.cfg.Outputs, c.pattern)
		want := make([]float32, len(p))
		ws := m.NewWorkspace(max(c.rows, 1))
		wantLoss := ws.Gradient(p, want, x, y)

		n, err := gpu.NewNet(g, m, 16, 200, 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.SetParams(p); err != nil {
			t.Fatal(err)
		}
		if err := n.Load(x, y); err != nil {
			t.Fatal(err)
		}
		loss, err := n.Gradient()
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, len(p))
		if err := n.GradientOut(got); err != nil {
			t.Fatal(err)
		}
		if math.Abs(loss-wantLoss) > 1e-5*(1+math.Abs(wantLoss)) {
			t.Errorf("%+v: loss %v, want %v", c.cfg, loss, wantLoss)
		}
		near(t, "gradient", got, want, 1e-4)
		n.Close()
	}
}

// A step of plain SGD on the GPU equals the host's Step with the SGD rule,
// over several batches; logits equal the host's Forward.
func TestStepMatchesHost(t *testing.T) {
	g := cudatest.GPU(t)
	r := rand.New(rand.NewPCG(5, 6))
	m, err := model.New(model.Config{Inputs: 60, Hidden: []int{32}, Outputs: 400})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	m.Init(p, 11)
	n, err := gpu.NewNet(g, m, 8, 64, 32)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.SetParams(p); err != nil {
		t.Fatal(err)
	}
	ws := m.NewWorkspace(8)
	scratch := make([]float32, len(p))
	u := &kernel.Update{Rule: kernel.SGDRule, LR: 0.5}
	for step := range 5 {
		x, y := batch(r, 8, 60, 400, false)
		want := ws.Step(p, scratch, x, y, u)
		if err := n.Load(x, y); err != nil {
			t.Fatal(err)
		}
		loss, err := n.Step(u)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(loss-want) > 1e-5*(1+math.Abs(want)) {
			t.Errorf("step %d: loss %v, want %v", step, loss, want)
		}
	}
	got := make([]float32, len(p))
	if err := n.Params(got); err != nil {
		t.Fatal(err)
	}
	near(t, "parameters after five steps", got, p, 1e-4)

	x, y := batch(r, 3, 60, 400, false)
	ws.Forward(p, x)
	if err := n.Load(x, y); err != nil {
		t.Fatal(err)
	}
	z := make([]float32, 3*400)
	if err := n.Predict(z); err != nil {
		t.Fatal(err)
	}
	near(t, "logits", z, ws.Logits(), 1e-4)
}

// Batches beyond the replica's sizes, and of another shape, are refused.
func TestLoadRefuses(t *testing.T) {
	g := cudatest.GPU(t)
	m, _ := model.New(model.Config{Inputs: 20, Hidden: []int{4}, Outputs: 10})
	n, err := gpu.NewNet(g, m, 4, 10, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct{ rows, in, out int }{{5, 20, 10}, {2, 21, 10}, {2, 20, 9}} {
		x, y := batch(r, c.rows, c.in, c.out, false)
		if err := n.Load(x, y); err == nil {
			t.Errorf("a batch of %d rows, %d features, %d labels: no error", c.rows, c.in, c.out)
		}
	}
	if err := n.SetParams(make([]float32, 3)); err == nil {
		t.Error("parameters of another length: no error")
	}
}

// Each optimizer's steps on the GPU equal optim's on the host (the state
// kept on the GPU), with and without weight decay.
func TestOptimizersMatchHost(t *testing.T) {
	g := cudatest.GPU(t)
	m, err := model.New(model.Config{Inputs: 40, Hidden: []int{16}, Outputs: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []optim.Config{{Name: "sgd", WeightDecay: 0.01}, {Name: "momentum"}, {Name: "adam"}, {Name: "adam", WeightDecay: 0.001}} {
		r := rand.New(rand.NewPCG(8, 9))
		p := make([]float32, m.NumParams())
		m.Init(p, 3)
		o, err := optim.New(cfg, len(p))
		if err != nil {
			t.Fatal(err)
		}
		n, err := gpu.NewNet(g, m, 8, 64, 32)
		if err != nil {
			t.Fatal(err)
		}
		n.SetParams(p)
		ws := m.NewWorkspace(8)
		scratch := make([]float32, len(p))
		for range 4 {
			x, y := batch(r, 8, 40, 50, false)
			u := o.Fused(0.01)
			ws.Step(p, scratch, x, y, &u)
			if err := n.Load(x, y); err != nil {
				t.Fatal(err)
			}
			if _, err := n.Step(&u); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]float32, len(p))
		n.Params(got)
		near(t, cfg.Name+" parameters", got, p, 1e-4)
		n.Close()
	}
}

// With dropout, the GPU drops the units the host drops (masks from
// streams of one seed), step after step, through two hidden layers.
func TestDropoutMatchesHost(t *testing.T) {
	g := cudatest.GPU(t)
	r := rand.New(rand.NewPCG(12, 13))
	m, err := model.New(model.Config{Inputs: 40, Hidden: []int{24, 12}, Outputs: 30})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	m.Init(p, 5)
	ws := m.NewWorkspace(8)
	if err := ws.SetDropout(0.3, 77); err != nil {
		t.Fatal(err)
	}
	n, err := gpu.NewNet(g, m, 8, 64, 32)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	d, _ := model.NewDropout(0.3, 77)
	if err := n.SetDropout(d); err != nil {
		t.Fatal(err)
	}
	n.SetParams(p)
	want, got := make([]float32, len(p)), make([]float32, len(p))
	for step := range 3 {
		x, y := batch(r, 8, 40, 30, false)
		wantLoss := ws.Gradient(p, want, x, y)
		n.Load(x, y)
		loss, err := n.Gradient()
		if err != nil {
			t.Fatal(err)
		}
		n.GradientOut(got)
		if math.Abs(loss-wantLoss) > 1e-5*(1+math.Abs(wantLoss)) {
			t.Errorf("step %d: loss %v, want %v", step, loss, wantLoss)
		}
		near(t, "gradient with dropout", got, want, 1e-4)
	}
}

// A replica that would not fit the GPU's free memory is refused before
// anything is allocated, with the sizes.
func TestBackendRefusesWhatDoesNotFit(t *testing.T) {
	g := cudatest.GPU(t)
	free, err := g.FreeMemory()
	if err != nil {
		t.Fatal(err)
	}
	// Two parameter-sized vectors of 4-byte floats: twice free's bytes.
	m, err := model.New(model.Config{Inputs: 10, Hidden: []int{2}, Outputs: int(free / 12)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gpu.Backend{GPU: g}.NewGradienter(m, 8, 64, 32, nil)
	if err == nil || !strings.Contains(err.Error(), "free on") {
		t.Errorf("a replica of %d parameters with %d bytes free: %v", m.NumParams(), free, err)
	}
	small, _ := model.New(model.Config{Inputs: 10, Hidden: []int{2}, Outputs: 5})
	gr, err := gpu.Backend{GPU: g}.NewGradienter(small, 8, 64, 32, nil)
	if err != nil {
		t.Fatal(err)
	}
	gr.Close()
}
