package kernel

import "math"

// Aggregation kernels over n vectors of the same length: the in-process
// side of all-reduces, merges and the parameter server. Long vectors are
// split into a fixed number of chunks; sums over chunks are reduced in chunk
// order, so results do not depend on the number of threads.

// WeightedSum overwrites dst with Σ_i w[i]·vs[i], in one pass.
//
//	for j: dst[j] = Σ_i w[i]·vs[i][j]
func WeightedSum(dst []float32, w []float32, vs [][]float32) {
	if len(w) != len(vs) {
		panic("kernel: WeightedSum needs one weight per vector")
	}
	for _, v := range vs {
		if len(v) < len(dst) {
			panic("kernel: WeightedSum vector shorter than dst")
		}
	}
	t := aggTaskPool.get()
	t.set(aggSum, dst, vs)
	t.w = w
	aggRun(t, len(dst))
	t.done()
}

// Consensus computes, for n gradients vs[i] and their mean ḡ = Σ vs[i]/n,
// dots[i] = ⟨vs[i], ḡ⟩ and norms[i] = ‖vs[i]‖², accumulated in float64, in
// one pass that never stores ḡ.
func Consensus(dots, norms []float64, vs [][]float32) {
	n := len(vs)
	if len(dots) < n || len(norms) < n || n == 0 {
		panic("kernel: Consensus needs one output per vector")
	}
	dotsNorms(dots[:n], norms[:n], vs, nil, len(vs[0]))
}

// DotsNorms computes dots[i] = ⟨vs[i], ref⟩ and norms[i] = ‖vs[i]‖² for n
// vectors and a given reference, accumulated in float64 in one pass: the
// consensus coefficients' parts when ḡ comes from another process.
func DotsNorms(dots, norms []float64, vs [][]float32, ref []float32) {
	n := len(vs)
	if len(dots) < n || len(norms) < n {
		panic("kernel: DotsNorms needs one output per vector")
	}
	if n == 0 {
		return
	}
	for _, v := range vs {
		if len(v) != len(ref) {
			panic("kernel: DotsNorms vectors of different lengths")
		}
	}
	dotsNorms(dots[:n], norms[:n], vs, ref, len(ref))
}

// dotsNorms is Consensus (ref nil: the mean, made block by block) and
// DotsNorms: the partial sums of each chunk reduced in chunk order.
func dotsNorms(dots, norms []float64, vs [][]float32, ref []float32, size int) {
	n := len(vs)
	t := aggTaskPool.get()
	t.set(aggConsensus, nil, vs)
	t.dots, t.norms, t.ref = dots, norms, ref
	t.reserve(n)
	aggRun(t, size)
	clear(t.dots)
	clear(t.norms)
	for c := 0; c < vecChunks; c++ {
		for i := 0; i < n; i++ {
			t.dots[i] += t.pd[c*n+i]
			t.norms[i] += t.pn[c*n+i]
		}
	}
	t.done()
}

// GEMCommit applies Gradient Energy Matching's commit for one worker: with
// Δ = −lr·g computed at the worker's stale copy s of the centre θ,
//
//	m ← μ·m + Δ
//	π = (κ·|m| − |θ − s|) / (|Δ| + ε), clamped to [0, clip]; 0 if NaN
//	θ ← θ + π·Δ
//
// per parameter. A NaN never reaches θ: π is finite and Δ is the caller's.
func GEMCommit(theta, s, m, g []float32, lr, mu, kappa, eps, clip float32) {
	gemRun(aggGEM, theta, s, m, g, lr, mu, kappa, eps, clip)
}

// GEMDelta is GEMCommit's worker side, for a centre held by another
// process: it updates m and writes the update π·Δ into g (in place of the
// gradient) instead of adding it to θ, with π computed against theta, the
// centre as the worker last received it.
//
//	m ← μ·m + Δ;  g ← π·Δ
func GEMDelta(g, theta, s, m []float32, lr, mu, kappa, eps, clip float32) {
	gemRun(aggGEMDelta, theta, s, m, g, lr, mu, kappa, eps, clip)
}

func gemRun(op aggOp, theta, s, m, g []float32, lr, mu, kappa, eps, clip float32) {
	n := len(theta)
	if len(s) != n || len(m) != n || len(g) != n {
		panic("kernel: GEM vectors of different lengths")
	}
	t := aggTaskPool.get()
	t.set(op, theta, nil)
	t.s, t.m, t.g = s, m, g
	t.gem = [5]float32{lr, mu, kappa, eps, clip}
	aggRun(t, n)
	t.done()
}

