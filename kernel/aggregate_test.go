package kernel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
)

func TestWeightedSumAndConsensus(t *testing.T) {
	forEachImpl(t, func(impl string) {
		r := rand.New(rand.NewPCG(61, 62))
		for _, size := range []int{1, 17, 5000, vecParallelMin + 33} {
			for _, n := range []int{1, 3, 5} {
				vs := make([][]float32, n)
				w := make([]float32, n)
				for i := range vs {
					vs[i] = randSlice(r, size)
					w[i] = float32(r.NormFloat64())
				}
				dst := randSlice(r, size)
				WeightedSum(dst, w, vs)
				for j := 0; j < size; j++ {
					var want float64
					for i := range vs {
						want += float64(w[i]) * float64(vs[i][j])
					}
					if math.Abs(float64(dst[j])-want) > 1e-5*(1+math.Abs(want)) {
						t.Fatalf("%s size %d n %d: WeightedSum[%d] = %v, want %v", impl, size, n, j, dst[j], want)
					}
				}
				dots, norms := make([]float64, n), make([]float64, n)
				Consensus(dots, norms, vs)
				mean := make([]float64, size)
				for _, v := range vs {
					for j, x := range v {
						mean[j] += float64(x) / float64(n)
					}
				}
				for i, v := range vs {
					var d, q float64
					for j, x := range v {
						d += float64(x) * mean[j]
						q += float64(x) * float64(x)
					}
					if math.Abs(dots[i]-d) > 1e-5*(1+math.Abs(q)) || math.Abs(norms[i]-q) > 1e-6*q {
						t.Fatalf("%s size %d n %d: vector %d dot %v norm %v, want %v %v", impl, size, n, i, dots[i], norms[i], d, q)
					}
				}
			}
		}
	})
}

// GEM's commit on hand-computed values, including the clamp, the guard for
// Δ = 0 and the one-worker case where it is momentum SGD.
func TestGEMCommit(t *testing.T) {
	const lr, mu, kappa, eps, clip = 0.1, 0.9, 1, 1e-12, 5
	// Parameter 0: one worker, θ = s, m0 = 0.2, g = −1 → Δ = 0.1,
	//   m = 0.18+0.1 = 0.28, π = 0.28/0.1 = 2.8, θ += 0.28 (= m: momentum SGD).
	// Parameter 1: |θ − s| = 1 > κ|m| → π < 0 → 0: θ unchanged.
	// Parameter 2: g = 0 → Δ = 0, π huge → clamped, θ += 5·0 = 0.
	// Parameter 3: tiny Δ, large m → π clamped to 5.
	theta := []float32{1, 2, 3, 4}
	s := []float32{1, 1, 3, 4}
	m := []float32{0.2, 0.1, 0.5, 1}
	g := []float32{-1, -1, 0, -0.001}
	GEMCommit(theta, s, m, g, lr, mu, kappa, eps, clip)
	want := []float32{1 + 0.28, 2, 3, 4 + 5*0.0001}
	for i := range want {
		if math.Abs(float64(theta[i]-want[i])) > 1e-6 || math.IsNaN(float64(theta[i])) {
			t.Fatalf("θ = %v, want %v", theta, want)
		}
	}
	if math.Abs(float64(m[0]-0.28)) > 1e-7 || math.Abs(float64(m[2]-0.45)) > 1e-7 {
		t.Fatalf("momentum %v", m)
	}
	nan := float32(math.NaN())
	if GEMFactor(nan, 0, 0, 1, 1, 1e-12, 5) != 0 || GEMFactor(0, 0, float32(math.Inf(1)), float32(math.Inf(1)), 1, 0, 5) != 0 {
		t.Fatal("GEMFactor let a NaN through")
	}
}

func TestAggregationNoAlloc(t *testing.T) {
	race.SkipAllocs(t)
	r := rand.New(rand.NewPCG(63, 64))
	vs := [][]float32{randSlice(r, 1<<17), randSlice(r, 1<<17), randSlice(r, 1<<17)}
	dst, w := make([]float32, 1<<17), []float32{1, 2, 3}
	dots, norms := make([]float64, 3), make([]float64, 3)
	Consensus(dots, norms, vs)
	if a := testing.AllocsPerRun(10, func() {
		WeightedSum(dst, w, vs)
		Consensus(dots, norms, vs)
		GEMCommit(vs[0], vs[1], vs[2], dst, 0.1, 0.9, 1, 1e-12, 5)
	}); a != 0 {
		t.Fatalf("aggregation kernels allocate %v times", a)
	}
}

// DotsNorms with ḡ given equals Consensus, which computes ḡ itself; GEMDelta
// followed by θ += π·Δ equals GEMCommit bit for bit (the worker and server
// halves of a commit across processes).
func TestDotsNormsAndGEMDelta(t *testing.T) {
	forEachImpl(t, func(impl string) {
		r := rand.New(rand.NewPCG(65, 66))
		for _, size := range []int{1, 17, 5000, vecParallelMin + 33} {
			vs := [][]float32{randSlice(r, size), randSlice(r, size), randSlice(r, size)}
			mean := make([]float32, size)
			WeightedSum(mean, []float32{1. / 3, 1. / 3, 1. / 3}, vs)
			d1, n1 := make([]float64, 3), make([]float64, 3)
			d2, n2 := make([]float64, 3), make([]float64, 3)
			Consensus(d1, n1, vs)
			DotsNorms(d2, n2, vs, mean)
			for i := range d1 {
				if math.Abs(d1[i]-d2[i]) > 1e-5*(1+n1[i]) || n1[i] != n2[i] {
					t.Fatalf("%s size %d: DotsNorms %v %v, Consensus %v %v", impl, size, d2, n2, d1, n1)
				}
			}
			theta, s, g := randSlice(r, size), randSlice(r, size), randSlice(r, size)
			m := randSlice(r, size)
			theta2, m2, g2 := append([]float32(nil), theta...), append([]float32(nil), m...), append([]float32(nil), g...)
			GEMCommit(theta, s, m, g, 0.1, 0.9, 1, 1e-12, 5)
			GEMDelta(g2, theta2, s, m2, 0.1, 0.9, 1, 1e-12, 5)
			for j := range theta2 {
				theta2[j] += g2[j]
			}
			for j := range theta {
				if math.Float32bits(theta[j]) != math.Float32bits(theta2[j]) || m[j] != m2[j] {
					t.Fatalf("%s size %d: GEMDelta then add gives θ[%d] = %v, GEMCommit %v", impl, size, j, theta2[j], theta[j])
				}
			}
		}
	})
}
