package kernel

// Row-broadcast and column-reduction helpers of the dense layers. They are
// memory-bound; long inputs are split by rows (or by column ranges for
// SumRows) over the default pool, each output element computed by one part.

type ewOp uint8

const (
	ewBroadcast ewOp = iota // a[i,:] = v
	ewSumRows               // dst[j] = Σ_i a[i,j]
	ewReLU                  // a = max(a, 0)
	ewReLUGrad              // g = g where act > 0, else 0
)

type ewTask struct {
	op         ewOp
	a, v       []float32
	rows, cols int
}

var ewTaskPool = newFreeList[ewTask](64)

func ewRun(op ewOp, a, v []float32, rows, cols int) {
	t := ewTaskPool.get()
	*t = ewTask{op: op, a: a, v: v, rows: rows, cols: cols}
	parts := 1
	if rows*cols >= vecParallelMin {
		parts = Default().Workers()
		if op == ewSumRows {
			parts = min(parts, max(1, cols/16))
		} else {
			parts = min(parts, rows)
		}
	}
	Default().Run(t, parts)
	*t = ewTask{}
	ewTaskPool.put(t)
}

func (t *ewTask) Part(i, n int) {
	if t.op == ewSumRows {
		c0, c1 := (i*t.cols/n)&^15, ((i+1)*t.cols/n)&^15
		if i == n-1 {
			c1 = t.cols
		}
		dst := t.v[c0:c1]
		copy(dst, t.a[c0:c1])
		for r := 1; r < t.rows; r++ {
			row := t.a[r*t.cols+c0 : r*t.cols+c1]
			for j, x := range row {
				dst[j] += x
			}
		}
		return
	}
	r0, r1 := i*t.rows/n, (i+1)*t.rows/n
	lo, hi := r0*t.cols, r1*t.cols
	switch t.op {
	case ewBroadcast:
		for r := r0; r < r1; r++ {
			copy(t.a[r*t.cols:(r+1)*t.cols], t.v[:t.cols])
		}
	case ewReLU:
		a := t.a[lo:hi]
		for j, x := range a {
			if !(x > 0) {
				a[j] = 0
			}
		}
	case ewReLUGrad:
		g, act := t.a[lo:hi], t.v[lo:hi]
		for j, x := range act {
			if !(x > 0) {
				g[j] = 0
			}
		}
	}
}

// Broadcast sets every row of the rows×cols matrix a to v.
//
//	for i < rows: a[i,:] = v[:cols]
func Broadcast(a []float32, rows, cols int, v []float32) {
	if len(a) < rows*cols || len(v) < cols {
		panic("kernel: Broadcast operand too short")
	}
	ewRun(ewBroadcast, a, v, rows, cols)
}

// SumRows overwrites dst with the column sums of the rows×cols matrix a,
// adding rows in order.
//
//	for j < cols: dst[j] = Σ_{i<rows} a[i,j]
func SumRows(dst, a []float32, rows, cols int) {
	if len(a) < rows*cols || len(dst) < cols {
		panic("kernel: SumRows operand too short")
	}
	if rows == 0 {
		clear(dst[:cols])
		return
	}
	ewRun(ewSumRows, a, dst, rows, cols)
}

// ReLU replaces every element x of a[:n] by max(x, 0) (NaN becomes 0).
func ReLU(a []float32, n int) {
	if len(a) < n {
		panic("kernel: ReLU operand too short")
	}
	ewRun(ewReLU, a[:n], nil, 1, n)
}

// ReLUGrad zeroes g[j] wherever act[j] ≤ 0, for j < n: the backward pass of
// ReLU given its output act.
func ReLUGrad(g, act []float32, n int) {
	if len(g) < n || len(act) < n {
		panic("kernel: ReLUGrad operand too short")
	}
	ewRun(ewReLUGrad, g[:n], act[:n], 1, n)
}
