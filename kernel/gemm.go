package kernel

// Blocking parameters of the packed GEMM (BLIS notation). A kc×nc block of
// op(B) is packed into nr-wide column panels that stay in L2; an mc×kc block
// of op(A) is packed into mr-tall row panels; the micro-kernel multiplies one
// A panel by one B panel into an mr×nr tile of C held in registers.
const (
	gemmMR = 4
	gemmNR = 4
	gemmKC = 256
	gemmMC = 64
	gemmNC = 1024
)

// Gemm computes C = alpha·op(A)·op(B) + beta·C on the default pool, where
// op(A) is m×k (A itself is k×m when transA), op(B) is k×n, and C is m×n, all
// row-major with leading dimensions lda, ldb, ldc. With beta == 0, C is
// overwritten and its old contents (NaN included) are ignored, as in BLAS.
func Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Default().Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

type gemmArgs struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a, b, c        []float32
	lda, ldb, ldc  int
	splitN         bool
	unit           int // rows or columns per part, a multiple of mr or nr
}

type gemmTask struct {
	gemmArgs
}

type gemmScratch struct {
	pa [gemmMC * gemmKC]float32
	pb [gemmKC * gemmNC]float32
}

var (
	gemmTaskPool    = newFreeList[gemmTask](64)
	gemmScratchPool = newFreeList[gemmScratch](16)
)

// Gemm is the package-level Gemm run on p.
func (p *Pool) Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	t := gemmTaskPool.get()
	t.gemmArgs = gemmArgs{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta,
		a: a, b: b, c: c, lda: lda, ldb: ldb, ldc: ldc}
	// Split the larger output dimension into one part per worker. The split
	// only decides who computes which tile of C; every element is computed
	// the same way whatever the split, so results do not depend on it.
	parts := 1
	if flops := 2 * m * n * k; flops >= 1<<18 {
		parts = p.Workers()
	}
	t.splitN = n >= m
	if t.splitN {
		t.unit = roundUp(ceilDiv(n, parts), gemmNR)
		parts = ceilDiv(n, t.unit)
	} else {
		t.unit = roundUp(ceilDiv(m, parts), gemmMR)
		parts = ceilDiv(m, t.unit)
	}
	p.Run(t, parts)
	t.gemmArgs = gemmArgs{}
	gemmTaskPool.put(t)
}

func (t *gemmTask) Part(i, _ int) {
	g := t.gemmArgs
	i0, i1, j0, j1 := 0, g.m, 0, g.n
	if g.splitN {
		j0, j1 = i*g.unit, min((i+1)*g.unit, g.n)
	} else {
		i0, i1 = i*g.unit, min((i+1)*g.unit, g.m)
	}
	s := gemmScratchPool.get()
	gemmBlock(&g, i0, i1, j0, j1, s)
	gemmScratchPool.put(s)
}

// gemmBlock computes the tile C[i0:i1, j0:j1].
func gemmBlock(g *gemmArgs, i0, i1, j0, j1 int, s *gemmScratch) {
	if g.beta != 1 {
		for i := i0; i < i1; i++ {
			row := g.c[i*g.ldc+j0 : i*g.ldc+j1]
			if g.beta == 0 {
				clear(row)
			} else {
				for j := range row {
					row[j] *= g.beta
				}
			}
		}
	}
	if g.k == 0 || g.alpha == 0 {
		return
	}
	for jc := j0; jc < j1; jc += gemmNC {
		nc := min(gemmNC, j1-jc)
		for pc := 0; pc < g.k; pc += gemmKC {
			kc := min(gemmKC, g.k-pc)
			packB(s.pb[:], g.b, g.ldb, g.transB, pc, kc, jc, nc)
			for ic := i0; ic < i1; ic += gemmMC {
				mc := min(gemmMC, i1-ic)
				packA(s.pa[:], g.a, g.lda, g.transA, ic, mc, pc, kc, g.alpha)
				for jr := 0; jr < nc; jr += gemmNR {
					nr := min(gemmNR, nc-jr)
					bp := s.pb[jr*kc : jr*kc+kc*gemmNR]
					for ir := 0; ir < mc; ir += gemmMR {
						mr := min(gemmMR, mc-ir)
						ap := s.pa[ir*kc : ir*kc+kc*gemmMR]
						off := (ic+ir)*g.ldc + jc + jr
						if mr == gemmMR && nr == gemmNR {
							micro4x4(kc, ap, bp, g.c[off:], g.ldc)
						} else {
							microEdge(kc, ap, bp, g.c[off:], g.ldc, mr, nr)
						}
					}
				}
			}
		}
	}
}

