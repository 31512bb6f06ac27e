package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"

	"github.com/hetsgd/hetsgd/sparse"
)

// randCSR returns a rows×cols CSR matrix with about nnz entries per row
// (distinct indices, some rows empty), with values unless pattern.
func randCSR(r *rand.Rand, rows, cols, nnz int, pattern bool) *sparse.CSR {
	b := sparse.NewBuilder(cols, pattern, rows, rows*nnz)
	for i := 0; i < rows; i++ {
		k := r.IntN(2*nnz + 1)
		if i%7 == 3 {
			k = 0
		}
		for _, j := range r.Perm(cols)[:min(k, cols)] {
			b.Append(int32(j), float32(r.NormFloat64()))
		}
		b.EndRow()
	}
	m := b.Build()
	return &m
}

var sparseLadder = []struct{ rows, cols, nnz, n int }{
	{1, 1, 1, 1}, {3, 10, 2, 5}, {17, 100, 9, 33}, {64, 1836, 68, 128},
	{128, 500, 18, 128}, {129, 3000, 40, 127}, {256, 135909, 76, 128},
}

// sparseTol bounds the difference between a kernel and its reference: each
// output sums up to a few dozen products of N(0,1) values, rounded in a
// different order or with fused multiply-adds.
const sparseTol = 1e-5

func TestSpMMMatchesReference(t *testing.T) {
	forEachImpl(t, func(impl string) { testSpMM(t, impl) })
}

func testSpMM(t *testing.T, impl string) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, s := range sparseLadder {
		if race.Enabled && s.cols > 10000 {
			continue
		}
		for _, pattern := range []bool{false, true} {
			x := randCSR(r, s.rows, s.cols, s.nnz, pattern)
			w := randSlice(r, s.cols*s.n)
			want := randSlice(r, s.rows*s.n)
			SpMMRef(want, x, w, s.n)
			var first []float32
			for _, workers := range []int{1, 2, 3} {
				got := randSlice(r, s.rows*s.n) // garbage must be overwritten
				NewPool(workers).SpMM(got, x, w, s.n)
				if i, ok := closeTo(got, want, sparseTol, 0); !ok {
					t.Fatalf("%s %+v pattern=%v workers=%d: dst[%d]=%v, want %v", impl, s, pattern, workers, i, got[i], want[i])
				}
				if first == nil {
					first = got
				} else if i := bitDiff(got, first); i >= 0 {
					t.Fatalf("%s %+v workers=%d: dst[%d] differs from 1 worker", impl, s, workers, i)
				}
			}
		}
	}
}

func TestSpMMTMatchesReference(t *testing.T) {
	forEachImpl(t, func(impl string) { testSpMMT(t, impl) })
}

func testSpMMT(t *testing.T, impl string) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, s := range sparseLadder {
		if race.Enabled && s.cols > 10000 {
			continue
		}
		for _, pattern := range []bool{false, true} {
			x := randCSR(r, s.rows, s.cols, s.nnz, pattern)
			g := randSlice(r, s.rows*s.n)
			init := randSlice(r, s.cols*s.n)
			want := append([]float32(nil), init...)
			SpMMTRef(want, x, g, s.n)
			var first []float32
			for _, workers := range []int{1, 2, 3} {
				got := append([]float32(nil), init...)
				NewPool(workers).SpMMT(got, x, g, s.n)
				if i, ok := closeTo(got, want, sparseTol, 0); !ok {
					t.Fatalf("%s %+v pattern=%v workers=%d: dW[%d]=%v, want %v", impl, s, pattern, workers, i, got[i], want[i])
				}
				if first == nil {
					first = got
				} else if i := bitDiff(got, first); i >= 0 {
					t.Fatalf("%s %+v workers=%d: dW[%d] differs from 1 worker", impl, s, workers, i)
				}
			}
		}
	}
}

func TestSparseNoAlloc(t *testing.T) {
	race.SkipAllocs(t)
	r := rand.New(rand.NewPCG(15, 16))
	x := randCSR(r, 256, 5000, 76, false)
	w, dst := randSlice(r, 5000*128), make([]float32, 256*128)
	p := NewPool(2)
	forEachImpl(t, func(impl string) {
		if a := testing.AllocsPerRun(20, func() { p.SpMM(dst, x, w, 128); p.SpMMT(w, x, dst, 128) }); a != 0 {
			t.Fatalf("%s: sparse kernels allocate %v times per call", impl, a)
		}
	})
}

// BenchmarkSparse runs the first layer's forward (SpMM) and backward (SpMMT)
// on the model's shapes, up to Amazon-670k (256 rows, 135,909 features at 76
// non-zeros, hidden 128).
func BenchmarkSparse(b *testing.B) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, s := range []struct{ rows, cols, nnz, n int }{
		{128, 1836, 68, 128}, {128, 500, 18, 128}, {256, 135909, 76, 128},
	} {
		x := randCSR(r, s.rows, s.cols, s.nnz, false)
		w, dst := randSlice(r, s.cols*s.n), make([]float32, s.rows*s.n)
		name := fmt.Sprintf("%dx%d@%dx%d", s.rows, s.cols, s.nnz, s.n)
		forEachImpl(b, func(impl string) {
			b.Run(impl+"/SpMM/"+name, func(b *testing.B) {
				for b.Loop() {
					SpMM(dst, x, w, s.n)
				}
			})
			b.Run(impl+"/SpMMT/"+name, func(b *testing.B) {
				for b.Loop() {
					SpMMT(w, x, dst, s.n)
				}
			})
		})
	}
}

// bitDiff returns the first index where a and b differ in any bit, or -1.
func bitDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
