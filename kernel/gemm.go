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
	// packedA, when set, holds op(A) already packed by packAll: gemmBlock
	// then skips packing A (XentLayer reuses one packed A for every block).
	packedA []float32
	// packedB, when set, holds op(B) already packed for the whole k×n: for
	// each kc-deep block pc in turn, every nr-wide panel, panel jr of block
	// pc at packedB[pc·roundUp(n, nr) + jr·kc].
	packedB []float32
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
	if m <= smallM && !transA && !transB && !g.bf16 && !g.blas {
		p.gemv(gemmArgs{impl: g, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta, a: a, b: b, c: c, lda: lda, ldb: ldb, ldc: ldc})
		return
	}
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
	s := getGemmScratch(g.impl)
	g.impl.tile(&g, i0, i1, j0, j1, s)
	gemmScratchPool.put(s)
}

// getGemmScratch takes packing buffers for im from the pool, sized for im's
// blocking the first time they serve it; return them with
// gemmScratchPool.put.
//
// A miss (the first call, or another implementation) makes the scratch of
// every worker of the default pool at once: how many parts of the first
// call ran at the same time is the scheduler's choice, and on a busy
// machine one goroutine may run them all, which left the next call that
// ran two at once to allocate.
func getGemmScratch(im *impl) *gemmScratch {
	s := gemmScratchPool.get()
	if s.impl != im {
		*s = newGemmScratch(im)
		for range min(Default().Workers(), cap(gemmScratchPool.ch)) - 1 - len(gemmScratchPool.ch) {
			x := newGemmScratch(im)
			gemmScratchPool.put(&x)
		}
	}
	return s
}

func newGemmScratch(im *impl) gemmScratch {
	return gemmScratch{impl: im, pa: make([]float32, im.mc*im.kc), pb: make([]float32, im.kc*im.nc), tile: make([]float32, im.mr*im.nr)}
}

// gemmBlock computes the tile C[i0:i1, j0:j1]. With beta == 0 the first
// k-block's micro-kernels write C without reading it; later ones add to it.
func gemmBlock(g *gemmArgs, i0, i1, j0, j1 int, s *gemmScratch) {
	overwrite := g.beta == 0 && g.k > 0 && g.alpha != 0
	if g.beta != 1 && !overwrite {
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
			store := overwrite && pc == 0
			micro := im.micro
			if store {
				micro = im.microStore
			}
			pb := s.pb
			if g.packedB != nil {
				pb = g.packedB[pc*roundUp(g.n, nr)+jc*kc:]
			} else {
				im.packPanelsB(pb, g.b, g.ldb, g.transB, pc, kc, jc, nc)
			}
			for ic := i0; ic < i1; ic += im.mc {
				mc := min(im.mc, i1-ic)
				pa := s.pa
				if g.packedA != nil {
					pa = g.packedA[pc*roundUp(g.m, mr)+ic*kc:]
				} else {
					im.packPanelsA(pa, g.a, g.lda, g.transA, ic, mc, pc, kc, g.alpha)
				}
				for jr := 0; jr < nc; jr += nr {
					nrr := min(nr, nc-jr)
					bp := pb[jr*kc : jr*kc+kc*nr]
					for ir := 0; ir < mc; ir += mr {
						mrr := min(mr, mc-ir)
						ap := pa[ir*kc : ir*kc+kc*mr]
						off := (ic+ir)*g.ldc + jc + jr
						if mrr == mr && nrr == nr {
							micro(kc, ap, bp, g.c[off:], g.ldc)
							continue
						}
						// Edge tile: compute the whole tile into scratch
						// (same arithmetic as a full tile) and write or add
						// the part that lies inside C.
						im.microStore(kc, ap, bp, s.tile, nr)
						for r := 0; r < mrr; r++ {
							dst := g.c[off+r*g.ldc : off+r*g.ldc+nrr]
							src := s.tile[r*nr : r*nr+nrr]
							if store {
								copy(dst, src)
								continue
							}
							for q, v := range src {
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
		if rows == 12 && mr == 12 {
			packA12(panel, a[(ic+ir)*lda+pc:], lda, kc, alpha)
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

// packA12 packs a full 12-row panel of a row-major A: writing the panel in
// order while reading the 12 rows side by side, which is several times
// faster than one strided write per element.
func packA12(panel, a []float32, lda, kc int, alpha float32) {
	r0, r1, r2, r3 := a[:kc], a[lda:lda+kc], a[2*lda:2*lda+kc], a[3*lda:3*lda+kc]
	r4, r5, r6, r7 := a[4*lda:4*lda+kc], a[5*lda:5*lda+kc], a[6*lda:6*lda+kc], a[7*lda:7*lda+kc]
	r8, r9, r10, r11 := a[8*lda:8*lda+kc], a[9*lda:9*lda+kc], a[10*lda:10*lda+kc], a[11*lda:11*lda+kc]
	panel = panel[:12*kc]
	for p := range kc {
		d := panel[12*p : 12*p+12 : 12*p+12]
		d[0], d[1], d[2], d[3] = alpha*r0[p], alpha*r1[p], alpha*r2[p], alpha*r3[p]
		d[4], d[5], d[6], d[7] = alpha*r4[p], alpha*r5[p], alpha*r6[p], alpha*r7[p]
		d[8], d[9], d[10], d[11] = alpha*r8[p], alpha*r9[p], alpha*r10[p], alpha*r11[p]
	}
}

// packAll packs all of alpha·op(A) (m×k) for gemmArgs.packedA: for each
// kc-deep block of k in turn, the mr-tall panels of every row, so that rows
// [ic, ic+mc) of block pc start at dst[pc·roundUp(m, mr) + ic·kc]. dst needs
// roundUp(m, mr)·k floats.
func packAll(dst []float32, im *impl, a []float32, lda int, trans bool, m, k int, alpha float32) {
	for pc := 0; pc < k; pc += im.kc {
		im.packPanelsA(dst[pc*roundUp(m, im.mr):], a, lda, trans, 0, m, pc, min(im.kc, k-pc), alpha)
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
		if cols == nr && nr%16 == 0 {
			packBT16(panel, b[(jc+jr)*ldb+pc:], ldb, kc, nr)
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
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
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

// packBT16 packs a full panel of nr (a multiple of 16) columns of a
// transposed B, whose columns are the rows of b: 16 rows at a time read side
// by side, the panel written in order.
func packBT16(panel, b []float32, ldb, kc, nr int) {
	panel = panel[:nr*kc]
	for c0 := 0; c0 < nr; c0 += 16 {
		var rows [16][]float32
		for c := range rows {
			rows[c] = b[(c0+c)*ldb : (c0+c)*ldb+kc]
		}
		for p := range kc {
			d := panel[nr*p+c0 : nr*p+c0+16 : nr*p+c0+16]
			d[0], d[1], d[2], d[3] = rows[0][p], rows[1][p], rows[2][p], rows[3][p]
			d[4], d[5], d[6], d[7] = rows[4][p], rows[5][p], rows[6][p], rows[7][p]
			d[8], d[9], d[10], d[11] = rows[8][p], rows[9][p], rows[10][p], rows[11][p]
			d[12], d[13], d[14], d[15] = rows[12][p], rows[13][p], rows[14][p], rows[15][p]
		}
	}
}
