package model

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/sparse"
)

// refLoss is a deliberately plain float64 forward pass of the network: the
// mean over rows of the cross-entropy against uniform label targets.
func refLoss(m *MLP, p []float64, x, y *sparse.CSR) float64 {
	var total float64
	for i := 0; i < x.Rows; i++ {
		// Dense copy of the input row.
		act := make([]float64, m.cfg.Inputs)
		idx, vals := x.Row(i)
		for q, j := range idx {
			act[j] = float64(vals[q])
		}
		for li, l := range m.layers {
			next := make([]float64, l.Out)
			for o := 0; o < l.Out; o++ {
				s := p[l.B+o]
				for in := 0; in < l.In; in++ {
					if l.Transposed {
						s += act[in] * p[l.W+o*l.In+in]
					} else {
						s += act[in] * p[l.W+in*l.Out+o]
					}
				}
				if li < len(m.layers)-1 {
					s = math.Max(s, 0)
				}
				next[o] = s
			}
			act = next
		}
		labels, _ := y.Row(i)
		if len(labels) == 0 {
			continue
		}
		mx := math.Inf(-1)
		for _, v := range act {
			mx = math.Max(mx, v)
		}
		var se float64
		for _, v := range act {
			se += math.Exp(v - mx)
		}
		lse := mx + math.Log(se)
		for _, l := range labels {
			total += (lse - act[l]) / float64(len(labels))
		}
	}
	return total / float64(x.Rows)
}

func randBatch(r *rand.Rand, rows, d, l, nnz int) (x, y *sparse.CSR) {
	xb := sparse.NewBuilder(d, false, rows, rows*nnz)
	yb := sparse.NewBuilder(l, true, rows, rows)
	for i := 0; i < rows; i++ {
		for _, j := range r.Perm(d)[:nnz] {
			xb.Append(int32(j), float32(r.Float64()+0.5))
		}
		xb.EndRow()
		k := 1 + r.IntN(3)
		if i == 2 {
			k = 0 // a point without labels
		}
		for _, j := range r.Perm(l)[:k] {
			yb.Append(int32(j), 0)
		}
		yb.EndRow()
	}
	xm, ym := xb.Build(), yb.Build()
	return &xm, &ym
}

// TestGradientFiniteDifference checks Backward against central differences
// of the float64 reference loss, for a linear model and one and two hidden
// layers, the output layer in either layout.
func TestGradientFiniteDifference(t *testing.T) {
	for _, tc := range []struct {
		hidden     []int
		labelMajor bool
	}{{nil, false}, {[]int{7}, false}, {[]int{6, 5}, false}, {[]int{7}, true}, {[]int{6, 5}, true}} {
		hidden := tc.hidden
		r := rand.New(rand.NewPCG(1, uint64(len(hidden))))
		m, err := New(Config{Inputs: 11, Hidden: hidden, Outputs: 9, LabelMajor: tc.labelMajor})
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float32, m.NumParams())
		m.Init(p, 3)
		for i := range p {
			p[i] *= 4 // larger weights: fewer dead units, a sharper test
		}
		x, y := randBatch(r, 5, 11, 9, 4)
		ws := m.NewWorkspace(8)
		g := make([]float32, len(p))
		for i := range g {
			g[i] = float32(math.NaN()) // Backward must overwrite every element
		}
		loss := ws.Gradient(p, g, x, y)
		p64 := make([]float64, len(p))
		for i, v := range p {
			p64[i] = float64(v)
		}
		if want := refLoss(m, p64, x, y); math.Abs(loss-want) > 1e-5*(1+want) {
			t.Fatalf("hidden %v label-major %v: loss %v, reference %v", hidden, tc.labelMajor, loss, want)
		}
		const h = 1e-6
		var maxErr float64
		for i := range p64 {
			orig := p64[i]
			p64[i] = orig + h
			up := refLoss(m, p64, x, y)
			p64[i] = orig - h
			down := refLoss(m, p64, x, y)
			p64[i] = orig
			fd := (up - down) / (2 * h)
			err := math.Abs(float64(g[i])-fd) / (1e-3 + math.Abs(fd))
			maxErr = max(maxErr, err)
			if !(err < 1e-3) {
				t.Fatalf("hidden %v label-major %v: dL/dp[%d] = %v, finite difference %v", hidden, tc.labelMajor, i, g[i], fd)
			}
		}
		t.Logf("hidden %v label-major %v: %d parameters, max relative error %.2g", hidden, tc.labelMajor, len(p), maxErr)
	}
}

