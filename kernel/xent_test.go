package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"

	"github.com/hetsgd/hetsgd/sparse"
)

// xentLadder: batch n × inputs k × labels L. Odd sizes, one block, a ragged
// last block, more blocks than chunks, and rows without labels (randCSR
// leaves every seventh row empty).
var xentLadder = []struct{ n, k, L int }{
	{1, 1, 1}, {3, 5, 7}, {13, 33, 1023}, {7, 12, 1025}, {12, 128, 3000}, {20, 17, 17*xentBlock + 5}, {256, 128, 4096}, {300, 24, 2100}, {128, 128, 983}, {4, 8, 66*xentBlock + 3},
}

// xentRef is XentLayer's reference: GemmRef, SoftmaxXentRef and two more
// GemmRef products, on row-major matrices.
func xentRef(h []float32, n, k int, w []float32, L int, y *sparse.CSR, scale float32, g, dh []float32) float64 {
	z := make([]float32, n*L)
	for r := 0; r < n; r++ {
		copy(z[r*L:(r+1)*L], w[k*L:(k+1)*L])
	}
	GemmRef(false, false, n, L, k, 1, h, k, w, L, 1, z, L)
	loss := SoftmaxXentRef(z, L, y, scale, true)
	GemmRef(true, false, k, L, n, 1, h, k, z, L, 0, g, L)
	for j := 0; j < L; j++ {
		var s float64
		for r := 0; r < n; r++ {
			s += float64(z[r*L+j])
		}
		g[k*L+j] = float32(s)
	}
	GemmRef(false, true, n, k, L, 1, z, L, w, L, 0, dh, k)
	return loss
}

func TestXentLayerMatchesReference(t *testing.T) {
	forEachImpl(t, func(impl string) { testXentLayer(t, impl) })
}

func testXentLayer(t *testing.T, impl string) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, sz := range xentLadder {
		if race.Enabled && sz.n*sz.k*sz.L > 1<<20 {
			continue
		}
		name := fmt.Sprintf("%s %d×%d×%d", impl, sz.n, sz.k, sz.L)
		h, w := randSlice(r, sz.n*sz.k), randSlice(r, (sz.k+1)*sz.L)
		for i := range h {
			h[i] = float32(math.Abs(float64(h[i]))) // post-ReLU inputs
		}
		y := randCSR(r, sz.n, sz.L, 3, true)
		scale := 1 / float32(sz.n)
		gWant, dhWant := make([]float32, len(w)), make([]float32, sz.n*sz.k)
		lossWant := xentRef(h, sz.n, sz.k, w, sz.L, y, scale, gWant, dhWant)

		s := NewXentScratch(sz.n+3, sz.k, sz.L)
		g, dh, e := nanSlice(len(w)), nanSlice(sz.n*sz.k), nanSlice(sz.n*sz.L)
		for rep := 0; rep < 2; rep++ { // a second call reuses the scratch
			loss := XentLayer(h, sz.n, sz.k, w, sz.L, y, scale, g, dh, e, s, nil, 0)
			if math.Abs(loss-lossWant) > 1e-5*(1+math.Abs(lossWant)) {
				t.Fatalf("%s: loss %v, want %v", name, loss, lossWant)
			}
			// Each gradient element sums up to n (g) or L (dh) products of
			// softmax-scaled terms; compare relative to the largest.
			if i, ok := closeTo(g, gWant, 2e-6, maxAbs(gWant)); !ok {
				t.Fatalf("%s: g[%d] = %v, want %v", name, i, g[i], gWant[i])
			}
			if i, ok := closeTo(dh, dhWant, 2e-6, maxAbs(dhWant)); !ok {
				t.Fatalf("%s: dh[%d] = %v, want %v", name, i, dh[i], dhWant[i])
			}
		}
	}
}

