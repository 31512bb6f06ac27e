package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestElementwise(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, s := range []struct{ rows, cols int }{{1, 1}, {3, 5}, {256, 983}, {70, 2000}} {
		a := randSlice(r, s.rows*s.cols)
		sum := make([]float32, s.cols)
		SumRows(sum, a, s.rows, s.cols)
		for j := 0; j < s.cols; j++ {
			var want float32
			for i := 0; i < s.rows; i++ {
				want += a[i*s.cols+j]
			}
			if sum[j] != want {
				t.Fatalf("%+v: SumRows[%d]=%v, want %v", s, j, sum[j], want)
			}
		}
		v := randSlice(r, s.cols)
		Broadcast(a, s.rows, s.cols, v)
		for i, x := range a {
			if x != v[i%s.cols] {
				t.Fatalf("%+v: Broadcast[%d]=%v, want %v", s, i, x, v[i%s.cols])
			}
		}
		act := randSlice(r, s.rows*s.cols)
		act[0] = float32(math.NaN())
		g := randSlice(r, len(act))
		g0 := append([]float32(nil), g...)
		ReLUGrad(g, act, len(act))
		ReLU(act, len(act))
		for i := range act {
			if act[i] < 0 || act[i] != act[i] {
				t.Fatalf("ReLU left %v", act[i])
			}
			want := g0[i]
			if act[i] == 0 {
				want = 0
			}
			if g[i] != want {
				t.Fatalf("ReLUGrad[%d]=%v, want %v", i, g[i], want)
			}
		}
	}
}