func TestTopK(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	dst := make([]int32, 10)
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.IntN(50)
		row := make([]float32, n)
		for i := range row {
			row[i] = float32(r.IntN(8)) // many ties
		}
		k := r.IntN(7)
		got := TopK(row, k, dst)
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = int32(i)
		}
		slices.SortStableFunc(idx, func(a, b int32) int {
			switch {
			case row[a] > row[b]:
				return -1
			case row[a] < row[b]:
				return 1
			}
			return 0
		})
		want := idx[:min(k, n)]
		if !slices.Equal(got, want) {
			t.Fatalf("TopK(%v, %d) = %v, want %v", row, k, got, want)
		}
	}
}

func TestInitDeterministicAndBounded(t *testing.T) {
	m, _ := New(Config{Inputs: 100, Hidden: []int{16}, Outputs: 10})
	a, b := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(a, 42)
	m.Init(b, 42)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different parameters")
	}
	m.Init(b, 43)
	if slices.Equal(a, b) {
		t.Fatal("different seeds, same parameters")
	}
	l := m.Layers()[0]
	for _, v := range a[l.W:l.B] {
		if math.Abs(float64(v)) > 0.1 {
			t.Fatalf("first-layer weight %v outside ±1/√100", v)
		}
	}
	if _, err := New(Config{Inputs: 10, Hidden: []int{0}, Outputs: 3}); err == nil {
		t.Fatal("zero-width layer accepted")
	}
}

func TestGradientNoAlloc(t *testing.T) {
	race.SkipAllocs(t)
	defer kernel.UsePrecision(kernel.Precision())
	for _, prec := range []string{kernel.FP32, kernel.BF16} {
		if bf, _ := kernel.UsePrecision(prec); prec == kernel.BF16 && !bf {
			continue // no bf16 products here: the fp32 run covered it
		}
		t.Run(prec, testGradientNoAlloc)
	}
}

func testGradientNoAlloc(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	m, _ := New(Config{Inputs: 1836, Hidden: []int{128}, Outputs: 159})
	p, g := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	m.Init(p, 1)
	x, y := randBatch(r, 128, 1836, 159, 68)
	ws := m.NewWorkspace(128)
	ws.Gradient(p, g, x, y)
	if a := testing.AllocsPerRun(20, func() { ws.Gradient(p, g, x, y) }); a != 0 {
		t.Fatalf("Gradient allocates %v times per step", a)
	}
	// The fused step, for every optimizer: plain SGD takes the sparse
	// first-layer update, the others the dense one.
	for _, name := range []string{"sgd", "momentum", "adam"} {
		o, err := optim.New(optim.Config{Name: name}, len(p))
		if err != nil {
			t.Fatal(err)
		}
		u := o.Fused(1e-3)
		ws.Step(p, g, x, y, &u)
		if a := testing.AllocsPerRun(20, func() { u = o.Fused(1e-3); ws.Step(p, g, x, y, &u) }); a != 0 {
			t.Fatalf("Step with %s allocates %v times per step", name, a)
		}
	}
}

