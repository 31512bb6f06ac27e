//go:build !amd64

package kernel

// simdImpls returns no SIMD implementations on this architecture: the portable Go
// kernel is used.
func simdImpls() []*impl { return nil }

// No implementation packs bf16 panels with SIMD here.
func pairRowsSIMD(d []uint32, lo, hi []float32) { pairRowsGo(d, lo, hi) }
func cvtPairsSIMD(d []uint32, src []float32)    { cvtPairsGo(d, src) }
