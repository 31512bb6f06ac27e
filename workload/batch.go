package workload

import (
	"math/rand/v2"

	"github.com/hetsgd/hetsgd/sparse"
)

// RandomBatch draws a batch of bs rows of nnz distinct features (values in
// [0, 1)) and 5 distinct labels each: the input of kernel and step timings.
func RandomBatch(r *rand.Rand, bs, inputs, outputs, nnz int) (x, y sparse.CSR) {
	xb := sparse.NewBuilder(inputs, false, bs, bs*nnz)
	yb := sparse.NewBuilder(outputs, true, bs, bs*5)
	for i := 0; i < bs; i++ {
		for _, j := range distinct(r, nnz, inputs) {
			xb.Append(int32(j), float32(r.Float64()))
		}
		xb.EndRow()
		for _, j := range distinct(r, min(5, outputs), outputs) {
			yb.Append(int32(j), 0)
		}
		yb.EndRow()
	}
	return xb.Build(), yb.Build()
}

func distinct(r *rand.Rand, k, n int) []int {
	seen := map[int]bool{}
	var out []int
	for len(out) < k {
		if j := r.IntN(n); !seen[j] {
			seen[j] = true
			out = append(out, j)
		}
	}
	return out
}