// The result does not depend on the number of threads.
func TestXentLayerThreadIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	n, k, L := 64, 16, 70*xentBlock+7 // more blocks than chunks
	h, w := randSlice(r, n*k), randSlice(r, (k+1)*L)
	y := randCSR(r, n, L, 4, true)
	run := func(threads int) ([]float32, []float32, float64) {
		defer SetThreads(0)
		SetThreads(threads)
		g, dh, e := make([]float32, len(w)), make([]float32, n*k), make([]float32, n*L)
		loss := XentLayer(h, n, k, w, L, y, 0.25, g, dh, e, NewXentScratch(n, k, L), nil, 0)
		return g, dh, loss
	}
	g1, dh1, l1 := run(1)
	g3, dh3, l3 := run(3)
	if l1 != l3 {
		t.Fatalf("loss %v with 1 thread, %v with 3", l1, l3)
	}
	for i := range g1 {
		if g1[i] != g3[i] {
			t.Fatalf("g[%d] %v with 1 thread, %v with 3", i, g1[i], g3[i])
		}
	}
	for i := range dh1 {
		if dh1[i] != dh3[i] {
			t.Fatalf("dh[%d] %v with 1 thread, %v with 3", i, dh1[i], dh3[i])
		}
	}
}

func TestXentLayerDoesNotAllocate(t *testing.T) {
	race.SkipAllocs(t)
	testXentNoAlloc(t)
	forEachBF16(t, func(string) { testXentNoAlloc(t) })
}

func testXentNoAlloc(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	n, k, L := 32, 16, 3*xentBlock
	h, w := randSlice(r, n*k), randSlice(r, (k+1)*L)
	y := randCSR(r, n, L, 4, true)
	g, dh, e := make([]float32, len(w)), make([]float32, n*k), make([]float32, n*L)
	s := NewXentScratch(n, k, L)
	XentLayer(h, n, k, w, L, y, 1, g, dh, e, s, nil, 0)
	if a := testing.AllocsPerRun(10, func() { XentLayer(h, n, k, w, L, y, 1, g, dh, e, s, nil, 0) }); a != 0 {
		t.Fatalf("XentLayer allocates %v times", a)
	}
	// With a fused update, for every rule.
	m, v := make([]float32, len(w)), make([]float32, len(w))
	for _, rule := range []UpdateRule{SGDRule, MomentumRule, AdamRule} {
		u := &Update{Rule: rule, LR: 1e-3, WD: 1e-4, Mu: 0.9, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C2: 1, M: m, V: v}
		XentLayer(h, n, k, w, L, y, 1, nil, dh, e, s, u, 0)
		if a := testing.AllocsPerRun(10, func() { XentLayer(h, n, k, w, L, y, 1, nil, dh, e, s, u, 0) }); a != 0 {
			t.Fatalf("XentLayer with update rule %d allocates %v times", rule, a)
		}
	}
}

