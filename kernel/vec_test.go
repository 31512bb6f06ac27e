package kernel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
)

func TestVectorOps(t *testing.T) {
	forEachImpl(t, func(impl string) { testVectorOps(t, impl) })
}

func testVectorOps(t *testing.T, impl string) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{0, 1, 5, 15, 16, 17, 1000, vecParallelMin + 7} {
		x, y := randSlice(r, n), randSlice(r, n)
		var dot float64
		for i := range x {
			dot += float64(x[i]) * float64(y[i])
		}
		if got := Dot(x, y); math.Abs(got-dot) > 1e-9*float64(n+1) {
			t.Fatalf("n=%d: Dot %v, want %v", n, got, dot)
		}
		c := make([]float32, n+1)
		c[n] = 7
		Copy(c, x)
		if !slices.Equal(c[:n], x) || c[n] != 7 {
			t.Fatalf("n=%d: Copy wrote %v", n, c)
		}
		want := make([]float32, n)
		for i := range want {
			want[i] = y[i] + 2.5*x[i]
		}
		got := append([]float32(nil), y...)
		Axpy(2.5, x, got)
		if i, ok := closeTo(got, want, 1e-6, 0); !ok { // fused or not
			t.Fatalf("%s n=%d: Axpy[%d]=%v, want %v", impl, n, i, got[i], want[i])
		}
		for i := range want {
			want[i] = 0.5*x[i] - 2*y[i]
		}
		got = append(got[:0], y...)
		AxpBy(0.5, x, -2, got)
		if i, ok := closeTo(got, want, 0, 0); !ok {
			t.Fatalf("%s n=%d: AxpBy[%d]=%v, want %v", impl, n, i, got[i], want[i])
		}
		got = append(got[:0], x...)
		Scal(3, got)
		for i := range got {
			if got[i] != 3*x[i] {
				t.Fatalf("%s n=%d: Scal[%d]=%v, want %v", impl, n, i, got[i], 3*x[i])
			}
		}
	}
	if got := Nrm2([]float32{3, 4}); got != 5 {
		t.Fatalf("Nrm2(3,4) = %v", got)
	}
}

// The pool must survive many concurrent callers sharing it (one per device
// in the real-time engine) and still compute every part exactly once.
func TestPoolConcurrentCallers(t *testing.T) {
	p := NewPool(3)
	done := make(chan [64]int32)
	for c := 0; c < 8; c++ {
		go func() {
			var hits countTask
			for range 200 {
				p.Run(&hits, 64)
			}
			done <- hits.n
		}()
	}
	for c := 0; c < 8; c++ {
		hits := <-done
		for i, h := range hits {
			if h != 200 {
				t.Fatalf("part %d ran %d times, want 200", i, h)
			}
		}
	}
}

type countTask struct{ n [64]int32 }

// Each part index is claimed by exactly one goroutine, so no two goroutines
// write the same element.
func (c *countTask) Part(i, _ int) { c.n[i]++ }

// The fused updates match their plain float64 statements, for every
// implementation, on lengths that exercise the vector tails and the parallel
// split.
func TestUpdates(t *testing.T) {
	forEachImpl(t, func(impl string) {
		r := rand.New(rand.NewPCG(51, 52))
		for _, n := range []int{1, 7, 16, 33, vecParallelMin + 9} {
			p, g := randSlice(r, n), randSlice(r, n)
			m, v, b := randSlice(r, n), randSlice(r, n), randSlice(r, n)
			for i := range v {
				v[i] = v[i] * v[i]
			}
			wp, wm, wv, wb, ws := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			p0, pb, ps := append([]float32(nil), p...), append([]float32(nil), p...), append([]float32(nil), p...)
			for j := range p {
				gj := float64(g[j]) + 0.01*float64(p[j])
				wm[j] = 0.9*float64(m[j]) + 0.1*gj
				wv[j] = 0.999*float64(v[j]) + 0.001*gj*gj
				wp[j] = float64(p[j]) - 0.01*wm[j]/(math.Sqrt(wv[j])*1.3+1e-8)
				wb[j] = 0.9*float64(b[j]) + float64(g[j]) + 0.01*float64(p[j])
				ws[j] = float64(p[j]) - 0.05*(float64(g[j])+0.01*float64(p[j]))
			}
			ApplyUpdate(p, g, &Update{Rule: AdamRule, LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WD: 0.01, C2: 1.3, M: m, V: v}, 0)
			ApplyUpdate(pb, g, &Update{Rule: MomentumRule, LR: 0.05, Mu: 0.9, WD: 0.01, M: b}, 0)
			ApplyUpdate(ps, g, &Update{Rule: SGDRule, LR: 0.05, WD: 0.01}, 0)
			for j := range p {
				// Adam's step divides a moment that may nearly cancel
				// (0.9·m₀ against 0.1·g′); float32 rounding of that
				// difference is amplified, so its tolerance is wider.
				for _, c := range []struct {
					name      string
					got, want float64
					tol       float64
				}{
					{"adam p", float64(p[j]), wp[j], 2e-5}, {"adam m", float64(m[j]), wm[j], 2e-6}, {"adam v", float64(v[j]), wv[j], 2e-6},
					{"momentum b", float64(b[j]), wb[j], 2e-6}, {"momentum p", float64(pb[j]), float64(p0[j]) - 0.05*wb[j], 2e-6},
					{"sgd p", float64(ps[j]), ws[j], 2e-6},
				} {
					if math.Abs(c.got-c.want) > c.tol*(1+math.Abs(c.want)) {
						t.Fatalf("%s n=%d: %s[%d] = %v, want %v", impl, n, c.name, j, c.got, c.want)
					}
				}
			}
		}
		p := make([]float32, 1<<17)
		adam, sgd := &Update{Rule: AdamRule, M: p, V: p}, &Update{}
		if a := testing.AllocsPerRun(10, func() {
			ApplyUpdate(p, p, adam, 0)
			ApplyUpdate(p, p, sgd, 0)
			Dot(p, p)
		}); !race.Enabled && a != 0 {
			t.Fatalf("%s: updates allocate %v times", impl, a)
		}
	})
}

