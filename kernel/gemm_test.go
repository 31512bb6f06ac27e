package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
)

// gemmLadder is the shared ladder of GEMM shapes: tiny, odd (not multiples of
// any blocking size), and the model's shapes (batch × hidden × labels).
var gemmLadder = []struct{ m, n, k int }{
	{1, 1, 1}, {3, 5, 7}, {4, 4, 4}, {5, 3, 1}, {17, 33, 9}, {33, 67, 129},
	{64, 159, 128}, {65, 1025, 257}, {128, 983, 128}, {256, 128, 983}, {130, 70, 600},
	// Small m over many columns: the streamed path (smallM), in several
	// parts and blocks.
	{1, 5000, 37}, {3, 9001, 20}, {4, 4097, 128},
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// operands returns random A and B of a GEMM of m×n×k with leading
// dimensions lda and ldb, each as many rows as op stores (A: m, or k
// transposed; B: k, or n transposed).
func operands(r *rand.Rand, ta, tb bool, m, n, k, lda, ldb int) (a, b []float32) {
	ar, br := m, k
	if ta {
		ar = k
	}
	if tb {
		br = n
	}
	return randSlice(r, ar*lda), randSlice(r, br*ldb)
}

// closeTo reports whether got is within a relative-to-scale tolerance of want:
// |got−want| ≤ tol·(1 + scale), where scale bounds the terms summed.
func closeTo(got, want []float32, tol float64, scale float64) (int, bool) {
	for i := range want {
		if math.Float32bits(got[i]) == math.Float32bits(want[i]) {
			continue // equal, NaN padding included
		}
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol*(1+scale)) {
			return i, false
		}
	}
	return -1, true
}

// forEachImpl runs f with each GEMM micro-kernel this machine supports in
// turn, restoring the default afterwards.
func forEachImpl(t testing.TB, f func(name string)) {
	defer Use(Impl())
	for _, name := range Impls() {
		if err := Use(name); err != nil {
			t.Fatal(err)
		}
		f(name)
	}
}

func TestGemmMatchesReference(t *testing.T) {
	forEachImpl(t, func(name string) { testGemmMatchesReference(t, name) })
}

