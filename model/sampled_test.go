package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/lsh"
	"github.com/hetsgd/hetsgd/sparse"
)

// sampledNet is a small label-major network with a sampler retrieving up
// to size rows from tables built from its initial output layer, and fill
// shared rows a batch.
func sampledNet(t *testing.T, outputs, size, fill int) (*MLP, []float32, *Sampled) {
	return sampledNetWith(t, outputs, size, SampledOptions{Fill: fill})
}

func sampledNetWith(t *testing.T, outputs, size int, o SampledOptions) (*MLP, []float32, *Sampled) {
	t.Helper()
	m, err := New(Config{Inputs: 11, Hidden: []int{7}, Outputs: outputs, LabelMajor: true})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	m.Init(p, 3)
	for i := range p {
		p[i] *= 4 // fewer dead units, a sharper test
	}
	l := m.Layers()[1]
	fam, err := lsh.NewSRP(l.In, 2, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := lsh.NewIndex(fam, outputs, 8)
	if err != nil {
		t.Fatal(err)
	}
	ix.Build(p[l.W:l.B], l.In, 1)
	smp, err := lsh.NewSampler(ix, size, 2)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewSampled(8, smp, o)
	if err != nil {
		t.Fatal(err)
	}
	return m, p, s
}

// With every label active the sampled layer is the dense one: the same
// loss and gradient, to float32 rounding.
func TestSampledAllActiveEqualsDense(t *testing.T) {
	for _, correct := range []bool{false, true} {
		testAllActive(t, correct)
	}
}

func testAllActive(t *testing.T, correct bool) {
	m, p, s := sampledNetWith(t, 9, 3, SampledOptions{Fill: 9, Correct: correct})
	x, y := randBatch(rand.New(rand.NewPCG(1, 1)), 5, 11, 9, 4)
	g, gd := make([]float32, len(p)), make([]float32, len(p))
	loss := s.Gradient(p, g, x, y)
	dense := m.NewWorkspace(8).Gradient(p, gd, x, y)
	if math.Abs(loss-dense) > 1e-6*(1+dense) {
		t.Fatalf("loss %v, dense %v", loss, dense)
	}
	for i := range g {
		if d := math.Abs(float64(g[i] - gd[i])); d > 1e-5*(1+math.Abs(float64(gd[i]))) {
			t.Fatalf("gradient[%d] = %v, dense %v", i, g[i], gd[i])
		}
	}
}

// refSampledLoss is the float64 loss of the network over fixed active sets:
// for each point, the softmax over its set's logits against the uniform
// target over its labels, which lead the set.
func refSampledLoss(m *MLP, p []float64, x, y *sparse.CSR, sets [][]int32) float64 {
	return refSampledLossCorrected(m, p, x, y, sets, nil)
}

// refSampledLossCorrected adds shift[i][j] to the logit of point i's j-th
// row (nil: none).
func refSampledLossCorrected(m *MLP, p []float64, x, y *sparse.CSR, sets [][]int32, shift [][]float64) float64 {
	var total float64
	l0, l1 := m.layers[0], m.layers[1]
	for i := 0; i < x.Rows; i++ {
		h := make([]float64, l0.Out)
		idx, vals := x.Row(i)
		for o := range h {
			s := p[l0.B+o]
			for q, j := range idx {
				s += float64(vals[q]) * p[l0.W+int(j)*l0.Out+o]
			}
			h[o] = math.Max(s, 0)
		}
		labels, _ := y.Row(i)
		if len(labels) == 0 {
			continue
		}
		z := make([]float64, len(sets[i]))
		mx := math.Inf(-1)
		for j, k := range sets[i] {
			s := p[l1.B+int(k)]
			for in, v := range h {
				s += v * p[l1.W+int(k)*l1.In+in]
			}
			if shift != nil {
				s += shift[i][j]
			}
			z[j] = s
			mx = math.Max(mx, s)
		}
		var se float64
		for _, v := range z {
			se += math.Exp(v - mx)
		}
		for j := range labels {
			total += (mx + math.Log(se) - z[j]) / float64(len(labels))
		}
	}
	return total / float64(x.Rows)
}

// With a part of the labels active, the gradient is that of the loss over
// the active sets (central differences of the float64 reference), and is
// zero on every output row no set holds.
func TestSampledGradientFiniteDifference(t *testing.T) {
	inclusion := make([]float32, 40)
	for k := range inclusion {
		inclusion[k] = 0.05 + 0.9*float32(k)/40
	}
	for _, o := range []SampledOptions{{Fill: 5}, {Pad: 6}, {Fill: 5, Correct: true}, {Fill: 5, Labels: true},
		{Fill: 5, Labels: true, Correct: true, Inclusion: inclusion}} {
		testSampledGradient(t, o)
	}
}

func testSampledGradient(t *testing.T, o SampledOptions) {
	m, p, s := sampledNetWith(t, 40, 4, o)
	x, y := randBatch(rand.New(rand.NewPCG(2, 2)), 5, 11, 40, 4)
	g := make([]float32, len(p))
	for i := range g {
		g[i] = float32(math.NaN()) // Gradient must write every element
	}
	loss := s.Gradient(p, g, x, y)
	var sets [][]int32
	var shift [][]float64 // the correction of the shared rows' logits
	in := map[int32]bool{}
	want := o.Fill
	if o.Labels {
		// The batch's labels, each once, then the random rows that are not
		// among them.
		labels := map[int32]bool{}
		for _, k := range y.Indices {
			labels[k] = true
		}
		shared := s.Shared()
		for j, k := range shared {
			if j < len(labels) != labels[k] || slices.Contains(shared[:j], k) {
				t.Fatalf("%+v: shared rows %v for the batch's labels %v", o, shared, y.Indices)
			}
		}
		want = len(labels) + o.Fill
		if len(shared) <= len(labels) || len(shared) > want {
			t.Fatalf("%+v: %d shared rows for %d labels and %d random", o, len(shared), len(labels), o.Fill)
		}
		want = len(shared)
	}
	if len(s.Shared()) != want {
		t.Fatalf("%+v: %d shared rows", o, len(s.Shared()))
	}
	for i := range x.Rows {
		own := s.Own(i)
		labels, _ := y.Row(i)
		if len(labels) > 0 && (len(own) > max(4, len(labels), o.Pad) || len(own) < o.Pad) || len(labels) == 0 && len(own) > 0 {
			t.Fatalf("%+v: point %d with %d labels: %d own rows", o, i, len(labels), len(own))
		}
		set := append([]int32(nil), own...)
		for _, k := range s.Shared() {
			if !slices.Contains(own, k) {
				set = append(set, k)
			}
		}
		sets = append(sets, set)
		sh := make([]float64, len(set))
		switch {
		case o.Inclusion != nil:
			for j := len(own); j < len(set); j++ {
				sh[j] = -math.Log(float64(o.Inclusion[set[j]]))
			}
		case o.Correct && len(set) > len(own):
			for j := len(own); j < len(set); j++ {
				sh[j] = math.Log(float64(40-len(own)) / float64(len(set)-len(own)))
			}
		}
		shift = append(shift, sh)
		for _, k := range set {
			in[k] = true
		}
	}
	p64 := make([]float64, len(p))
	for i, v := range p {
		p64[i] = float64(v)
	}
	if want := refSampledLossCorrected(m, p64, x, y, sets, shift); math.Abs(loss-want) > 1e-5*(1+want) {
		t.Fatalf("loss %v, reference %v", loss, want)
	}
	l1 := m.layers[1]
	const h = 1e-6
	for i := range p64 {
		orig := p64[i]
		p64[i] = orig + h
		up := refSampledLossCorrected(m, p64, x, y, sets, shift)
		p64[i] = orig - h
		down := refSampledLossCorrected(m, p64, x, y, sets, shift)
		p64[i] = orig
		fd := (up - down) / (2 * h)
		if err := math.Abs(float64(g[i])-fd) / (1e-3 + math.Abs(fd)); !(err < 1e-3) {
			t.Fatalf("dL/dp[%d] = %v, finite difference %v", i, g[i], fd)
		}
		if i >= l1.W && i < l1.B && !in[int32((i-l1.W)/l1.In)] && g[i] != 0 {
			t.Fatalf("output row %d is in no active set and has gradient %v", (i-l1.W)/l1.In, g[i])
		}
	}
	if len(in) >= 40 {
		t.Fatalf("every label was active: the test needs some that are not")
	}
}

// Step with plain SGD is Gradient then the update; with Adam it leaves the
// output rows no active set holds exactly as they were (lazy Adam), and
// moves the rows it touches.
func TestSampledStep(t *testing.T) {
	for _, rule := range []kernel.UpdateRule{kernel.SGDRule, kernel.AdamRule} {
		m, p, s := sampledNet(t, 40, 4, 5)
		x, y := randBatch(rand.New(rand.NewPCG(3, 3)), 5, 11, 40, 4)
		before := append([]float32(nil), p...)
		g := make([]float32, len(p))
		u := &kernel.Update{Rule: rule, LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C2: 1,
			M: make([]float32, len(p)), V: make([]float32, len(p))}
		s.Step(p, g, x, y, u)
		l1 := m.layers[1]
		touched := map[int]bool{}
		for i := range x.Rows {
			for _, k := range s.Own(i) {
				touched[int(k)] = true
			}
		}
		for _, k := range s.Shared() {
			touched[int(k)] = true
		}
		for k := range l1.Out {
			row := func(v []float32) []float32 { return v[l1.W+k*l1.In : l1.W+(k+1)*l1.In] }
			same := slicesEqual(row(p), row(before))
			if touched[k] == same {
				t.Fatalf("rule %d: output row %d touched %v, unchanged %v", rule, k, touched[k], same)
			}
		}
		if rule == kernel.SGDRule {
			_, q, twin := sampledNet(t, 40, 4, 5) // the same draws of shared rows
			gd := make([]float32, len(p))
			twin.Gradient(q, gd, x, y)
			for i := range q {
				q[i] -= 0.1 * gd[i]
			}
			for i := range p {
				if math.Abs(float64(p[i]-q[i])) > 1e-6 {
					t.Fatalf("sgd: parameter %d: Step %v, Gradient then update %v", i, p[i], q[i])
				}
			}
		}
	}
}

func slicesEqual(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// Gradient, AppendLast and ApplyRows are Step, bit for bit, weights and
// Adam's moments; two batches' mean gradient applied to the rows either
// listed moves exactly the output rows either batch touched and leaves the
// moments of every other row, as the lazy rule does for one batch.
func TestSampledApplyRows(t *testing.T) {
	adam := func(n int) *kernel.Update {
		return &kernel.Update{Rule: kernel.AdamRule, LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C2: 1,
			M: make([]float32, n), V: make([]float32, n)}
	}
	x, y := randBatch(rand.New(rand.NewPCG(3, 3)), 5, 11, 40, 4)
	_, p, s := sampledNet(t, 40, 4, 5)
	_, q, twin := sampledNet(t, 40, 4, 5) // the same draws of shared rows
	g, gq := make([]float32, len(p)), make([]float32, len(p))
	u, uq := adam(len(p)), adam(len(p))
	s.Step(p, g, x, y, u)
	twin.Gradient(q, gq, x, y)
	rows := twin.AppendLast(nil)
	if len(slices.Compact(slices.Sorted(slices.Values(rows)))) != len(rows) {
		t.Fatalf("AppendLast lists a row twice: %v", rows)
	}
	twin.ApplyRows(q, gq, rows, uq)
	if !slicesEqual(p, q) || !slicesEqual(u.M, uq.M) || !slicesEqual(u.V, uq.V) {
		t.Fatal("Gradient, AppendLast and ApplyRows are not Step")
	}
	if twin.Touched() != s.Touched() {
		t.Fatalf("touched %d parameters, Step %d", twin.Touched(), s.Touched())
	}

	// Two devices: the same model, a batch each, their mean gradient.
	m, a, da := sampledNet(t, 40, 4, 5)
	_, b, db := sampledNet(t, 40, 4, 5)
	x1, y1 := randBatch(rand.New(rand.NewPCG(4, 4)), 2, 11, 40, 2)
	x2, y2 := randBatch(rand.New(rand.NewPCG(5, 5)), 2, 11, 40, 2)
	ga, gb := make([]float32, len(a)), make([]float32, len(a))
	da.Gradient(a, ga, x1, y1)
	db.Gradient(b, gb, x2, y2)
	l0, l1 := m.layers[0], m.layers[1]
	touched := map[int]bool{}
	feature := map[int]bool{}
	for _, d := range []struct {
		s *Sampled
		x *sparse.CSR
	}{{da, x1}, {db, x2}} {
		for i := range d.x.Rows {
			for _, k := range d.s.Own(i) {
				touched[int(k)] = true
			}
			cols, _ := d.x.Row(i)
			for _, j := range cols {
				feature[int(j)] = true
			}
		}
		for _, k := range d.s.Shared() {
			touched[int(k)] = true
		}
	}
	// The union of the two lists, each row once, as the engine lists it.
	rows = slices.Compact(slices.Sorted(slices.Values(db.AppendLast(da.AppendLast(nil)))))
	for i := range ga {
		ga[i] = (ga[i] + gb[i]) / 2
	}
	before := slices.Clone(a)
	ua := adam(len(a))
	da.ApplyRows(a, ga, rows, ua)
	if len(touched) == l1.Out || len(feature) == l0.In {
		t.Fatal("the batches touch every row: the test cannot tell the lazy rule from the dense")
	}
	for k := range l1.Out {
		row := func(v []float32) []float32 { return v[l1.W+k*l1.In : l1.W+(k+1)*l1.In] }
		if same := slicesEqual(row(a), row(before)); touched[k] == same {
			t.Fatalf("output row %d touched by a batch %v, unchanged %v", k, touched[k], same)
		}
		if !touched[k] && slices.ContainsFunc(row(ua.M), func(v float32) bool { return v != 0 }) {
			t.Fatalf("output row %d, touched by neither batch, has a moment", k)
		}
	}
	for j := range l0.In {
		row := func(v []float32) []float32 { return v[l0.W+j*l0.Out : l0.W+(j+1)*l0.Out] }
		if !feature[j] && !slicesEqual(row(a), row(before)) {
			t.Fatalf("input row %d, in neither batch, moved", j)
		}
	}
	if want := len(feature)*l0.Out + (l1.W - l0.B) + len(touched)*(l1.In+1); da.Touched() != want {
		t.Fatalf("touched %d parameters, want %d", da.Touched(), want)
	}
	// The device's own rows are still its batch's after the union's update,
	// and survive a checkpoint (LastRows, SetLastRows into a fresh pass).
	again := da.AppendLast(nil)
	_, _, fresh := sampledNet(t, 40, 4, 5)
	fresh.SetLastRows(da.LastRows())
	restored := fresh.AppendLast(nil)
	for j := range l0.In + l1.Out {
		in := j < l0.In && slices.Contains(x1.Indices[:x1.NNZ()], int32(j))
		if j >= l0.In {
			k := int32(j - l0.In)
			in = slices.Contains(da.Shared(), k) || slices.Contains(da.Own(0), k) || slices.Contains(da.Own(1), k)
		}
		listed, kept := slices.Contains(again, int32(j)), slices.Contains(restored, int32(j))
		if listed != in || kept != listed {
			t.Fatalf("row %d: listed %v after the update, %v restored; in the device's batch %v", j, listed, kept, in)
		}
	}
}

// A warm sampled step allocates nothing.
func TestSampledStepNoAlloc(t *testing.T) {
	race.SkipAllocs(t)
	// With the batch's labels shared, buffers sized for 8 points of up to
	// 4 labels: no batch makes them grow.
	for _, o := range []SampledOptions{{Fill: 5}, {Fill: 5, Labels: true, BatchLabels: 32}} {
		_, p, s := sampledNetWith(t, 40, 4, o)
		r := rand.New(rand.NewPCG(4, 4))
		x, y := randBatch(r, 8, 11, 40, 4)
		x2, y2 := randBatch(r, 8, 11, 40, 4)
		g := make([]float32, len(p))
		u := &kernel.Update{Rule: kernel.AdamRule, LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C2: 1,
			M: make([]float32, len(p)), V: make([]float32, len(p))}
		s.Step(p, g, x, y, u)
		if n := testing.AllocsPerRun(20, func() { s.Step(p, g, x, y, u); s.Step(p, g, x2, y2, u) }); n != 0 {
			t.Fatalf("%+v: %v allocations a step", o, n)
		}
	}
}

// With Dense, Step is Gradient then the update of every weight, as SLIDE's
// code runs Adam: over two batches, the rows the first touched and the
// second did not still move by their momentum (which a lazy step would
// leave).
func TestSampledDenseStep(t *testing.T) {
	o := SampledOptions{Pad: 6, Dense: true}
	_, p, s := sampledNetWith(t, 40, 4, o)
	_, q, twin := sampledNetWith(t, 40, 4, o)
	_, lazy, lz := sampledNetWith(t, 40, 4, SampledOptions{Pad: 6})
	upd := func() *kernel.Update {
		return &kernel.Update{Rule: kernel.AdamRule, LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C2: 1,
			M: make([]float32, len(p)), V: make([]float32, len(p))}
	}
	u1, u2, u3 := upd(), upd(), upd()
	g, gd, gl := make([]float32, len(p)), make([]float32, len(p)), make([]float32, len(p))
	for k := range 2 {
		x, y := randBatch(rand.New(rand.NewPCG(5, uint64(k))), 5, 11, 40, 4)
		s.Step(p, g, x, y, u1)
		twin.Gradient(q, gd, x, y)
		kernel.ApplyUpdate(q, gd, u2, 0)
		lz.Step(lazy, gl, x, y, u3)
	}
	if !slicesEqual(p, q) {
		t.Fatal("a dense Step is not Gradient then the update")
	}
	if slicesEqual(p, lazy) {
		t.Fatal("dense and lazy steps agree: the test does not tell them apart")
	}
}

// The sampled pass runs over a batch's points, and the output layer's
// rows, in parallel: its loss, gradient and steps are the same, bit for
// bit, on one worker and on several, in every mode (shared rows with the
// batch's labels and the correction, SLIDE's padding, Adam over every
// weight).
func TestSampledThreadsBitForBit(t *testing.T) {
	defer kernel.SetThreads(0)
	r := rand.New(rand.NewPCG(9, 9))
	const outputs = 60
	inclusion := make([]float32, outputs)
	for k := range inclusion {
		inclusion[k] = float32(0.1 + 0.9*r.Float64())
	}
	batches := make([][2]*sparse.CSR, 3)
	for k := range batches {
		x, y := randBatch(r, 8, 11, outputs, 4)
		batches[k] = [2]*sparse.CSR{x, y}
	}
	for _, o := range []SampledOptions{
		{Fill: 5},
		{Fill: 7, Labels: true, Correct: true, Inclusion: inclusion, BatchLabels: 32},
		{Pad: 9},
		{Pad: 9, Dense: true},
	} {
		type result struct {
			loss []float64
			p, g []float32
		}
		run := func(threads int) result {
			kernel.SetThreads(threads)
			_, p, s := sampledNetWith(t, outputs, 4, o)
			u := &kernel.Update{Rule: kernel.AdamRule, LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C2: 1,
				M: make([]float32, len(p)), V: make([]float32, len(p))}
			g := make([]float32, len(p))
			var res result
			for k, b := range batches {
				if k == 0 {
					res.loss = append(res.loss, s.Gradient(p, g, b[0], b[1]))
					res.g = slices.Clone(g)
				}
				res.loss = append(res.loss, s.Step(p, g, b[0], b[1], u))
			}
			res.p = p
			return res
		}
		one := run(1)
		for _, threads := range []int{2, 5} {
			got := run(threads)
			if !slices.Equal(got.loss, one.loss) || !slicesEqual(got.g, one.g) || !slicesEqual(got.p, one.p) {
				t.Fatalf("%+v: %d workers: losses %v, one worker %v; gradient equal %v, weights equal %v",
					o, threads, got.loss, one.loss, slicesEqual(got.g, one.g), slicesEqual(got.p, one.p))
			}
		}
	}
}

// After KeepZeros a Gradient clears only the rows the last pass wrote:
// over a run of Gradients into one buffer, a Step in between and a
// Gradient into another buffer, the gradients are those of passes that
// clear the whole layer, bit for bit; and the test can tell: a buffer
// KeepZeros was wrongly vouched for keeps the stale rows.
func TestSampledKeepZeros(t *testing.T) {
	o := SampledOptions{Fill: 5, Labels: true, BatchLabels: 32}
	_, p, s := sampledNetWith(t, 60, 4, o)
	_, q, ref := sampledNetWith(t, 60, 4, o)
	r := rand.New(rand.NewPCG(12, 12))
	u := func() *kernel.Update {
		return &kernel.Update{Rule: kernel.AdamRule, LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C2: 1,
			M: make([]float32, len(p)), V: make([]float32, len(p))}
	}
	us, ur := u(), u()
	g, other, gr := make([]float32, len(p)), make([]float32, len(p)), make([]float32, len(p))
	for k, op := range []string{"grad", "grad", "grad", "step", "grad", "grad", "other", "grad"} {
		x, y := randBatch(r, 8, 11, 60, 4)
		buf := g
		if op == "other" {
			buf = other
		}
		s.KeepZeros()
		for i := range gr {
			gr[i] = float32(k + 1) // stale everywhere: the reference clears all
		}
		if op == "step" {
			s.Step(p, buf, x, y, us)
			ref.Step(q, gr, x, y, ur)
			continue
		}
		s.Gradient(p, buf, x, y)
		ref.Gradient(q, gr, x, y)
		if !slicesEqual(buf, gr) {
			t.Fatalf("batch %d (%s): the gradient after KeepZeros differs from one over a cleared layer", k, op)
		}
	}
	// Vouched for wrongly: the stale rows stay.
	x, y := randBatch(r, 8, 11, 60, 4)
	s.Gradient(p, g, x, y)
	l := s.ws.m.layers[1]
	g[l.W] += 1 // row 0, written by someone else
	if slices.Contains(s.union, 0) {
		t.Skip("row 0 is in the batch: the test needs another row")
	}
	x, y = randBatch(r, 8, 11, 60, 4)
	s.KeepZeros()
	s.Gradient(p, g, x, y)
	if !slices.Contains(s.union, 0) && !slices.Contains(s.prev, 0) && g[l.W] == 0 {
		t.Fatal("a stale row outside both batches was cleared: KeepZeros changed nothing")
	}
}
