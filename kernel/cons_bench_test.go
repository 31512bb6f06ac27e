package kernel

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkAggregation compares the in-process all-reduce of Sum (one
// weighted sum of the devices' gradients) with AdaCons' extra pass
// (Consensus) on Delicious-sized gradients.
func BenchmarkAggregation(b *testing.B) {
	r := rand.New(rand.NewPCG(71, 72))
	for _, n := range []int{8, 16} {
		vs := make([][]float32, n)
		for i := range vs {
			vs[i] = randSlice(r, 190000)
		}
		w := make([]float32, n)
		for i := range w {
			w[i] = 1
		}
		dst := make([]float32, 190000)
		dots, norms := make([]float64, n), make([]float64, n)
		b.Run(fmt.Sprintf("WeightedSum/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				WeightedSum(dst, w, vs)
			}
		})
		b.Run(fmt.Sprintf("Consensus/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				Consensus(dots, norms, vs)
			}
		})
	}
}
