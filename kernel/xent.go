package kernel

import (
	"math"

	"github.com/hetsgd/hetsgd/sparse"
)

// XentLayer is the output layer of the model in one blocked pass over its
// labels: for a batch of n rows with inputs h (n×k, leading dimension k),
// weights w = [W; bᵀ] ((k+1)×L, row-major: W then the bias row, as the flat
// parameter vector holds them) and labels y, it computes
//
//	Z = h·W + 1·bᵀ,  loss = Σ_i loss_i  (loss_i as in SoftmaxXent)
//	dZ = scale·(softmax(Z) − T)
//	g = [hᵀ·dZ; 1ᵀ·dZ]   ((k+1)×L, overwritten)
//	dh = dZ·Wᵀ           (n×k, overwritten)
//
// and returns the loss. It is the same arithmetic as a GEMM, SoftmaxXent and
// two more GEMMs, but it walks the labels in blocks small enough to stay in
// cache: the first pass computes a block of Z, its row maxima and
// exponentials, and stores the exponentials in e; the second pass turns a
// block of them into dZ and feeds both products while it is still in cache.
// Z, dZ and the bias-broadcast never make a round trip through memory of
// their own, which is what bounds the unfused step at the Amazon-670k shape.
//
// With an update u, the layer trains instead of only differentiating: each
// block of W and b is updated in place by u, as the piece at offset off of
// the vector u's state covers, right after its last use, and g is not
// written. The result is the same as computing g and then applying u, but
// the output layer's gradient never reaches memory.
//
// Blocks are grouped into a fixed number of chunks whose partial sums (row
// statistics, dh) are reduced in chunk order, so the results do not depend
// on the number of threads. s must come from NewXentScratch with at least
// n rows, k inputs and L labels.
func XentLayer(h []float32, n, k int, w []float32, L int, y *sparse.CSR, scale float32, g, dh, e []float32, s *XentScratch, u *Update, off int) float64 {
	switch {
	case y.Rows != n || y.Cols != L:
		panic("kernel: XentLayer labels do not match the batch")
	case len(h) < n*k || len(w) < (k+1)*L || u == nil && len(g) < (k+1)*L || len(dh) < n*k || len(e) < n*L:
		panic("kernel: XentLayer slice too short")
	case n > s.rows || k != s.k || L != s.labels:
		panic("kernel: XentLayer scratch made for another shape")
	}
	t := &s.task
	t.h, t.n, t.k, t.w, t.L, t.y, t.scale, t.g, t.dh, t.e = h, n, k, w, L, y, scale, g, dh, e
	t.impl, t.upd, t.off = cur, u, off
	chunks := s.chunks
	if n == 0 {
		if u == nil {
			clear(g[:(k+1)*L])
		} else {
			// A zero gradient still decays and moves momentum.
			if s.zero == nil {
				s.zero = make([]float32, min(L, 1<<16))
			}
			zero := s.zero
			for i := 0; i < (k+1)*L; i += len(zero) {
				j := min(i+len(zero), (k+1)*L)
				ApplyUpdate(w[i:j], zero[:j-i], u, off+i)
			}
		}
		return 0
	}
	if u != nil {
		u.prepare()
	}
	parallel := n*L >= vecParallelMin
	run := func(pass int) {
		t.pass = pass
		if parallel {
			Default().Run(t, chunks)
			return
		}
		for c := 0; c < chunks; c++ {
			t.Part(c, chunks)
		}
	}
	// Both products with h as their A operand reuse one packing of it.
	if !t.impl.blas {
		packAll(s.packH, t.impl, h, k, false, n, k, 1)
		packAll(s.packHT, t.impl, h, k, true, k, n, 1)
	}
	run(1)
	// Combine the chunks' row statistics in chunk order: the row maximum M,
	// the normalizer S = Σ exp(z − M) and the loss.
	var loss float64
	for r := 0; r < n; r++ {
		labels, _ := y.Row(r)
		m := math.Inf(-1)
		for c := 0; c < chunks; c++ {
			m = math.Max(m, s.cmax[c*s.rows+r])
		}
		var sum, target float64
		for c := 0; c < chunks; c++ {
			sum += s.csum[c*s.rows+r] * math.Exp(s.cmax[c*s.rows+r]-m)
			target += s.ctarget[c*s.rows+r]
		}
		s.rowMax[r], s.rowSum[r] = m, sum
		if len(labels) > 0 {
			loss += m + math.Log(sum) - target/float64(len(labels))
		}
	}
	run(2)
	// dh = Σ over chunks of their partial products, in chunk order.
	copy(dh[:n*k], s.dhPart[:n*k])
	for c := 1; c < chunks; c++ {
		Axpy(1, s.dhPart[c*s.rows*k:c*s.rows*k+n*k], dh[:n*k])
	}
	t.clearRefs()
	return loss
}

