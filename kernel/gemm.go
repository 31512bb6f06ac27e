package kernel

// Gemm computes C = alpha·op(A)·op(B) + beta·C on the default pool, where
// op(A) is m×k (A itself is k×m when transA), op(B) is k×n, and C is m×n, all
// row-major with leading dimensions lda, ldb, ldc. With beta == 0, C is
// overwritten and its old contents (NaN included) are ignored, as in BLAS.
func Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Default().Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

type gemmArgs struct {
	impl           *impl
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

// gemmScratch holds one part's packing buffers and an edge tile, sized for
// the implementation it was made for.
type gemmScratch struct {
	impl   *impl
	pa, pb []float32
	tile   []float32
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
	g := cur
	t := gemmTaskPool.get()
	t.gemmArgs = gemmArgs{impl: g, transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta,
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
		t.unit = roundUp(ceilDiv(n, parts), g.nr)
		parts = ceilDiv(n, t.unit)
	} else {
		t.unit = roundUp(ceilDiv(m, parts), g.mr)
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
	if s.impl != g.impl {
		im := g.impl
		*s = gemmScratch{impl: im, pa: make([]float32, im.mc*im.kc), pb: make([]float32, im.kc*im.nc), tile: make([]float32, im.mr*im.nr)}
	}
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
	im := g.impl
	mr, nr := im.mr, im.nr
	for jc := j0; jc < j1; jc += im.nc {
		nc := min(im.nc, j1-jc)
		for pc := 0; pc < g.k; pc += im.kc {
			kc := min(im.kc, g.k-pc)
			packB(s.pb, nr, g.b, g.ldb, g.transB, pc, kc, jc, nc)
			for ic := i0; ic < i1; ic += im.mc {
				mc := min(im.mc, i1-ic)
				packA(s.pa, mr, g.a, g.lda, g.transA, ic, mc, pc, kc, g.alpha)
				for jr := 0; jr < nc; jr += nr {
					nrr := min(nr, nc-jr)
					bp := s.pb[jr*kc : jr*kc+kc*nr]
					for ir := 0; ir < mc; ir += mr {
						mrr := min(mr, mc-ir)
						ap := s.pa[ir*kc : ir*kc+kc*mr]
						off := (ic+ir)*g.ldc + jc + jr
						if mrr == mr && nrr == nr {
							im.micro(kc, ap, bp, g.c[off:], g.ldc)
							continue
						}
						// Edge tile: compute the whole tile into scratch
						// (same arithmetic as a full tile) and add the part
						// that lies inside C.
						clear(s.tile)
						im.micro(kc, ap, bp, s.tile, nr)
						for r := 0; r < mrr; r++ {
							dst := g.c[off+r*g.ldc : off+r*g.ldc+nrr]
							for q, v := range s.tile[r*nr : r*nr+nrr] {
								dst[q] += v
							}
						}
					}
				}
			}
		}
	}
}

// packA copies alpha·op(A)[ic:ic+mc, pc:pc+kc] into mr-tall panels: panel r
// holds, for each p, the mr values of column p (zero-padded past mc).
func packA(dst []float32, mr int, a []float32, lda int, trans bool, ic, mc, pc, kc int, alpha float32) {
	for ir := 0; ir < mc; ir += mr {
		rows := min(mr, mc-ir)
		panel := dst[ir*kc : ir*kc+kc*mr]
		if trans {
			// op(A)[i,p] = a[p,i]: each p reads a contiguous run of rows.
			for p := 0; p < kc; p++ {
				src := a[(pc+p)*lda+ic+ir : (pc+p)*lda+ic+ir+rows]
				d := panel[p*mr : p*mr+mr]
				for r, v := range src {
					d[r] = alpha * v
				}
				clear(d[rows:])
			}
			continue
		}
		for r := 0; r < mr; r++ {
			if r >= rows {
				for p := 0; p < kc; p++ {
					panel[p*mr+r] = 0
				}
				continue
			}
			i := ic + ir + r
			src := a[i*lda+pc : i*lda+pc+kc]
			for p, v := range src {
				panel[p*mr+r] = alpha * v
			}
		}
	}
}

// packB copies op(B)[pc:pc+kc, jc:jc+nc] into nr-wide panels: panel j holds,
// for each p, the nr values of row p (zero-padded past nc).
func packB(dst []float32, nr int, b []float32, ldb int, trans bool, pc, kc, jc, nc int) {
	for jr := 0; jr < nc; jr += nr {
		cols := min(nr, nc-jr)
		panel := dst[jr*kc : jr*kc+kc*nr]
		if !trans {
			for p := 0; p < kc; p++ {
				row := (pc+p)*ldb + jc + jr
				d := panel[p*nr : p*nr+nr]
				copy(d, b[row:row+cols])
				clear(d[cols:])
			}
			continue
		}
		for c := 0; c < nr; c++ {
			if c >= cols {
				for p := 0; p < kc; p++ {
					panel[p*nr+c] = 0
				}
				continue
			}
			src := b[(jc+jr+c)*ldb+pc : (jc+jr+c)*ldb+pc+kc]
			for p, v := range src {
				panel[p*nr+c] = v
			}
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
