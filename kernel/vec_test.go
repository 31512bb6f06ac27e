package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
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