// xentChunks is the number of chunks the blocks are grouped in: enough that
// the parts balance over the threads, few enough that their partial dh stay
// small. It does not depend on the number of threads.
const xentChunks = 64

// xentBuffers are the cache-sized buffers of one running part: a block of Z
// or of dZ (packed for hᵀ·dZ), that block packed again for dZ·Wᵀ, and, with a
// fused update, its gradient.
type xentBuffers struct {
	block, packedDZ, gradW []float32
}

// buffers returns a part's buffers, allocated the first time only.
func (s *XentScratch) buffers() *xentBuffers {
	b := s.bufs.get()
	if b.block == nil {
		width := min(s.labels, s.width)
		b.block = make([]float32, s.rows*roundUp(width, 32))
		b.packedDZ = make([]float32, roundUp(s.rows, maxMR)*width)
		b.gradW = make([]float32, (s.k+1)*width)
	}
	return b
}

// maxMR is a multiple of every implementation's mr, to size packed panels.
const maxMR = 12

// xentBlock is the widest block of labels: a block of Z for a batch of 256
// rows (1 MiB) stays in the L2 cache while both products use it.
const xentBlock = 1024

// xentMinBlocks and xentMinWidth set the block width of smaller output
// layers: a layer of fewer than xentMinBlocks·xentBlock labels, large enough
// to run on several threads, is cut into about xentMinBlocks blocks of at
// least xentMinWidth labels so that its blocks can share the threads
// (Delicious' 983 labels make 8 blocks of 128; one block of them ran on one
// thread, 20% slower). A layer too small to be worth the threads (Bibtex' 159
// labels) stays one block. The width depends on the shape alone, never on
// the number of threads.
const (
	xentMinBlocks = 8
	xentMinWidth  = 64
)

// xentWidth returns the block width for batches of up to rows rows and L
// labels.
func xentWidth(rows, L int) int {
	if rows*L < vecParallelMin {
		return min(xentBlock, max(1, L))
	}
	return min(xentBlock, max(xentMinWidth, roundUp(ceilDiv(L, xentMinBlocks), xentMinWidth)))
}

// XentScratchBytes estimates the memory of NewXentScratch(rows, k, L) once
// its per-part buffers exist (one set per worker thread, threads of them),
// so that callers can check it before allocating.
func XentScratchBytes(rows, k, L, threads int) int64 {
	width := xentWidth(rows, L)
	blocks := max(1, ceilDiv(L, width))
	chunks := min(xentChunks, blocks)
	r, K, W, B, C := int64(rows), int64(k), int64(min(L, width)), int64(blocks), int64(chunks)
	fixed := 8*r*B + 8*3*C*r + 8*2*r + 4*C*r*K + 4*int64(roundUp(rows, maxMR))*K + 4*int64(roundUp(k, maxMR))*r
	perThread := 4*r*int64(roundUp(int(W), 32)) + 4*int64(roundUp(rows, maxMR))*W + 4*(K+1)*W
	return fixed + int64(max(1, threads))*perThread
}

// XentScratch holds XentLayer's buffers for batches of up to rows rows.
type XentScratch struct {
	rows, k, labels int
	width           int // labels per block (the last block may be narrower)
	blocks, chunks  int
	blockMax        []float64             // rows × blocks: the maximum of each row's block
	cmax, csum      []float64             // chunks × rows: running max and Σ exp
	ctarget         []float64             // chunks × rows: Σ of the label logits
	rowMax, rowSum  []float64             // rows
	dhPart          []float32             // chunks × rows × k
	bufs            freeList[xentBuffers] // one per part running at once
	zero            []float32             // zeros, for an update with no rows
	packH, packHT   []float32             // h packed as the A of h·W, and of hᵀ·dZ
	task            xentTask
}