// BenchmarkGradient times one training step's gradient on the model shapes:
// Bibtex, Delicious, and an Amazon-670k-like first layer with fewer labels
// (the full Amazon-670k step is engine.BenchmarkStep).
func BenchmarkGradient(b *testing.B) {
	for _, c := range []struct {
		name         string
		d, l, nnz, n int
	}{
		{"bibtex", 1836, 159, 68, 128},
		{"delicious", 500, 983, 18, 128},
		{"amazon-in-8k-out", 135909, 8192, 76, 256},
	} {
		r := rand.New(rand.NewPCG(9, 10))
		m, _ := New(Config{Inputs: c.d, Hidden: []int{128}, Outputs: c.l})
		p, g := make([]float32, m.NumParams()), make([]float32, m.NumParams())
		m.Init(p, 1)
		x, y := randBatch(r, c.n, c.d, c.l, c.nnz)
		ws := m.NewWorkspace(c.n)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				ws.Gradient(p, g, x, y)
			}
			b.ReportMetric(float64(c.n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// With dropout, Backward differentiates the network with the mask of its
// forward pass. Re-seeding the mask stream before each evaluation fixes the
// mask, so central differences of the float32 loss check the gradient; a
// missing 1/(1−p) factor would be off by 2× at p = 0.5.
func TestGradientWithDropout(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	m, _ := New(Config{Inputs: 11, Hidden: []int{16, 8}, Outputs: 9})
	p := make([]float32, m.NumParams())
	m.Init(p, 3)
	for i := range p {
		p[i] *= 4
	}
	x, y := randBatch(r, 6, 11, 9, 4)
	ws := m.NewWorkspace(8)
	g, scratch := make([]float32, len(p)), make([]float32, len(p))
	loss := func() float64 {
		ws.SetDropout(0.5, 99)
		return ws.Gradient(p, scratch, x, y)
	}
	ws.SetDropout(0.5, 99)
	ws.Gradient(p, g, x, y)
	// The mask must actually drop units: the loss differs from no dropout.
	ws.SetDropout(0, 0)
	if plain := ws.Gradient(p, scratch, x, y); plain == loss() {
		t.Fatal("dropout 0.5 left the loss unchanged")
	}
	const h = 1e-2
	var num, den float64
	for i := range p {
		orig := p[i]
		p[i] = orig + h
		up := loss()
		p[i] = orig - h
		down := loss()
		p[i] = orig
		fd := (up - down) / (2 * h)
		num += (float64(g[i]) - fd) * (float64(g[i]) - fd)
		den += fd * fd
	}
	if rel := math.Sqrt(num / den); rel > 1e-2 {
		t.Fatalf("‖g − fd‖/‖fd‖ = %.3g with dropout", rel)
	}
}

// Gradient's fused output layer (kernel.XentLayer) equals the unfused path —
// Forward, LossGrad, Backward — on shapes with several label blocks, a row
// without labels, one and two hidden layers, and dropout.
func TestGradientFusedEqualsUnfused(t *testing.T) {
	for _, c := range []struct {
		hidden  []int
		labels  int
		rows    int
		dropout float64
	}{
		{[]int{7}, 9, 5, 0}, {[]int{16}, 2500, 13, 0}, {[]int{12, 5}, 1030, 6, 0.3}, {[]int{8}, 18000, 4, 0.2},
	} {
		r := rand.New(rand.NewPCG(7, uint64(c.labels)))
		m, err := New(Config{Inputs: 40, Hidden: c.hidden, Outputs: c.labels})
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float32, m.NumParams())
		m.Init(p, 5)
		x, y := randBatch(r, c.rows, 40, c.labels, 6)
		fused, unfused := m.NewWorkspace(c.rows), m.NewWorkspace(c.rows)
		if c.dropout > 0 { // the same masks on both sides
			fused.SetDropout(c.dropout, 9)
			unfused.SetDropout(c.dropout, 9)
		}
		g1, g2 := make([]float32, len(p)), make([]float32, len(p))
		loss1 := fused.Gradient(p, g1, x, y)
		unfused.forward(p, x, true, len(m.layers))
		loss2 := unfused.LossGrad(y) / float64(c.rows)
		unfused.Backward(p, g2, x)
		if math.Abs(loss1-loss2) > 1e-5*(1+math.Abs(loss2)) {
			t.Fatalf("%+v: loss fused %v, unfused %v", c, loss1, loss2)
		}
		var scale float64
		for _, v := range g2 {
			scale = max(scale, math.Abs(float64(v)))
		}
		for i := range g1 {
			if d := math.Abs(float64(g1[i] - g2[i])); !(d <= 1e-5*scale) {
				t.Fatalf("%+v: g[%d] fused %v, unfused %v", c, i, g1[i], g2[i])
			}
		}
	}
}

// Step equals Gradient followed by the optimizer's update, bit for bit, for
// every optimizer, with and without hidden layers, with and without weight
// decay (plain SGD without it updates the first layer's touched rows only).
func TestStepEqualsGradientThenUpdate(t *testing.T) {
	for _, hidden := range [][]int{nil, {16}, {12, 5}} {
		for _, wd := range []float32{0, 1e-3} {
			for _, rule := range []kernel.UpdateRule{kernel.SGDRule, kernel.MomentumRule, kernel.AdamRule} {
				r := rand.New(rand.NewPCG(8, uint64(len(hidden))))
				m, err := New(Config{Inputs: 40, Hidden: hidden, Outputs: 2100})
				if err != nil {
					t.Fatal(err)
				}
				p1 := make([]float32, m.NumParams())
				m.Init(p1, 5)
				p2 := append([]float32(nil), p1...)
				x, y := randBatch(r, 9, 40, 2100, 6)
				state := func() (a, b []float32) { return make([]float32, len(p1)), make([]float32, len(p1)) }
				m1, v1 := state()
				m2, v2 := state()
				upd := func(a, b []float32) *kernel.Update {
					return &kernel.Update{Rule: rule, LR: 0.5, WD: wd, Mu: 0.9, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C2: 1, M: a, V: b}
				}
				g1, g2 := make([]float32, len(p1)), make([]float32, len(p1))
				ws1, ws2 := m.NewWorkspace(9), m.NewWorkspace(9)
				for step := 0; step < 2; step++ {
					l1 := ws1.Gradient(p1, g1, x, y)
					kernel.ApplyUpdate(p1, g1, upd(m1, v1), 0)
					l2 := ws2.Step(p2, g2, x, y, upd(m2, v2))
					if l1 != l2 {
						t.Fatalf("hidden %v wd %v rule %d: loss %v after Gradient, %v after Step", hidden, wd, rule, l1, l2)
					}
					for i := range p1 {
						if p1[i] != p2[i] || m1[i] != m2[i] || v1[i] != v2[i] {
							t.Fatalf("hidden %v wd %v rule %d step %d: p[%d] %v vs %v", hidden, wd, rule, step, i, p1[i], p2[i])
						}
					}
				}
			}
		}
	}
}

// WorkspaceBytes is close to what a workspace allocates once a training
// step has run (the fused output layer's buffers appear then): never far
// below, so a run it admits fits, and not wildly above, so it refuses no run
// that would fit.
func TestWorkspaceBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		d, h, l, rows int
	}{{1836, 128, 159, 128}, {500, 256, 983, 256}, {20000, 64, 30000, 64}} {
		m, _ := New(Config{Inputs: c.d, Hidden: []int{c.h}, Outputs: c.l})
		p, g := make([]float32, m.NumParams()), make([]float32, m.NumParams())
		m.Init(p, 1)
		x, y := randBatch(r, c.rows, c.d, c.l, 20)
		o, _ := optim.New(optim.Config{Name: "sgd"}, len(p))
		// The kernels' own buffers, sized on first use at a shape, are not
		// the workspace's: a first workspace takes them.
		u := o.Fused(1e-3)
		m.NewWorkspace(c.rows).Step(p, g, x, y, &u)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ws := m.NewWorkspace(c.rows)
		ws.Step(p, g, x, y, &u) // the sparse first layer allocates its marks
		ws.Gradient(p, g, x, y)
		runtime.ReadMemStats(&after)
		got := float64(after.TotalAlloc - before.TotalAlloc)
		est := float64(m.WorkspaceBytes(c.rows, kernel.Default().Workers()))
		if !(est >= 0.9*got && est <= 2*got) {
			t.Errorf("%+v: estimated %.0f bytes, allocated %.0f", c, est, got)
		}
	}
}

