package kernel

// smallM is the most rows of op(A) for which Gemm streams B once rather
// than packing it (B not transposed). Packing copies all of B for every
// call, and the micro-kernel computes mr rows of which m are used: a model
// server scoring one point at Amazon-670K's output layer (128 × 670,091)
// paid nearly as much as for sixteen. Streaming B row by row under the m
// rows of C reads it once and packs nothing: 18 ms for one row of a dense
// A against 69–78 packed, 63 for 16 against 93–99; at 17 the packed path
// costs 81–99 (BENCHMARKS.md §21, BenchmarkGemmFewRows). A transposed B
// is left to the packed path: its rows are C's columns, few in the
// backward pass that has them (the hidden width), too few to share among
// the workers.
const smallM = 16

// gemvBlock is the columns of C a part updates at a time: m rows of them
// stay in the first-level cache while B's rows stream past.
const gemvBlock = 2048

// gemvTask computes C = αA·B + βC for m ≤ smallM rows of A and B (neither
// transposed), its parts splitting C's columns. Each element is computed
// as the packed path computes it: a kc-deep block's products summed from
// zero in order of depth by the implementation's fused multiply-adds, then
// added to C (stored, for the first block when β is 0). A point's scores
// are therefore the same bits whether it is scored alone or among many,
// and whatever the split.
type gemvTask struct {
	gemmArgs
}

// gemvScratch holds a part's sums of one block of depth.
type gemvScratch struct {
	acc [smallM * gemvBlock]float32
}

var (
	gemvTaskPool    = newFreeList[gemvTask](64)
	gemvScratchPool = newFreeList[gemvScratch](16)
)

// gemv is Gemm's path for small m (see smallM); p runs its parts.
func (p *Pool) gemv(g gemmArgs) {
	t := gemvTaskPool.get()
	t.gemmArgs = g
	parts := 1
	if 2*g.m*g.n*g.k >= 1<<18 {
		parts = min(p.Workers(), ceilDiv(g.n, gemvBlock))
	}
	t.unit = roundUp(ceilDiv(g.n, parts), gemvBlock)
	p.Run(t, ceilDiv(g.n, t.unit))
	t.gemmArgs = gemmArgs{}
	gemvTaskPool.put(t)
}

func (t *gemvTask) Part(i, _ int) {
	g := &t.gemmArgs
	overwrite := g.beta == 0 && g.k > 0 && g.alpha != 0 // as gemmBlock
	s := gemvScratchPool.get()
	hi := min((i+1)*g.unit, g.n)
	for j0 := i * g.unit; j0 < hi; j0 += gemvBlock {
		j1 := min(j0+gemvBlock, hi)
		w := j1 - j0
		if g.beta != 1 && !overwrite {
			for r := range g.m {
				row := g.c[r*g.ldc+j0 : r*g.ldc+j1]
				if g.beta == 0 {
					clear(row)
					continue
				}
				for j := range row {
					row[j] *= g.beta
				}
			}
		}
		if g.k == 0 || g.alpha == 0 {
			continue
		}
		for pc := 0; pc < g.k; pc += g.impl.kc {
			acc := s.acc[:g.m*w]
			clear(acc)
			for q := pc; q < min(pc+g.impl.kc, g.k); q++ {
				b := g.b[q*g.ldb+j0 : q*g.ldb+j1]
				for r := range g.m {
					// A zero multiplier adds nothing to finite B and is
					// skipped, as the reference BLAS's SGEMM skips it:
					// half of a ReLU layer's outputs.
					if a := g.alpha * g.a[r*g.lda+q]; a != 0 {
						g.impl.axpy(a, b, acc[r*w:(r+1)*w])
					}
				}
			}
			for r := range g.m {
				c, sum := g.c[r*g.ldc+j0:r*g.ldc+j1], acc[r*w:(r+1)*w]
				if overwrite && pc == 0 {
					copy(c, sum)
					continue
				}
				for j, v := range sum {
					c[j] += v
				}
			}
		}
	}
	gemvScratchPool.put(s)
}
