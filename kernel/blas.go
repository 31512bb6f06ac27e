package kernel

// BLASBackend is an external BLAS whose SGEMM can replace the built-in
// micro-kernels (package kernel/openblas registers one in the openblas
// build). Sgemm must compute, on the calling thread, the row-major
//
//	C = alpha·op(A)·op(B) + beta·C   (op(A) m×k, op(B) k×n)
//
// with BLAS semantics (C is not read when beta is 0).
type BLASBackend interface {
	Name() string
	Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	// Describe says which library, version and kernels run.
	Describe() string
	// Env names an environment variable the library reads when it loads,
	// and the value it needs (key "" when none); see BLASEnv.
	Env() (key, value string)
}

var blas BLASBackend

// RegisterBLAS adds an implementation named b.Name() whose GEMM tiles are
// b's Sgemm and whose vector loops are those of the fastest built-in
// implementation, and makes it the one in use unless HETSGD_KERNEL names
// another. It is meant for package initialisation.
func RegisterBLAS(b BLASBackend) {
	base := impls[0]
	im := *base
	im.name, im.blas = b.Name(), true
	im.twin = nil // bf16 products are the built-in kernels': no bf16 variant of a BLAS
	blas = b
	impls = append([]*impl{&im}, impls...)
	cur = pickImpl()
}

// BLAS describes the registered external BLAS, "" when there is none.
func BLAS() string {
	if blas == nil {
		return ""
	}
	return blas.Describe()
}

// BLASEnv returns the environment variable the registered BLAS needs at
// load time, as KEY=VALUE ("" when none): OpenBLAS picks its kernels as
// the library loads, before any Go code runs, so a process that lacks it
// restarts with it (package internal/reexec), first thing in main or
// TestMain.
func BLASEnv() string {
	if blas == nil {
		return ""
	}
	if key, value := blas.Env(); key != "" {
		return key + "=" + value
	}
	return ""
}

// blasTile computes C[i0:i1, j0:j1] of g with one call of the external SGEMM.
func blasTile(g *gemmArgs, i0, i1, j0, j1 int) {
	m, n := i1-i0, j1-j0
	if m == 0 || n == 0 {
		return
	}
	aOff, bOff := i0*g.lda, j0
	if g.transA {
		aOff = i0
	}
	if g.transB {
		bOff = j0 * g.ldb
	}
	blas.Sgemm(g.transA, g.transB, m, n, g.k, g.alpha, g.a[aOff:], g.lda, g.b[bOff:], g.ldb, g.beta, g.c[i0*g.ldc+j0:], g.ldc)
}
