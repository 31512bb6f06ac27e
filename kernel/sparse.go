package kernel

import (
	"github.com/hetsgd/hetsgd/sparse"
)

// SpMM computes dst = X·W on the default pool: X is a rows×D CSR matrix, W is
// D×n row-major (row j of W is the n weights of input feature j) and dst is
// X.Rows×n with leading dimension n. dst is overwritten.
//
//	for i < X.Rows: dst[i,:] = Σ_{(j,v) ∈ row i of X} v·W[j,:]
func SpMM(dst []float32, x *sparse.CSR, w []float32, n int) { Default().SpMM(dst, x, w, n) }

// SpMMT adds Xᵀ·G into dW on the default pool: G is X.Rows×n, dW is D×n.
// Only the rows of dW whose feature occurs in X change.
//
//	for i < X.Rows, (j,v) ∈ row i of X: dW[j,:] += v·G[i,:]
func SpMMT(dw []float32, x *sparse.CSR, g []float32, n int) { Default().SpMMT(dw, x, g, n) }

type spmmTask struct {
	dst, w []float32
	x      *sparse.CSR
	n      int
	trans  bool
}

var spmmTaskPool = newFreeList[spmmTask](64)

// Below this many multiply-adds a sparse product runs on the caller alone.
const spmmParallelMin = 1 << 15

// SpMM is the package-level SpMM run on p.
func (p *Pool) SpMM(dst []float32, x *sparse.CSR, w []float32, n int) {
	checkSparse(x, w, n)
	if len(dst) < x.Rows*n {
		panic("kernel: SpMM dst too short")
	}
	p.runSparse(dst, x, w, n, false, x.Rows)
}

// SpMMT is the package-level SpMMT run on p.
func (p *Pool) SpMMT(dw []float32, x *sparse.CSR, g []float32, n int) {
	checkSparse(x, dw, n)
	if len(g) < x.Rows*n {
		panic("kernel: SpMMT G too short")
	}
	// Parts own disjoint column ranges of dW, so concurrent scatters never
	// touch the same element and each element sums its terms in row order.
	p.runSparse(dw, x, g, n, true, n/16)
}

func (p *Pool) runSparse(dst []float32, x *sparse.CSR, w []float32, n int, trans bool, maxParts int) {
	t := spmmTaskPool.get()
	t.dst, t.x, t.w, t.n, t.trans = dst, x, w, n, trans
	parts := 1
	if x.NNZ()*n >= spmmParallelMin {
		parts = max(1, min(p.Workers(), maxParts))
	}
	p.Run(t, parts)
	*t = spmmTask{}
	spmmTaskPool.put(t)
}

func (t *spmmTask) Part(i, parts int) {
	x := t.x
	if !t.trans {
		lo, hi := i*x.Rows/parts, (i+1)*x.Rows/parts
		for r := lo; r < hi; r++ {
			out := t.dst[r*t.n : r*t.n+t.n]
			clear(out)
			idx, vals := x.Row(r)
			for q, j := range idx {
				v := float32(1)
				if vals != nil {
					v = vals[q]
				}
				axpyUnitary(v, t.w[int(j)*t.n:int(j)*t.n+t.n], out)
			}
		}
		return
	}
	// Column range [c0, c1) of every row, 16-aligned to keep cache lines whole.
	c0 := (i * t.n / parts) &^ 15
	c1 := ((i + 1) * t.n / parts) &^ 15
	if i == parts-1 {
		c1 = t.n
	}
	g := t.w
	for r := 0; r < x.Rows; r++ {
		src := g[r*t.n+c0 : r*t.n+c1]
		idx, vals := x.Row(r)
		for q, j := range idx {
			v := float32(1)
			if vals != nil {
				v = vals[q]
			}
			axpyUnitary(v, src, t.dst[int(j)*t.n+c0:int(j)*t.n+c1])
		}
	}
}

func checkSparse(x *sparse.CSR, w []float32, n int) {
	if n < 0 {
		panic("kernel: negative width")
	}
	if len(w) < x.Cols*n {
		panic("kernel: dense operand shorter than X.Cols×n")
	}
}

// SpMMRef is the reference for SpMM, written as its defining loop.
func SpMMRef(dst []float32, x *sparse.CSR, w []float32, n int) {
	clear(dst[:x.Rows*n])
	for i := 0; i < x.Rows; i++ {
		idx, vals := x.Row(i)
		for q, j := range idx {
			v := float32(1)
			if vals != nil {
				v = vals[q]
			}
			for c := 0; c < n; c++ {
				dst[i*n+c] += v * w[int(j)*n+c]
			}
		}
	}
}

// SpMMTRef is the reference for SpMMT, written as its defining loop.
func SpMMTRef(dw []float32, x *sparse.CSR, g []float32, n int) {
	for i := 0; i < x.Rows; i++ {
		idx, vals := x.Row(i)
		for q, j := range idx {
			v := float32(1)
			if vals != nil {
				v = vals[q]
			}
			for c := 0; c < n; c++ {
				dw[int(j)*n+c] += v * g[i*n+c]
			}
		}
	}
}