func testGemmMatchesReference(t *testing.T, impl string) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sz := range gemmLadder {
		if race.Enabled && sz.m*sz.n*sz.k > 1<<20 {
			continue
		}
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, ab := range [][2]float32{{1, 0}, {-0.5, 1}, {2, 0.25}} {
					m, n, k := sz.m, sz.n, sz.k
					lda, ldb, ldc := k+1, n+2, n+3 // padded leading dimensions
					if ta {
						lda = m + 1
					}
					if tb {
						ldb = k + 2
					}
					a, b := operands(r, ta, tb, m, n, k, lda, ldb)
					c := randSlice(r, m*ldc)
					if ab[1] == 0 {
						for i := range c {
							c[i] = float32(math.NaN()) // beta=0 must ignore C
						}
					}
					want := append([]float32(nil), c...)
					GemmRef(ta, tb, m, n, k, ab[0], a, lda, b, ldb, ab[1], want, ldc)
					for _, workers := range []int{1, 2, 3} {
						got := append([]float32(nil), c...)
						NewPool(workers).Gemm(ta, tb, m, n, k, ab[0], a, lda, b, ldb, ab[1], got, ldc)
						// float32 accumulation of k products of N(0,1) values.
						tol := 1e-6 * float64(k)
						if i, ok := closeTo(got, want, tol, 3*math.Sqrt(float64(k))); !ok && i%ldc < n {
							t.Fatalf("%s %dx%dx%d tA=%v tB=%v alpha,beta=%v workers=%d: C[%d]=%v, want %v",
								impl, m, n, k, ta, tb, ab, workers, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// The split over workers must not change a single bit.
// The built-in micro-kernels compute every element the same way whatever the
// split; an external BLAS need not (OpenBLAS's edge kernels depend on the
// tile), so its results are reproducible for a given number of threads only.
func TestGemmBitwiseIndependentOfWorkers(t *testing.T) {
	forEachImpl(t, func(string) {
		if !cur.blas {
			testGemmBitwise(t)
		}
	})
	forEachBF16(t, func(string) { testGemmBitwise(t) })
}

func testGemmBitwise(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sz := range [][3]int{{67, 301, 515}, {2, 9001, 130}} { // the packed path, the streamed one
		m, n, k := sz[0], sz[1], sz[2]
		a, b := randSlice(r, m*k), randSlice(r, k*n)
		c1 := make([]float32, m*n)
		NewPool(1).Gemm(false, false, m, n, k, 1, a, k, b, n, 0, c1, n)
		for _, w := range []int{2, 3, 5} {
			c2 := make([]float32, m*n)
			NewPool(w).Gemm(false, false, m, n, k, 1, a, k, b, n, 0, c2, n)
			for i := range c1 {
				if math.Float32bits(c1[i]) != math.Float32bits(c2[i]) {
					t.Fatalf("%dx%dx%d, workers=%d: C[%d]=%v differs from 1-worker %v", m, n, k, w, i, c2[i], c1[i])
				}
			}
		}
	}
}

// A row of C is the same bits whether Gemm computes it alone (the
// streamed path, smallM) or among many (the packed one): a point scored
// alone or in a batch gets the same scores.
func TestGemmRowAloneEqualsInABatch(t *testing.T) {
	if race.Enabled {
		t.Skip("arithmetic on one goroutine a part: the ordinary stage runs it, the ladder covers the parts' sharing")
	}
	forEachImpl(t, func(name string) {
		if cur.blas {
			return // an external BLAS tiles as it likes
		}
		r := rand.New(rand.NewPCG(7, 8))
		for _, k := range []int{37, 600} { // one block of depth, several
			m, n := 40, 4099
			a, b := randSlice(r, m*k), randSlice(r, k*n)
			for i := range a {
				if i%3 == 0 {
					a[i] = 0 // ReLU's zeros, which the streamed path skips
				}
			}
			for _, beta := range []float32{0, 1} {
				c0 := randSlice(r, m*n)
				all := append([]float32(nil), c0...)
				NewPool(2).Gemm(false, false, m, n, k, 1.5, a, k, b, n, beta, all, n)
				for _, rows := range []int{1, 3, smallM} {
					some := append([]float32(nil), c0[:rows*n]...)
					NewPool(2).Gemm(false, false, rows, n, k, 1.5, a, k, b, n, beta, some, n)
					for i := range some {
						if math.Float32bits(some[i]) != math.Float32bits(all[i]) {
							t.Fatalf("%s, k %d, beta %v: C[%d] of %d rows %v, of %d rows %v", name, k, beta, i, rows, some[i], m, all[i])
						}
					}
				}
			}
		}
	})
}

func TestGemmNoAlloc(t *testing.T) {
	race.SkipAllocs(t)
	r := rand.New(rand.NewPCG(5, 6))
	m, n, k := 128, 983, 128
	a, b, c := randSlice(r, m*k), randSlice(r, k*n), make([]float32, m*n)
	p := NewPool(2)
	check := func(name string) {
		for _, rows := range []int{m, 1} { // the packed path, the streamed one
			p.Gemm(false, false, rows, n, k, 1, a, k, b, n, 0, c, n)
			if allocs := testing.AllocsPerRun(20, func() {
				p.Gemm(false, false, rows, n, k, 1, a, k, b, n, 0, c, n)
			}); allocs != 0 {
				t.Fatalf("%s, %d rows: Gemm allocates %v times per call", name, rows, allocs)
			}
		}
	}
	forEachImpl(t, check)
	forEachBF16(t, check)
}

func TestGemmPanicsOnShortSlice(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a too-short C")
		}
	}()
	Gemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 3), 2)
}

// BenchmarkGemm runs the model's three GEMM layouts on the ladder shared with
// the other backends: forward (NN), weight gradient (TN), input gradient (NT).
func BenchmarkGemm(b *testing.B) {
	shapes := []struct{ m, n, k int }{
		{128, 983, 128}, {256, 8192, 128}, {256, 65536, 128},
		{256, 670091, 128}, // Amazon-670k: batch × labels × hidden
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, s := range shapes {
		for _, layout := range []string{"NN", "TN", "NT"} {
			ta, tb := layout[0] == 'T', layout[1] == 'T'
			m, n, k := s.m, s.n, s.k
			lda, ldb := k, n
			if ta {
				lda = m
			}
			if tb {
				ldb = k
			}
			a := randSlice(r, m*k)
			bb := randSlice(r, k*n)
			c := make([]float32, m*n)
			run := func(impl string) {
				b.Run(fmt.Sprintf("%s/%s/%dx%dx%d", impl, layout, m, n, k), func(b *testing.B) {
					for b.Loop() {
						Gemm(ta, tb, m, n, k, 1, a, lda, bb, ldb, 0, c, n)
					}
					b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
			forEachImpl(b, run)
			forEachBF16(b, run)
		}
	}
}

// BenchmarkGemmFewRows is a model server's forward product at Amazon-670k's
// output layer (hidden 128 × 670,091 labels) for 1 and 16 points, which Gemm
// streams (smallM), and 17, which it packs.
func BenchmarkGemmFewRows(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	n, k := 670091, 128
	a, bb := randSlice(r, smallM*2*k), randSlice(r, k*n)
	c := make([]float32, smallM*2*n)
	for _, m := range []int{1, smallM, smallM + 1} {
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			for b.Loop() {
				Gemm(false, false, m, n, k, 1, a, k, bb, n, 0, c, n)
			}
		})
	}
}
