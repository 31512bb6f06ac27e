package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"

	"github.com/hetsgd/hetsgd/sparse"
)

func TestExp32(t *testing.T) {
	// Dense sweep of the range that matters (shifted logits are ≤ 0) plus
	// the positive side, against float64 exp rounded to float32.
	maxUlp := 0
	for x := float32(-87.3); x <= 88.7; x += 0.0137 {
		got := Exp32(x)
		want := float32(math.Exp(float64(x)))
		d := int(math.Float32bits(got)) - int(math.Float32bits(want))
		maxUlp = max(maxUlp, d, -d)
	}
	if maxUlp > 2 {
		t.Fatalf("Exp32 is %d ulp from exp", maxUlp)
	}
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {-100, 0}, {float32(math.Inf(-1)), 0}, {89, float32(math.Inf(1))},
	} {
		if got := Exp32(c.x); got != c.want {
			t.Errorf("Exp32(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if v := Exp32(float32(math.NaN())); v == v {
		t.Errorf("Exp32(NaN) = %v, want NaN", v)
	}
	if v := Exp32(88.72); math.IsInf(float64(v), 0) || v < 3.39e38 {
		t.Errorf("Exp32(88.72) = %v, want finite near 3.39e38", v)
	}
}

func TestSoftmaxXentMatchesReference(t *testing.T) {
	forEachImpl(t, func(impl string) { testSoftmaxXent(t, impl) })
}

func testSoftmaxXent(t *testing.T, impl string) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, s := range []struct{ rows, n int }{{1, 1}, {3, 7}, {2, 16}, {5, 33}, {17, 159}, {128, 983}, {300, 2000}} {
		y := randCSR(r, s.rows, s.n, 3, true)
		z := randSlice(r, s.rows*s.n)
		for i := range z {
			z[i] *= 8 // wide logits exercise the max shift
		}
		for _, grad := range []bool{false, true} {
			want := append([]float32(nil), z...)
			got := append([]float32(nil), z...)
			lw := SoftmaxXentRef(want, s.n, y, 0.5, grad)
			lg := SoftmaxXent(got, s.n, y, 0.5, grad)
			if math.Abs(lg-lw) > 1e-5*(1+math.Abs(lw)) {
				t.Fatalf("%s %+v grad=%v: loss %v, want %v", impl, s, grad, lg, lw)
			}
			if i, ok := closeTo(got, want, 1e-6, 0); !ok {
				t.Fatalf("%s %+v grad=%v: z[%d]=%v, want %v", impl, s, grad, i, got[i], want[i])
			}
		}
	}
}

// Known answer: two equal logits and one label: loss = ln 2, gradient
// (−1/2, 1/2); a row without labels is zeroed and adds nothing.
func TestSoftmaxXentKnownAnswer(t *testing.T) {
	y := randCSR(rand.New(rand.NewPCG(0, 0)), 0, 2, 0, true)
	y.Rows, y.Indptr, y.Indices = 2, []int64{0, 1, 1}, []int32{0}
	z := []float32{3, 3, 1e30, -1e30}
	loss := SoftmaxXent(z, 2, y, 1, true)
	if math.Abs(loss-math.Ln2) > 1e-6 {
		t.Fatalf("loss %v, want ln 2", loss)
	}
	want := []float32{-0.5, 0.5, 0, 0}
	for i := range want {
		if math.Abs(float64(z[i]-want[i])) > 1e-6 {
			t.Fatalf("grad %v, want %v", z, want)
		}
	}
	// Huge logits must not overflow.
	z = []float32{1e30, -1e30, 0, 0}
	if loss := SoftmaxXent(z, 2, y, 1, false); loss != 0 {
		t.Fatalf("loss with dominant true label %v, want 0", loss)
	}
}

func TestSoftmaxXentNoAlloc(t *testing.T) {
	race.SkipAllocs(t)
	r := rand.New(rand.NewPCG(23, 24))
	y := randCSR(r, 128, 983, 19, true)
	z := randSlice(r, 128*983)
	if a := testing.AllocsPerRun(20, func() { SoftmaxXent(z, 983, y, 1, false) }); a != 0 {
		t.Fatalf("SoftmaxXent allocates %v times per call", a)
	}
}