// The loops of the fused output layer against plain Go, on lengths that
// exercise vector tails, for each implementation.
func TestBlockLoops(t *testing.T) {
	forEachImpl(t, func(impl string) {
		r := rand.New(rand.NewPCG(53, 54))
		for _, n := range []int{1, 5, 16, 31, 32, 33, 100, 1024, 1027} {
			x, b := randSlice(r, n), randSlice(r, n)
			// max and addMax
			want := x[0]
			for _, v := range x {
				want = max(want, v)
			}
			if got := cur.max(x); got != want {
				t.Fatalf("%s n=%d: max %v, want %v", impl, n, got, want)
			}
			y := append([]float32(nil), x...)
			wantY := make([]float32, n)
			wantMax := x[0] + b[0]
			for i := range x {
				wantY[i] = x[i] + b[i]
				wantMax = max(wantMax, wantY[i])
			}
			if got := cur.addMax(y, b); got != wantMax {
				t.Fatalf("%s n=%d: addMax %v, want %v", impl, n, got, wantMax)
			}
			if i, ok := closeTo(y, wantY, 0, 0); !ok {
				t.Fatalf("%s n=%d: addMax x[%d] = %v, want %v", impl, n, i, y[i], wantY[i])
			}
			// scaleAcc
			acc := randSlice(r, n)
			dst := make([]float32, n)
			wantAcc := make([]float32, n)
			for i := range x {
				wantY[i] = 0.5 * x[i]
				wantAcc[i] = acc[i] + wantY[i]
			}
			cur.scaleAcc(dst, x, acc, 0.5)
			if i, ok := closeTo(dst, wantY, 0, 0); !ok {
				t.Fatalf("%s n=%d: scaleAcc dst[%d] = %v, want %v", impl, n, i, dst[i], wantY[i])
			}
			if i, ok := closeTo(acc, wantAcc, 1e-7, 0); !ok {
				t.Fatalf("%s n=%d: scaleAcc acc[%d] = %v, want %v", impl, n, i, acc[i], wantAcc[i])
			}
			// scaleAccPanels: runs of nr, stride apart, zero-padded
			nr, stride := cur.nr, 3*cur.nr+5
			runs := (n + nr - 1) / nr
			panels := nanSlice(runs * stride)
			acc2 := make([]float32, n)
			cur.scaleAccPanels(panels, x, acc2, 0.5, stride)
			for i := range x {
				if got := panels[(i/nr)*stride+i%nr]; got != wantY[i] {
					t.Fatalf("%s n=%d: scaleAccPanels element %d = %v, want %v", impl, n, i, got, wantY[i])
				}
				if acc2[i] != wantY[i] {
					t.Fatalf("%s n=%d: scaleAccPanels acc[%d] = %v, want %v", impl, n, i, acc2[i], wantY[i])
				}
			}
			for i := n; i < runs*nr; i++ {
				if got := panels[(i/nr)*stride+i%nr]; got != 0 {
					t.Fatalf("%s n=%d: padding %d = %v, want 0", impl, n, i, got)
				}
			}
			// copyNT, from every alignment of the destination
			for shift := 0; shift < 17 && shift < n; shift++ {
				d := make([]float32, n+shift)
				cur.copyNT(d[shift:], x)
				if i, ok := closeTo(d[shift:], x, 0, 0); !ok {
					t.Fatalf("%s n=%d shift %d: copyNT[%d] = %v, want %v", impl, n, shift, i, d[shift+i], x[i])
				}
			}
		}
	})
}

// ApplyUpdateRows equals ApplyUpdate on the listed rows and leaves the
// others alone.
func TestApplyUpdateRows(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	const rows, width, off = 3000, 40, 7
	p, g := randSlice(r, rows*width), randSlice(r, rows*width)
	list := []int32{5, 0, 2999, 17, 1200}
	want := append([]float32(nil), p...)
	for _, j := range list {
		lo := int(j) * width
		ApplyUpdate(want[lo:lo+width], g[lo:lo+width], &Update{Rule: SGDRule, LR: 0.1}, off+lo)
	}
	ApplyUpdateRows(p, g, &Update{Rule: SGDRule, LR: 0.1}, off, list, width)
	for i := range p {
		if p[i] != want[i] {
			t.Fatalf("p[%d] = %v, want %v", i, p[i], want[i])
		}
	}
}