// GEMFactor is π for one parameter (the rule of GEMCommit), exposed for
// sampling the factors' distribution.
func GEMFactor(theta, s, m, delta, kappa, eps, clip float32) float32 {
	num := kappa*abs32(m) - abs32(theta-s)
	pi := num / (abs32(delta) + eps)
	switch {
	case pi != pi || pi < 0:
		return 0
	case pi > clip:
		return clip
	}
	return pi
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

type aggOp uint8

const (
	aggSum aggOp = iota
	aggConsensus
	aggGEM
	aggGEMDelta
)

type aggTask struct {
	op       aggOp
	dst      []float32
	w        []float32
	vs       [][]float32
	ref      []float32 // DotsNorms: the given ḡ
	s, m, g  []float32 // GEM
	dots     []float64
	norms    []float64
	pd, pn   []float64 // per chunk, per vector partial sums
	mean     []float32 // per chunk scratch for ḡ
	gem      [5]float32
	lengthOf int
}

var aggTaskPool = newFreeList[aggTask](16)

// set prepares a recycled task, keeping its scratch buffers.
func (t *aggTask) set(op aggOp, dst []float32, vs [][]float32) {
	t.op, t.dst, t.vs = op, dst, vs
}

// done drops the caller's slices and recycles the task.
func (t *aggTask) done() {
	t.dst, t.w, t.vs, t.s, t.m, t.g, t.dots, t.norms, t.ref = nil, nil, nil, nil, nil, nil, nil, nil, nil
	aggTaskPool.put(t)
}

// aggBlock is the span of one inner block: ḡ of a block stays in L1, and so
// do the gradients' blocks for up to 16 devices (2048 measured the same).
const aggBlock = 512

func (t *aggTask) reserve(n int) {
	if cap(t.pd) < vecChunks*n {
		t.pd = make([]float64, vecChunks*n)
		t.pn = make([]float64, vecChunks*n)
	}
	t.pd, t.pn = t.pd[:vecChunks*n], t.pn[:vecChunks*n]
	if cap(t.mean) < vecChunks*aggBlock {
		t.mean = make([]float32, vecChunks*aggBlock)
	}
}

func aggRun(t *aggTask, n int) {
	t.lengthOf = n
	if n < vecParallelMin {
		for i := 0; i < vecChunks; i++ {
			t.Part(i, vecChunks)
		}
		return
	}
	Default().Run(t, vecChunks)
}

func (t *aggTask) Part(c, chunks int) {
	lo, hi := c*t.lengthOf/chunks, (c+1)*t.lengthOf/chunks
	switch t.op {
	case aggSum:
		dst := t.dst[lo:hi]
		clear(dst)
		for i, v := range t.vs {
			if t.w[i] != 0 {
				cur.axpy(t.w[i], v[lo:hi], dst)
			}
		}
	case aggConsensus:
		n := len(t.vs)
		pd, pn := t.pd[c*n:(c+1)*n], t.pn[c*n:(c+1)*n]
		clear(pd)
		clear(pn)
		mean := t.mean[c*aggBlock : (c+1)*aggBlock]
		inv := 1 / float32(n)
		for b := lo; b < hi; b += aggBlock {
			e := min(b+aggBlock, hi)
			var g []float32
			if t.ref != nil {
				g = t.ref[b:e]
			} else {
				g = mean[:e-b]
				clear(g)
				for _, v := range t.vs {
					cur.axpy(inv, v[b:e], g)
				}
			}
			for i, v := range t.vs {
				d, q := cur.dot2(v[b:e], g)
				pd[i] += float64(d)
				pn[i] += float64(q)
			}
		}
	case aggGEM, aggGEMDelta:
		theta, s, m, g := t.dst[lo:hi], t.s[lo:hi], t.m[lo:hi], t.g[lo:hi]
		lr, mu, kappa, eps, clip := t.gem[0], t.gem[1], t.gem[2], t.gem[3], t.gem[4]
		apply := t.op == aggGEM
		for j := range theta {
			d := -lr * g[j]
			m[j] = mu*m[j] + d
			u := GEMFactor(theta[j], s[j], m[j], d, kappa, eps, clip) * d
			if apply {
				theta[j] += u // the commit where θ lives
			} else {
				g[j] = u // the update, for θ's process to add
			}
		}
	}
}

// dot2Go returns ⟨x, y⟩ and ⟨x, x⟩ in one pass over a block (len(y) ≥
// len(x)), accumulated in float32 over the block (at most aggBlock terms);
// the caller sums blocks in float64.
func dot2Go(x, y []float32) (xy, xx float32) {
	y = y[:len(x)]
	var a0, a1, a2, a3, b0, b1, b2, b3 float32
	for len(x) >= 4 && len(y) >= 4 {
		a0 += x[0] * y[0]
		a1 += x[1] * y[1]
		a2 += x[2] * y[2]
		a3 += x[3] * y[3]
		b0 += x[0] * x[0]
		b1 += x[1] * x[1]
		b2 += x[2] * x[2]
		b3 += x[3] * x[3]
		x, y = x[4:], y[4:]
	}
	for i, v := range x {
		a0 += v * y[i]
		b0 += v * v
	}
	return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)
}
