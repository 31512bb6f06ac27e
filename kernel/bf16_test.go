package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
)

// tolBF16 is the stated accuracy of a bf16 product against the float32
// one: |C − C₃₂| ≤ tolBF16·Σ_p |A[i,p]·B[p,j]| (each operand rounded to 8
// significant bits costs up to 2⁻⁸ of it, so a product up to about 2⁻⁷).
const tolBF16 = 1.0 / 128

// bf16Impls lists the bf16 variants this machine has: the portable one
// always, AVX512-BF16 where the CPU has it.
func bf16Impls() []string {
	var names []string
	for _, g := range impls {
		if g.twin != nil {
			names = append(names, g.twin.name)
		}
	}
	return names
}

// forEachBF16 runs f with each bf16 implementation in turn.
func forEachBF16(t testing.TB, f func(name string)) {
	defer Use(Impl())
	for _, name := range bf16Impls() {
		if err := Use(name); err != nil {
			t.Fatal(err)
		}
		f(name)
	}
}

func TestToBF16(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {0, 0}, {float32(math.Copysign(0, -1)), 0x8000},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie: to even (down)
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie: to even (up)
		{math.Float32frombits(0x3f808001), 0x3f81}, // above the tie
		{math.Float32frombits(0x3f807fff), 0x3f80}, // below the tie
		{inf, 0x7f80}, {-inf, 0xff80},
		{math.MaxFloat32, 0x7f80},             // rounds past bf16's largest
		{math.Float32frombits(0x00000001), 0}, // subnormal: zero
		{math.Float32frombits(0x807fffff), 0x8000},
		{math.Float32frombits(0x00800000), 0x0080}, // smallest normal stays
	} {
		if got := toBF16(c.in); got != c.want {
			t.Errorf("toBF16(%v = %#08x) = %#04x, want %#04x", c.in, math.Float32bits(c.in), got, c.want)
		}
	}
	if got := toBF16(nan); got&0x7f80 != 0x7f80 || got&0x7f == 0 || got&0x40 == 0 {
		t.Errorf("toBF16(NaN) = %#04x, want a quiet NaN", got)
	}
	if got := toBF16(math.Float32frombits(0x7f800001)); got&0x40 == 0 || got&0x7f80 != 0x7f80 {
		t.Errorf("toBF16(signalling NaN) = %#04x, want a quiet NaN", got)
	}
	// Every bf16 value round-trips.
	for h := 0; h < 1<<16; h++ {
		f := fromBF16(uint16(h))
		if h&0x7f80 == 0 || f != f {
			continue
		}
		if got := toBF16(f); got != uint16(h) {
			t.Fatalf("toBF16(fromBF16(%#04x)) = %#04x", h, got)
		}
	}
}

// The SIMD micro-kernels against the portable one, on random panels: the
// same pairs in the same order, so they agree to float32 rounding of the
// sums (the hardware may round the two products of a pair once instead of
// twice).
func TestBF16MicroMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, g := range impls {
		tw := g.twin
		if tw == nil || g == goImpl {
			continue
		}
		mr, nr := tw.mr, tw.nr
		for _, kc := range []int{1, 2, 3, 7, 64, 255, 256} {
			kq := (kc + 1) / 2
			a, b := make([]float32, mr*kc), make([]float32, nr*kc)
			wa, wb := words(a), words(b)
			for i := range kq * mr {
				wa[i] = pairBF16(float32(r.NormFloat64()), float32(r.NormFloat64()))
			}
			for i := range kq * nr {
				wb[i] = pairBF16(float32(r.NormFloat64()), float32(r.NormFloat64()))
			}
			ldc := nr + 5
			for _, store := range []bool{false, true} {
				c0 := randSlice(r, mr*ldc)
				want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
				microBF16Go(mr, nr, store)(kc, a, b, want, ldc)
				if store {
					tw.microStore(kc, a, b, got, ldc)
				} else {
					tw.micro(kc, a, b, got, ldc)
				}
				if i, ok := closeTo(got, want, 2e-7*float64(kq), 2*math.Sqrt(float64(kc))); !ok {
					t.Fatalf("%s kc=%d store=%v: C[%d] = %v, want %v", tw.name, kc, store, i, got[i], want[i])
				}
			}
		}
	}
}