// NewXentScratch returns XentLayer's buffers for batches of up to rows rows,
// k inputs and L labels.
func NewXentScratch(rows, k, L int) *XentScratch {
	width := xentWidth(rows, L)
	blocks := max(1, ceilDiv(L, width))
	chunks := min(xentChunks, blocks)
	s := &XentScratch{rows: rows, k: k, labels: L, width: width, blocks: blocks, chunks: chunks,
		blockMax: make([]float64, rows*blocks),
		cmax:     make([]float64, chunks*rows), csum: make([]float64, chunks*rows), ctarget: make([]float64, chunks*rows),
		rowMax: make([]float64, rows), rowSum: make([]float64, rows),
		dhPart: make([]float32, chunks*rows*k),
		bufs:   newFreeList[xentBuffers](64),
		packH:  make([]float32, roundUp(rows, maxMR)*k), packHT: make([]float32, roundUp(k, maxMR)*rows)}
	s.task.s = s
	return s
}

type xentTask struct {
	s     *XentScratch
	impl  *impl
	pass  int
	h, w  []float32
	g, dh []float32
	e     []float32
	n, k  int
	L     int
	y     *sparse.CSR
	scale float32
	upd   *Update // fused update, or nil
	off   int     // offset of w in the vector upd's state covers
}

func (t *xentTask) clearRefs() {
	t.h, t.w, t.g, t.dh, t.e, t.y, t.upd = nil, nil, nil, nil, nil, nil, nil
}

// block returns the label range of block b and its slice of e, which holds
// the block's n×width values contiguously (leading dimension width).
func (t *xentTask) block(b int) (j0, width int, eb []float32) {
	j0 = b * t.s.width
	width = min(t.s.width, t.L-j0)
	return j0, width, t.e[j0*t.n : j0*t.n+t.n*width]
}

func (t *xentTask) Part(c, chunks int) {
	s := t.s
	b0, b1 := c*s.blocks/chunks, (c+1)*s.blocks/chunks
	sc := getGemmScratch(t.impl)
	bufs := s.buffers()
	if t.pass == 1 {
		t.forward(c, b0, b1, sc, bufs)
	} else {
		t.backward(c, b0, b1, sc, bufs)
	}
	s.bufs.put(bufs)
	gemmScratchPool.put(sc)
}

// forward computes blocks [b0, b1) of Z in a cache-sized buffer,
// replaces them by exp(z − block max), gathers the chunk's row statistics,
// and streams the exponentials to e.
func (t *xentTask) forward(c, b0, b1 int, sc *gemmScratch, bufs *xentBuffers) {
	s, n, k, L := t.s, t.n, t.k, t.L
	cmax, csum, ctarget := s.cmax[c*s.rows:c*s.rows+n], s.csum[c*s.rows:c*s.rows+n], s.ctarget[c*s.rows:c*s.rows+n]
	for r := range cmax {
		cmax[r], csum[r], ctarget[r] = math.Inf(-1), 0, 0
	}
	bias := t.w[k*L:]
	for b := b0; b < b1; b++ {
		j0, width, eb := t.block(b)
		zb := bufs.block[:n*width]
		ga := gemmArgs{impl: t.impl, m: n, n: width, k: k, alpha: 1, beta: 0,
			a: t.h, lda: k, b: t.w[j0:], ldb: L, c: zb, ldc: width, packedA: s.packH}
		t.impl.tile(&ga, 0, n, 0, width, sc)
		for r := 0; r < n; r++ {
			row := zb[r*width : (r+1)*width]
			m := t.impl.addMax(row, bias[j0:j0+width])
			labels, _ := t.y.Row(r)
			for _, l := range labels {
				if int(l) >= j0 && int(l) < j0+width {
					ctarget[r] += float64(row[int(l)-j0])
				}
			}
			sum := t.impl.expShift(row, m)
			s.blockMax[r*s.blocks+b] = float64(m)
			// Merge (m, sum) into the chunk's running (max, Σ exp).
			switch cm := cmax[r]; {
			case float64(m) > cm:
				csum[r] = csum[r]*math.Exp(cm-float64(m)) + sum
				cmax[r] = float64(m)
			default:
				csum[r] += sum * math.Exp(float64(m)-cm)
			}
		}
		t.impl.copyNT(eb, zb)
	}
}