func nanSlice(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

func maxAbs(x []float32) float64 {
	var m float64
	for _, v := range x {
		m = max(m, math.Abs(float64(v)))
	}
	return m
}

// BenchmarkXentLayer times the fused output layer at the Delicious and
// Amazon-670k shapes (batch × hidden × labels) and reports the rate of its
// three products (6·n·k·L flops).
func BenchmarkXentLayer(b *testing.B) {
	defer UsePrecision(Precision())
	for _, sz := range []struct{ n, k, L int }{{128, 128, 983}, {256, 128, 670091}} {
		for _, prec := range []string{FP32, BF16} {
			if bf, _ := UsePrecision(prec); prec == BF16 && !bf {
				continue
			}
			b.Run(fmt.Sprintf("%s/%dx%dx%d", prec, sz.n, sz.k, sz.L), func(b *testing.B) {
				r := rand.New(rand.NewPCG(47, 48))
				h, w := randSlice(r, sz.n*sz.k), randSlice(r, (sz.k+1)*sz.L)
				y := randCSR(r, sz.n, sz.L, 3, true)
				g, dh, e := make([]float32, len(w)), make([]float32, sz.n*sz.k), make([]float32, sz.n*sz.L)
				s := NewXentScratch(sz.n, sz.k, sz.L)
				XentLayer(h, sz.n, sz.k, w, sz.L, y, 1, g, dh, e, s, nil, 0)
				for b.Loop() {
					XentLayer(h, sz.n, sz.k, w, sz.L, y, 1, g, dh, e, s, nil, 0)
				}
				b.ReportMetric(6*float64(sz.n*sz.k)*float64(sz.L)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// With an update, XentLayer leaves the weights exactly where computing the
// gradient and then applying the update would, for every rule, and its dh
// and loss are unchanged (dh uses the weights before the update).
func TestXentLayerFusedUpdate(t *testing.T) {
	forEachImpl(t, func(impl string) {
		r := rand.New(rand.NewPCG(49, 50))
		for _, sz := range []struct{ n, k, L int }{{5, 7, 9}, {13, 16, 2*xentBlock + 3}, {0, 4, 10}} {
			h, w := randSlice(r, sz.n*sz.k), randSlice(r, (sz.k+1)*sz.L)
			y := randCSR(r, sz.n, sz.L, 3, true)
			const off = 11 // w sits at offset 11 of the optimizer's vector
			for _, rule := range []UpdateRule{SGDRule, MomentumRule, AdamRule} {
				state := func() (m, v []float32) {
					rr := rand.New(rand.NewPCG(5, 6))
					m, v = randSlice(rr, off+len(w)), randSlice(rr, off+len(w))
					for i := range v {
						v[i] *= v[i]
					}
					return m, v
				}
				m1, v1 := state()
				m2, v2 := state()
				upd := func(m, v []float32) *Update {
					return &Update{Rule: rule, LR: 0.1, WD: 0.01, Mu: 0.9, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C2: 1.2, M: m, V: v}
				}
				// Unfused: gradient, then the update.
				w1 := append([]float32(nil), w...)
				g, dh1, e := make([]float32, len(w)), make([]float32, sz.n*sz.k), make([]float32, sz.n*sz.L)
				s := NewXentScratch(max(sz.n, 1), sz.k, sz.L)
				l1 := XentLayer(h, sz.n, sz.k, w1, sz.L, y, 0.5, g, dh1, e, s, nil, 0)
				ApplyUpdate(w1, g, upd(m1, v1), off)
				// Fused.
				w2 := append([]float32(nil), w...)
				dh2 := make([]float32, sz.n*sz.k)
				l2 := XentLayer(h, sz.n, sz.k, w2, sz.L, y, 0.5, nil, dh2, e, s, upd(m2, v2), off)
				name := fmt.Sprintf("%s rule %d %d×%d×%d", impl, rule, sz.n, sz.k, sz.L)
				if l1 != l2 {
					t.Fatalf("%s: loss %v fused, %v unfused", name, l2, l1)
				}
				for _, c := range []struct {
					what string
					a, b []float32
				}{{"w", w1, w2}, {"dh", dh1, dh2}, {"m", m1, m2}, {"v", v1, v2}} {
					for i := range c.a {
						if c.a[i] != c.b[i] {
							t.Fatalf("%s: %s[%d] fused %v, unfused %v", name, c.what, i, c.b[i], c.a[i])
						}
					}
				}
			}
		}
	})
}

// Small output layers worth the threads are cut into about xentMinBlocks
// blocks; tiny ones stay one block; large ones take xentBlock.
func TestXentWidth(t *testing.T) {
	for _, c := range []struct{ rows, L, want int }{
		{128, 159, 159},     // Bibtex: 20k logits, one block
		{128, 983, 128},     // Delicious: 8 blocks, the last 87 wide
		{300, 2100, 320},    // 7 blocks, the last 180 wide
		{256, 4096, 512},    // 8 blocks
		{256, 670091, 1024}, // Amazon-670k
		{1 << 16, 3, 64},    // many rows, few labels: one block of 3 used
		{1, 1, 1},
	} {
		if got := xentWidth(c.rows, c.L); got != c.want {
			t.Errorf("xentWidth(%d, %d) = %d, want %d", c.rows, c.L, got, c.want)
		}
	}
}