// checkBF16Gemm runs Gemm on every bf16 implementation and holds each to
// both references: the float64 product of the bf16-rounded operands (to
// float32 accumulation) and the float32 product (to tolBF16).
func checkBF16Gemm(t *testing.T, ta, tb bool, m, n, k int, alpha, beta float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, workers int) {
	t.Helper()
	wantBF := append([]float32(nil), c...)
	GemmBF16Ref(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, wantBF, ldc)
	want32 := append([]float32(nil), c...)
	GemmRef(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want32, ldc)
	// Σ_p |alpha·op(A)[i,p]·op(B)[p,j]| (+ |beta·C|), the scale of both
	// tolerances.
	scale := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				var av, bv float32
				if ta {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if tb {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += math.Abs(float64(alpha) * float64(av) * float64(bv))
			}
			if beta != 0 {
				s += math.Abs(float64(beta) * float64(c[i*ldc+j]))
			}
			scale[i*n+j] = s
		}
	}
	forEachBF16(t, func(name string) {
		got := append([]float32(nil), c...)
		NewPool(workers).Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				o, s := i*ldc+j, scale[i*n+j]
				g := float64(got[o])
				if d := math.Abs(g - float64(wantBF[o])); !(d <= 2e-7*float64(k+2)*s+1e-30) {
					t.Fatalf("%s %dx%dx%d tA=%v tB=%v alpha,beta=%v,%v workers=%d: C[%d,%d] = %v, bf16 reference %v",
						name, m, n, k, ta, tb, alpha, beta, workers, i, j, got[o], wantBF[o])
				}
				if d := math.Abs(g - float64(want32[o])); !(d <= tolBF16*s+1e-30) {
					t.Fatalf("%s %dx%dx%d tA=%v tB=%v: C[%d,%d] = %v, float32 product %v: beyond the bf16 tolerance",
						name, m, n, k, ta, tb, i, j, got[o], want32[o])
				}
			}
		}
	})
}

func TestGemmBF16MatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for _, sz := range gemmLadder {
		if race.Enabled && sz.m*sz.n*sz.k > 1<<20 {
			continue
		}
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, ab := range [][2]float32{{1, 0}, {-0.5, 1}} {
					m, n, k := sz.m, sz.n, sz.k
					lda, ldb, ldc := k+1, n+2, n+3
					if ta {
						lda = m + 1
					}
					if tb {
						ldb = k + 2
					}
					a, b := operands(r, ta, tb, m, n, k, lda, ldb)
					c := randSlice(r, m*ldc)
					checkBF16Gemm(t, ta, tb, m, n, k, ab[0], ab[1], a, lda, b, ldb, c, ldc, 1+(m+n+k)%3)
				}
			}
		}
	}
}

func TestUsePrecision(t *testing.T) {
	defer Use(Impl())
	for _, name := range Impls() {
		if err := Use(name); err != nil {
			t.Fatal(err)
		}
		bf, err := UsePrecision(BF16)
		if err != nil {
			t.Fatal(err)
		}
		has := impls[slices.IndexFunc(impls, func(g *impl) bool { return g.name == name })].twin != nil
		if bf != has || (Precision() == BF16) != has {
			t.Fatalf("%s: UsePrecision(bf16) = %v, Precision %s; has a bf16 variant: %v", name, bf, Precision(), has)
		}
		if has && Impl() != name+"-bf16" {
			t.Fatalf("%s: bf16 runs on %s", name, Impl())
		}
		if bf, err := UsePrecision(FP32); err != nil || bf || Impl() != name || Precision() != FP32 {
			t.Fatalf("%s: back to fp32: %v %v, on %s", name, bf, err, Impl())
		}
	}
	if _, err := UsePrecision("fp8"); err == nil {
		t.Fatal("UsePrecision(fp8) accepted")
	}
}

// A bf16 output layer against the float32 one: the same loss and
// gradients to the bf16 tolerance, and bit for bit on any thread count.
func TestXentLayerBF16(t *testing.T) {
	forEachBF16(t, func(impl string) {
		r := rand.New(rand.NewPCG(55, 56))
		for _, sz := range xentLadder {
			if race.Enabled && sz.n*sz.k*sz.L > 1<<20 || sz.n*sz.k*sz.L > 1<<24 {
				continue
			}
			name := fmt.Sprintf("%s %d×%d×%d", impl, sz.n, sz.k, sz.L)
			h, w := randSlice(r, sz.n*sz.k), randSlice(r, (sz.k+1)*sz.L)
			for i := range h {
				h[i] = float32(math.Abs(float64(h[i])))
			}
			y := randCSR(r, sz.n, sz.L, 3, true)
			scale := 1 / float32(sz.n)
			gWant, dhWant := make([]float32, len(w)), make([]float32, sz.n*sz.k)
			lossWant := xentRef(h, sz.n, sz.k, w, sz.L, y, scale, gWant, dhWant)
			run := func(threads int) ([]float32, []float32, float64) {
				defer SetThreads(0)
				SetThreads(threads)
				g, dh, e := nanSlice(len(w)), nanSlice(sz.n*sz.k), nanSlice(sz.n*sz.L)
				loss := XentLayer(h, sz.n, sz.k, w, sz.L, y, scale, g, dh, e, NewXentScratch(sz.n, sz.k, sz.L), nil, 0)
				return g, dh, loss
			}
			g, dh, loss := run(1)
			// The logits' error, up to tolBF16·Σ|h·w| ≈ tolBF16·√k·E|h| per
			// logit, moves the loss by about as much.
			if math.Abs(loss-lossWant) > tolBF16*math.Sqrt(float64(sz.k))*float64(sz.n)+1e-6 {
				t.Fatalf("%s: loss %v, float32 %v", name, loss, lossWant)
			}
			if i, ok := closeTo(g, gWant, 4*tolBF16, maxAbs(gWant)); !ok {
				t.Fatalf("%s: g[%d] = %v, float32 %v", name, i, g[i], gWant[i])
			}
			if i, ok := closeTo(dh, dhWant, 4*tolBF16, maxAbs(dhWant)); !ok {
				t.Fatalf("%s: dh[%d] = %v, float32 %v", name, i, dh[i], dhWant[i])
			}
			g3, dh3, loss3 := run(3)
			if loss3 != loss {
				t.Fatalf("%s: loss %v on 1 thread, %v on 3", name, loss, loss3)
			}
			for i := range g {
				if math.Float32bits(g[i]) != math.Float32bits(g3[i]) {
					t.Fatalf("%s: g[%d] %v on 1 thread, %v on 3", name, i, g[i], g3[i])
				}
			}
			for i := range dh {
				if math.Float32bits(dh[i]) != math.Float32bits(dh3[i]) {
					t.Fatalf("%s: dh[%d] %v on 1 thread, %v on 3", name, i, dh[i], dh3[i])
				}
			}
		}
	})
}