func BenchmarkSoftmaxXent(b *testing.B) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, n := range []int{983, 65536} {
		y := randCSR(r, 256, n, 5, true)
		z0 := randSlice(r, 256*n)
		z := make([]float32, len(z0))
		forEachImpl(b, func(impl string) {
			b.Run(fmt.Sprintf("%s/n=%d", impl, n), func(b *testing.B) {
				for b.Loop() {
					copy(z, z0)
					SoftmaxXent(z, n, y, 1, true)
				}
				b.ReportMetric(float64(len(z))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mlogit/s")
			})
		})
	}
}

func BenchmarkExp32(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = -float32(i) / 100
	}
	for b.Loop() {
		for i := range x {
			x[i] = Exp32(-float32(i) / 100)
		}
	}
}

// Each implementation's exp-shift pass agrees with math.Exp to a few ulp over
// the range of shifted logits, and its float64 sum with the exact sum.
func TestExpShiftAccuracy(t *testing.T) {
	forEachImpl(t, func(impl string) {
		for _, n := range []int{1, 15, 16, 17, 100, 4099} {
			x := make([]float32, n)
			for i := range x {
				x[i] = -90 + 95*float32(i)/float32(n) // crosses minArg and 0
			}
			const m = 3.5
			want := make([]float64, n)
			var sum float64
			for i, v := range x {
				want[i] = math.Exp(float64(v - m))
				if want[i] >= 1.2e-38 { // below, results may flush to 0
					sum += float64(float32(want[i]))
				}
			}
			got := cur.expShift(x, m)
			for i, v := range x {
				w := want[i]
				if w < 1.2e-38 {
					if v > 1.2e-38 {
						t.Fatalf("%s: exp(%g) = %g, want ≈ 0", impl, float64(-90+95*float32(i)/float32(n)-m), v)
					}
					continue
				}
				if rel := math.Abs(float64(v)-w) / w; rel > 3e-7 {
					t.Fatalf("%s n=%d: exp at %d = %g, want %g (rel %.2g)", impl, n, i, v, w, rel)
				}
			}
			if math.Abs(got-sum) > 1e-6*sum+1e-36 {
				t.Fatalf("%s n=%d: sum %v, want %v", impl, n, got, sum)
			}
		}
	})
}

// A row in two parts is the row whole: the same loss and gradient as the
// reference over the concatenation, with −∞ logits scoring 0 in either
// part.
func TestSoftmaxXentSplitMatchesReference(t *testing.T) {
	forEachImpl(t, func(impl string) {
		r := rand.New(rand.NewPCG(23, 24))
		for _, s := range []struct{ a, b, k int }{{1, 0, 1}, {3, 5, 2}, {40, 3351, 5}, {17, 1, 17}, {130, 200, 1}} {
			z := randSlice(r, s.a+s.b)
			for i := range z {
				z[i] *= 8
			}
			if s.b > 2 {
				z[s.a+1] = float32(math.Inf(-1)) // a shared row that is an own row
			}
			labels := make([]int32, s.k)
			for j := range labels {
				labels[j] = int32(j)
			}
			y := &sparse.CSR{Rows: 1, Cols: s.a + s.b, Indptr: []int64{0, int64(s.k)}, Indices: labels}
			want := append([]float32(nil), z...)
			if s.b > 2 {
				want[s.a+1] = -1e30 // the reference's exp of it is 0 too
			}
			lw := SoftmaxXentRef(want, s.a+s.b, y, 0.25, true)
			got := append([]float32(nil), z...)
			lg := SoftmaxXentSplit(got[:s.a], got[s.a:], s.k, 0.25)
			if math.Abs(lg-lw) > 1e-5*(1+math.Abs(lw)) {
				t.Fatalf("%s %+v: loss %v, want %v", impl, s, lg, lw)
			}
			if i, ok := closeTo(got, want, 1e-6, 0); !ok {
				t.Fatalf("%s %+v: gradient[%d]=%v, want %v", impl, s, i, got[i], want[i])
			}
		}
	})
}
