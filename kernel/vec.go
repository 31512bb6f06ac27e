package kernel

import (
	"math"
)

// axpyUnitary computes y += a·x for len(x) == len(y) elements with the
// implementation in use; it is the inner loop of the sparse kernels.
func axpyUnitary(a float32, x, y []float32) { cur.axpy(a, x, y) }

// Axpy computes y += a·x (len(y) ≥ len(x)), in parallel for long vectors.
func Axpy(a float32, x, y []float32) {
	if len(y) < len(x) {
		panic("kernel: Axpy y shorter than x")
	}
	vecRun(&vecTask{op: vecAxpy, a: a, x: x, y: y[:len(x)]})
}

// AxpBy computes y = a·x + b·y (len(y) ≥ len(x)).
func AxpBy(a float32, x []float32, b float32, y []float32) {
	if len(y) < len(x) {
		panic("kernel: AxpBy y shorter than x")
	}
	vecRun(&vecTask{op: vecAxpby, a: a, b: b, x: x, y: y[:len(x)]})
}

// Scal computes x *= a.
func Scal(a float32, x []float32) { vecRun(&vecTask{op: vecScal, a: a, x: x}) }

// Copy copies x into y (len(y) ≥ len(x)) on the default pool: a copy of a
// layer's hundreds of megabytes takes every core's share of the memory's
// bandwidth, where copy takes one core's.
func Copy(y, x []float32) {
	if len(y) < len(x) {
		panic("kernel: Copy into a shorter slice")
	}
	vecRun(&vecTask{op: vecCopy, x: x, y: y})
}

// Dot returns Σ x[i]·y[i], accumulated in float64 over a fixed number of
// chunks that depends only on len(x), so the value is reproducible bit for bit.
func Dot(x, y []float32) float64 {
	if len(y) < len(x) {
		panic("kernel: Dot y shorter than x")
	}
	return vecRun(&vecTask{op: vecDot, x: x, y: y[:len(x)]})
}

// Nrm2 returns the Euclidean norm of x (float64 accumulation, reproducible).
func Nrm2(x []float32) float64 { return math.Sqrt(Dot(x, x)) }

type vecOp uint8

const (
	vecAxpy vecOp = iota
	vecAxpby
	vecScal
	vecDot
	vecUpdate
	vecCopy
)

// vecChunks is the fixed number of chunks a long vector is cut into; dot
// products reduce their chunk sums in chunk order.
const vecChunks = 16

// Vectors shorter than this run on the caller alone.
const vecParallelMin = 1 << 16

type vecTask struct {
	op      vecOp
	a, b    float32
	x, y    []float32
	partial [vecChunks]float64
	upd     *Update // vecUpdate: y is the parameter vector, x the gradient,
	off     int     // and off the offset of y in the vector upd's state covers
}

var vecTaskPool = newFreeList[vecTask](64)

// vecRun runs the operation described by args over vecChunks chunks and
// returns the sum of the chunks' partial results (dot products), reduced in
// chunk order.
func vecRun(args *vecTask) float64 {
	t := vecTaskPool.get()
	*t = *args
	sum := chunkedSum(t, len(t.x), &t.partial)
	*t = vecTask{}
	vecTaskPool.put(t)
	return sum
}

// chunkedSum runs t's vecChunks parts, on the caller alone when the work
// (elements) is below vecParallelMin and on the default pool otherwise,
// and returns the sum of the parts' partial results in chunk order: the
// same bits whatever the threads.
func chunkedSum(t Task, work int, partial *[vecChunks]float64) float64 {
	if work < vecParallelMin {
		for i := 0; i < vecChunks; i++ {
			t.Part(i, vecChunks)
		}
	} else {
		Default().Run(t, vecChunks)
	}
	var sum float64
	for _, p := range partial {
		sum += p
	}
	return sum
}

func (t *vecTask) Part(i, n int) {
	lo, hi := i*len(t.x)/n, (i+1)*len(t.x)/n
	x := t.x[lo:hi]
	switch t.op {
	case vecAxpy:
		axpyUnitary(t.a, x, t.y[lo:hi])
	case vecAxpby:
		y := t.y[lo:hi]
		for j, v := range x {
			y[j] = t.a*v + t.b*y[j]
		}
	case vecScal:
		cur.scal(t.a, x)
	case vecDot:
		y := t.y[lo:hi]
		var s0, s1, s2, s3 float64
		for len(x) >= 4 && len(y) >= 4 {
			s0 += float64(x[0]) * float64(y[0])
			s1 += float64(x[1]) * float64(y[1])
			s2 += float64(x[2]) * float64(y[2])
			s3 += float64(x[3]) * float64(y[3])
			x, y = x[4:], y[4:]
		}
		for j, v := range x {
			s0 += float64(v) * float64(y[j])
		}
		t.partial[i] = (s0 + s1) + (s2 + s3)
	case vecUpdate:
		t.upd.apply(t.y[lo:hi], x, t.off+lo)
	case vecCopy:
		copy(t.y[lo:hi], x)
	}
}
