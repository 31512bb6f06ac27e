package workload

import (
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/sparse"
)

// A label on every point is always shared; one on none only when drawn
// at random; one on half the points unless the other batch−1 points all
// miss it and the draw does too.
func TestInclusionKnownAnswers(t *testing.T) {
	y := &sparse.CSR{Rows: 4, Cols: 10, Indptr: []int64{0, 2, 3, 5, 6}, Indices: []int32{0, 2, 0, 0, 2, 0}}
	pi := inclusion(y, 3, 2, 10)
	for k, want := range map[int]float64{0: 1, 1: 0.2, 2: 1 - 0.25*0.8} {
		if math.Abs(float64(pi[k])-want) > 1e-6 {
			t.Errorf("label %d: π %v, want %v", k, pi[k], want)
		}
	}
}