// packA copies alpha·op(A)[ic:ic+mc, pc:pc+kc] into mr-tall panels: panel r
// holds, for each p, the mr values of column p (zero-padded past mc).
func packA(dst, a []float32, lda int, trans bool, ic, mc, pc, kc int, alpha float32) {
	for ir := 0; ir < mc; ir += gemmMR {
		mr := min(gemmMR, mc-ir)
		panel := dst[ir*kc : ir*kc+kc*gemmMR]
		for r := 0; r < gemmMR; r++ {
			if r >= mr {
				for p := 0; p < kc; p++ {
					panel[p*gemmMR+r] = 0
				}
				continue
			}
			i := ic + ir + r
			if !trans {
				src := a[i*lda+pc : i*lda+pc+kc]
				for p, v := range src {
					panel[p*gemmMR+r] = alpha * v
				}
			} else {
				for p := 0; p < kc; p++ {
					panel[p*gemmMR+r] = alpha * a[(pc+p)*lda+i]
				}
			}
		}
	}
}

// packB copies op(B)[pc:pc+kc, jc:jc+nc] into nr-wide panels: panel j holds,
// for each p, the nr values of row p (zero-padded past nc).
func packB(dst, b []float32, ldb int, trans bool, pc, kc, jc, nc int) {
	for jr := 0; jr < nc; jr += gemmNR {
		nr := min(gemmNR, nc-jr)
		panel := dst[jr*kc : jr*kc+kc*gemmNR]
		if !trans {
			for p := 0; p < kc; p++ {
				src := b[(pc+p)*ldb+jc+jr:]
				d := panel[p*gemmNR : p*gemmNR+gemmNR]
				if nr == gemmNR {
					d[0], d[1], d[2], d[3] = src[0], src[1], src[2], src[3]
				} else {
					for c := range d {
						if c < nr {
							d[c] = src[c]
						} else {
							d[c] = 0
						}
					}
				}
			}
			continue
		}
		for c := 0; c < gemmNR; c++ {
			if c >= nr {
				for p := 0; p < kc; p++ {
					panel[p*gemmNR+c] = 0
				}
				continue
			}
			src := b[(jc+jr+c)*ldb+pc : (jc+jr+c)*ldb+pc+kc]
			for p, v := range src {
				panel[p*gemmNR+c] = v
			}
		}
	}
}

// micro4x4 adds the product of a packed 4×kc A panel and a packed kc×4 B
// panel to the 4×4 tile of C at c (leading dimension ldc).
func micro4x4(kc int, a, b, c []float32, ldc int) {
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	var c20, c21, c22, c23, c30, c31, c32, c33 float32
	a = a[:4*kc]
	b = b[:4*kc]
	for len(a) >= 4 && len(b) >= 4 {
		a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
		b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
		a, b = a[4:], b[4:]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	r := c[0:4:4]
	r[0] += c00
	r[1] += c01
	r[2] += c02
	r[3] += c03
	r = c[ldc : ldc+4 : ldc+4]
	r[0] += c10
	r[1] += c11
	r[2] += c12
	r[3] += c13
	r = c[2*ldc : 2*ldc+4 : 2*ldc+4]
	r[0] += c20
	r[1] += c21
	r[2] += c22
	r[3] += c23
	r = c[3*ldc : 3*ldc+4 : 3*ldc+4]
	r[0] += c30
	r[1] += c31
	r[2] += c32
	r[3] += c33
}

// microEdge is micro4x4 for a partial tile of mr×nr (mr ≤ 4, nr ≤ 4). It
// accumulates in the same order as micro4x4, so a tile's values do not depend
// on whether it lies on an edge.
func microEdge(kc int, a, b, c []float32, ldc, mr, nr int) {
	var acc [gemmMR * gemmNR]float32
	for p := 0; p < kc; p++ {
		for r := 0; r < gemmMR; r++ {
			ar := a[p*gemmMR+r]
			for s := 0; s < gemmNR; s++ {
				acc[r*gemmNR+s] += ar * b[p*gemmNR+s]
			}
		}
	}
	for r := 0; r < mr; r++ {
		for s := 0; s < nr; s++ {
			c[r*ldc+s] += acc[r*gemmNR+s]
		}
	}
}

func checkGemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic("kernel: negative GEMM dimension")
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkMat("A", a, ar, ac, lda)
	checkMat("B", b, br, bc, ldb)
	checkMat("C", c, m, n, ldc)
}

func checkMat(name string, s []float32, rows, cols, ld int) {
	if ld < max(cols, 1) {
		panic("kernel: leading dimension of " + name + " smaller than its columns")
	}
	if rows > 0 && cols > 0 && len(s) < (rows-1)*ld+cols {
		panic("kernel: slice " + name + " too short for its shape")
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func roundUp(a, b int) int { return ceilDiv(a, b) * b }

// GemmRef is the reference for Gemm:
//
//	for i < m, j < n: C[i,j] = alpha·Σ_p op(A)[i,p]·op(B)[p,j] + beta·C[i,j]
//
// accumulated in float64, with C[i,j] overwritten when beta == 0.
func GemmRef(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				av := a[i*lda+p]
				if transA {
					av = a[p*lda+i]
				}
				bv := b[p*ldb+j]
				if transB {
					bv = b[j*ldb+p]
				}
				s += float64(av) * float64(bv)
			}
			v := float64(alpha) * s
			if beta != 0 {
				v += float64(beta) * float64(c[i*ldc+j])
			}
			c[i*ldc+j] = float32(v)
		}
	}
}