// backward turns blocks [b0, b1) into dZ in cache-sized buffers (e itself is
// only read) and accumulates the chunk's products. dZ is written straight
// into the packed form the product hᵀ·dZ reads, and repacked once for
// dZ·Wᵀ; batches larger than one k-block of the GEMM take the plain path.
func (t *xentTask) backward(c, b0, b1 int, sc *gemmScratch, bufs *xentBuffers) {
	s, n, k, L := t.s, t.n, t.k, t.L
	im := t.impl
	dh := s.dhPart[c*s.rows*k : c*s.rows*k+n*k]
	buf, packedDZ, gradW := bufs.block, bufs.packedDZ, bufs.gradW
	packed := n <= im.kc && !im.blas && !im.bf16
	for b := b0; b < b1; b++ {
		j0, width, eb := t.block(b)
		// The block's gradient: in g, or with an update in gradW (k rows of
		// width, then the bias row).
		gw, ldg := gradW, width
		if t.upd == nil {
			gw, ldg = t.g[j0:], L
		}
		gb := gw[k*ldg : k*ldg+width]
		clear(gb)
		// dZ: packed, row r of panel j at buf[j·n·nr + r·nr]; else row-major.
		nr := im.nr
		db := buf[:n*width]
		if packed {
			db = buf[:n*roundUp(width, nr)]
		}
		for r := 0; r < n; r++ {
			labels, _ := t.y.Row(r)
			if len(labels) == 0 {
				if packed {
					for j := 0; j*nr < width; j++ {
						clear(db[j*n*nr+r*nr : j*n*nr+r*nr+nr])
					}
				} else {
					clear(db[r*width : (r+1)*width])
				}
				continue
			}
			// p = exp(z − block max)·exp(block max − M)/S, summed into the
			// bias gradient on the way.
			f := float32(float64(t.scale) * math.Exp(s.blockMax[r*s.blocks+b]-s.rowMax[r]) / s.rowSum[r])
			src := eb[r*width : (r+1)*width]
			if packed {
				im.scaleAccPanels(db[r*nr:], src, gb, f, n*nr)
			} else {
				im.scaleAcc(db[r*width:(r+1)*width], src, gb, f)
			}
			tk := t.scale / float32(len(labels))
			for _, l := range labels {
				if j := int(l) - j0; j >= 0 && j < width {
					if packed {
						db[(j/nr)*n*nr+r*nr+j%nr] -= tk
					} else {
						db[r*width+j] -= tk
					}
					gb[j] -= tk
				}
			}
		}
		// dh += dZ·W[:, block]ᵀ, with W before its update.
		beta := float32(1)
		if b == b0 {
			beta = 0
		}
		ga := gemmArgs{impl: im, transB: true, m: n, n: k, k: width, alpha: 1, beta: beta,
			a: db, lda: width, b: t.w[j0:], ldb: L, c: dh, ldc: k}
		if packed {
			packPanelsAsA(packedDZ, im, db, n, width)
			ga.packedA = packedDZ
		}
		im.tile(&ga, 0, n, 0, k, sc)
		// gW[:, block] = hᵀ·dZ
		ga = gemmArgs{impl: im, transA: true, m: k, n: width, k: n, alpha: 1, beta: 0,
			a: t.h, lda: k, b: db, ldb: width, c: gw, ldc: ldg, packedA: s.packHT}
		if packed {
			ga.packedB = db
		}
		im.tile(&ga, 0, k, 0, width, sc)
		if t.upd != nil {
			for r := 0; r <= k; r++ {
				o := r*L + j0
				t.upd.apply(t.w[o:o+width], gw[r*width:(r+1)*width], t.off+o)
			}
		}
	}
}

// packPanelsAsA repacks an n×width matrix held as nr-wide panels (row r of
// panel j at src[j·n·nr + r·nr]; n ≤ kc) into gemmArgs.packedA form.
func packPanelsAsA(dst []float32, im *impl, src []float32, n, width int) {
	mr, nr, mR := im.mr, im.nr, roundUp(n, im.mr)
	for pc := 0; pc < width; pc += im.kc {
		kc := min(im.kc, width-pc)
		for ir := 0; ir < n; ir += mr {
			panel := dst[pc*mR+ir*kc : pc*mR+ir*kc+kc*mr]
			rows := min(mr, n-ir)
			for p0 := 0; p0 < kc; p0 += nr { // pc and p0 are multiples of nr
				cnt := min(nr, kc-p0)
				j := (pc + p0) / nr
				from := src[j*n*nr+ir*nr:]
				if rows == 12 && mr == 12 {
					packA12(panel[12*p0:], from, nr, cnt, 1)
					continue
				}
				for p := 0; p < cnt; p++ {
					d := panel[(p0+p)*mr : (p0+p)*mr+mr]
					for r := 0; r < rows; r++ {
						d[r] = from[r*nr+p]
					}
					clear(d[rows:])
				}
			}
		}
	}
}
