package kernel

import (
	"math/rand/v2"
	"testing"
)

// The row kernels against their references with every implementation,
// widths across the SIMD blocks' edges, rows repeated.
func TestRowKernels(t *testing.T) {
	forEachImpl(t, func(name string) {
		r := rand.New(rand.NewPCG(4, 4))
		for _, width := range []int{1, 3, 8, 15, 16, 17, 64, 128, 131} {
			const n = 40
			w := randSlice(r, n*width)
			h := randSlice(r, width)
			rows := []int32{0, 5, 5, 39, 12, 1}
			a := randSlice(r, len(rows))
			z, zr := make([]float32, len(rows)), make([]float32, len(rows))
			RowDots(z, w, rows, h)
			RowDotsRef(zr, w, rows, h)
			if i, ok := closeTo(z, zr, 1e-5, float64(width)); !ok {
				t.Fatalf("%s width %d: RowDots[%d] = %v, reference %v", name, width, i, z[i], zr[i])
			}
			y, yr := append([]float32(nil), h...), append([]float32(nil), h...)
			RowsAxpy(y, w, rows, a)
			RowsAxpyRef(yr, w, rows, a)
			if i, ok := closeTo(y, yr, 1e-5, float64(len(rows))); !ok {
				t.Fatalf("%s width %d: RowsAxpy[%d] = %v, reference %v", name, width, i, y[i], yr[i])
			}
			v, vr := append([]float32(nil), w...), append([]float32(nil), w...)
			AxpyRows(v, rows, a, h)
			AxpyRowsRef(vr, rows, a, h)
			if i, ok := closeTo(v, vr, 1e-5, 2); !ok {
				t.Fatalf("%s width %d: AxpyRows[%d] = %v, reference %v", name, width, i, v[i], vr[i])
			}
			// Split at rows 5 and 13: the same sums, bit for bit.
			u := append([]float32(nil), w...)
			for _, cut := range [][2]int32{{13, n}, {0, 5}, {5, 13}} {
				AxpyRowsIn(u, rows, a, h, cut[0], cut[1])
			}
			for i := range u {
				if u[i] != v[i] {
					t.Fatalf("%s width %d: AxpyRowsIn in three ranges [%d] = %v, AxpyRows %v", name, width, i, u[i], v[i])
				}
			}
		}
	})
}