// FuzzGemmBF16 holds the bf16 GEMM to its references on odd shapes,
// layouts and leading dimensions.
func FuzzGemmBF16(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), uint8(0), uint8(0), uint64(1))
	f.Add(uint8(13), uint8(33), uint8(7), uint8(3), uint8(2), uint64(2))
	f.Add(uint8(25), uint8(65), uint8(255), uint8(1), uint8(5), uint64(3))
	f.Fuzz(func(t *testing.T, m8, n8, k8, layout, pad uint8, seed uint64) {
		m, n, k := int(m8%40)+1, int(n8%80)+1, int(k8)+1
		ta, tb := layout&1 != 0, layout&2 != 0
		lda, ldb, ldc := k+int(pad%4), n+int(pad/4%4), n+int(pad/16%4)
		if ta {
			lda = m + int(pad%4)
		}
		if tb {
			ldb = k + int(pad/4%4)
		}
		r := rand.New(rand.NewPCG(seed, 57))
		a, b, c := randSlice(r, max(m, k)*lda), randSlice(r, max(n, k)*ldb), randSlice(r, m*ldc)
		beta := float32(layout>>2&1) * 0.5
		checkBF16Gemm(t, ta, tb, m, n, k, 1.5, beta, a, lda, b, ldb, c, ldc, 1+int(pad%3))
	})
}

// The SIMD conversions equal toBF16 bit for bit, on special values and at
// every length and offset.
func TestBF16ConversionsMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(58, 59))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(0x7f800001), math.Float32frombits(0x00000001), math.Float32frombits(0x807fffff), math.Float32frombits(0x00800000),
		math.MaxFloat32, math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000), math.Float32frombits(0x3f808001)}
	src := randSlice(r, 1100)
	for i := range src {
		if i%3 == 0 {
			src[i] = special[i/3%len(special)]
		} else if i%3 == 1 {
			src[i] = math.Float32frombits(r.Uint32()) // every bit pattern
		}
	}
	for _, g := range impls {
		tw := g.twin
		if tw == nil {
			continue
		}
		for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 64, 100, 256, 499} {
			for _, off := range []int{0, 1, 7} {
				lo, hi := src[off:off+n], src[off+n+3:off+2*n+3]
				got, want := make([]uint32, n+1), make([]uint32, n+1)
				tw.pairRows(got[:n], lo, hi)
				pairRowsGo(want[:n], lo, hi)
				for c := range want {
					if got[c] != want[c] {
						t.Fatalf("%s pairRows n=%d off=%d: word %d = %#08x, want %#08x", tw.name, n, off, c, got[c], want[c])
					}
				}
				run := src[off : off+2*(n/2)]
				clear(got)
				clear(want)
				tw.cvtPairs(got[:n/2], run)
				cvtPairsGo(want[:n/2], run)
				for c := range want {
					if got[c] != want[c] {
						t.Fatalf("%s cvtPairs n=%d off=%d: word %d = %#08x, want %#08x", tw.name, n, off, c, got[c], want[c])
					}
				}
			}
		}
	}
}

// BenchmarkMicroKernel times the GEMM micro-kernels alone, on panels in
// cache (kc 256, 64 B panels), the float32 one and its bf16 variant: the
// compute ceiling the products' packing and memory traffic come on top of.
func BenchmarkMicroKernel(b *testing.B) {
	for _, g := range impls {
		for _, im := range []*impl{g, g.twin} {
			if im == nil || im.blas {
				continue
			}
			const kc, panels = 256, 64
			a, bp := make([]float32, im.mr*kc), make([]float32, im.nr*kc*panels)
			c := make([]float32, im.mr*im.nr)
			b.Run(im.name, func(b *testing.B) {
				for b.Loop() {
					for j := range panels {
						im.micro(kc, a, bp[j*im.nr*kc:], c, im.nr)
					}
				}
				b.ReportMetric(2*float64(im.mr*im.nr*kc*panels)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