// Mask draws the masks Apply applies, from the same stream, and a stream
// restored from a state draws what followed it.
func TestDropoutMask(t *testing.T) {
	a, _ := NewDropout(0.3, 9)
	b, _ := NewDropout(0.3, 9)
	for _, n := range []int{7, 64, 1} {
		act := make([]float32, n)
		for i := range act {
			act[i] = float32(i + 1)
		}
		want := append([]float32(nil), act...)
		a.Apply(want)
		mask := make([]float32, n)
		b.Mask(mask)
		dropped := 0
		for i := range act {
			if act[i]*mask[i] != want[i] {
				t.Fatalf("unit %d of %d: mask %v, Apply %v", i, n, mask[i], want[i])
			}
			if mask[i] == 0 {
				dropped++
			}
		}
		if n == 64 && (dropped == 0 || dropped == n) {
			t.Errorf("%d of %d dropped", dropped, n)
		}
	}
	s, _ := a.State()
	m1, m2 := make([]float32, 20), make([]float32, 20)
	a.Mask(m1)
	if err := b.SetState(s); err != nil {
		t.Fatal(err)
	}
	b.Mask(m2)
	if !slices.Equal(m1, m2) {
		t.Error("a restored stream draws other masks")
	}
	if _, err := NewDropout(1, 1); err == nil {
		t.Error("dropout 1: no error")
	}
}
