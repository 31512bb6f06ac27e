package kernel

import (
	"math"

	"github.com/hetsgd/hetsgd/sparse"
)

// SoftmaxXent is the fused softmax–cross-entropy pass over a batch of logits
// z (y.Rows rows of n, leading dimension n), with uniform targets over each
// row's label set y_i (k_i = |y_i| labels, target 1/k_i each). It returns
// Σ_i loss_i, where
//
//	loss_i = logsumexp(z_i) − (1/k_i)·Σ_{l ∈ y_i} z_il     (0 when k_i = 0)
//
// and, when grad is true, overwrites each row with scale times the gradient
// of loss_i with respect to z_i:
//
//	z_i ← scale·(softmax(z_i) − t_i)                        (0 when k_i = 0)
//
// A row without labels contributes neither loss nor gradient. Exponentials
// are taken after subtracting the row maximum, so no finite input overflows.
// The sum is reduced over a fixed number of row chunks in a fixed order, so it
// is reproducible bit for bit.
func SoftmaxXent(z []float32, n int, y *sparse.CSR, scale float32, grad bool) float64 {
	if len(z) < y.Rows*n {
		panic("kernel: SoftmaxXent logits too short")
	}
	t := softmaxTaskPool.get()
	*t = softmaxTask{z: z, n: n, y: y, scale: scale, grad: grad}
	s := chunkedSum(t, y.Rows*n, &t.partial)
	*t = softmaxTask{}
	softmaxTaskPool.put(t)
	return s
}

type softmaxTask struct {
	z       []float32
	n       int
	y       *sparse.CSR
	scale   float32
	grad    bool
	partial [vecChunks]float64
}

var softmaxTaskPool = newFreeList[softmaxTask](64)

func (t *softmaxTask) Part(c, chunks int) {
	lo, hi := c*t.y.Rows/chunks, (c+1)*t.y.Rows/chunks
	var sum float64
	for i := lo; i < hi; i++ {
		labels, _ := t.y.Row(i)
		row := t.z[i*t.n : i*t.n+t.n]
		if len(labels) == 0 {
			if t.grad {
				clear(row)
			}
			continue
		}
		var target float64
		for _, l := range labels {
			target += float64(row[l])
		}
		target /= float64(len(labels))
		sum += softmaxParts(row, nil, t.scale, t.grad) - target
		if t.grad {
			tk := t.scale / float32(len(labels))
			for _, l := range labels {
				row[l] -= tk
			}
		}
	}
	t.partial[c] = sum
}

// softmaxParts returns the log-sum-exp of a row of logits held in two
// parts, a then b (b may be empty), and with grad overwrites both with
// scale times the row's softmax. Exponentials are taken after subtracting
// the row's maximum.
func softmaxParts(a, b []float32, scale float32, grad bool) float64 {
	m := cur.max(a)
	if len(b) > 0 {
		m = max(m, cur.max(b))
	}
	if !grad {
		return float64(m) + math.Log(expShiftSum(a, m)+expShiftSum(b, m))
	}
	s := cur.expShift(a, m)
	if len(b) > 0 {
		s += cur.expShift(b, m)
	}
	f := scale / float32(s)
	cur.scal(f, a)
	cur.scal(f, b)
	return float64(m) + math.Log(s)
}

// expShiftSum returns Σ exp(x[j]−m) without changing x.
func expShiftSum(x []float32, m float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(Exp32(v - m))
	}
	return s
}

// Exp32 is a float32 exponential accurate to about 2 ulp on the normal
// range. Results below the smallest normal float32 flush to 0; above the
// largest they are +Inf; NaN stays NaN.
//
// Range reduction x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in two parts for
// an exact product), then a degree-6 polynomial for e^r (the Cephes expf
// coefficients) and a scaling by 2^n built from the exponent bits.
func Exp32(x float32) float32 {
	const (
		log2e  = 1.44269504088896341
		ln2Hi  = 0.693359375
		ln2Lo  = -2.12194440e-4
		maxArg = 88.72283905206835
		minArg = -87.33654475055310 // ln of the smallest normal float32
	)
	switch {
	case x != x:
		return x
	case x > maxArg:
		return float32(math.Inf(1))
	case x < minArg:
		return 0
	}
	fn := x * log2e
	var n int32
	if fn >= 0 {
		n = int32(fn + 0.5)
	} else {
		n = int32(fn - 0.5)
	}
	f := float32(n)
	r := x - f*ln2Hi - f*ln2Lo
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	// x ≥ minArg keeps n ≥ −126. n = 128 happens only next to maxArg; 2^n is
	// then split in two to stay representable.
	if n > 127 {
		return p * 2 * math.Float32frombits(uint32(n-1+127)<<23)
	}
	return p * math.Float32frombits(uint32(n+127)<<23)
}

// SoftmaxXentRef is the reference for SoftmaxXent, in float64 with math.Exp.
func SoftmaxXentRef(z []float32, n int, y *sparse.CSR, scale float32, grad bool) float64 {
	var total float64
	for i := 0; i < y.Rows; i++ {
		labels, _ := y.Row(i)
		row := z[i*n : i*n+n]
		if len(labels) == 0 {
			if grad {
				clear(row)
			}
			continue
		}
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, float64(v))
		}
		var s float64
		for _, v := range row {
			s += math.Exp(float64(v) - m)
		}
		lse := m + math.Log(s)
		k := float64(len(labels))
		for _, l := range labels {
			total -= float64(row[l]) / k
		}
		total += lse
		if grad {
			for j, v := range row {
				row[j] = float32(float64(scale) * math.Exp(float64(v)-lse))
			}
			for _, l := range labels {
				row[l] -= float32(float64(scale) / k)
			}
		}
	}
	return total
}

// SoftmaxXentSplit is SoftmaxXent's pass over one row of logits held in
// two parts, a then b (a point's own rows and the rows its batch shares),
// whose labels are a's first k entries (k ≥ 1, uniform target 1/k each). It
// returns the row's loss and overwrites both parts with scale times its
// gradient. A −∞ logit (a row counted in the other part) has probability 0
// and gradient 0.
func SoftmaxXentSplit(a, b []float32, k int, scale float32) float64 {
	if k < 1 || k > len(a) {
		panic("kernel: SoftmaxXentSplit needs its labels among the first part's rows")
	}
	var target float64
	for _, v := range a[:k] {
		target += float64(v)
	}
	target /= float64(k)
	lse := softmaxParts(a, b, scale, true)
	tk := scale / float32(k)
	for j := range a[:k] {
		a[j] -= tk
	}
	return lse - target
}
