//go:build !amd64

package kernel

// simdImpls returns no SIMD implementations on this architecture: the portable Go
// kernel is used.
func simdImpls() []*impl { return nil }
