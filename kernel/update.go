package kernel

// Fused optimizer updates over flat parameter vectors. The rules are those of
// torch.optim (L2 decay coupled to the gradient); package optim keeps the
// state and the step count and describes each step as an Update. An Update
// applies to the whole vector at once (ApplyUpdate, split over a fixed number
// of chunks, each element updated by one part) or piece by piece from inside
// a fused kernel (Update.apply, as XentLayer does for the output layer) with
// the same arithmetic.

// UpdateRule names an optimizer's elementwise rule.
type UpdateRule uint8

const (
	// SGDRule: p -= LR·(g + WD·p).
	SGDRule UpdateRule = iota
	// MomentumRule: M = Mu·M + g + WD·p; p -= LR·M.
	MomentumRule
	// AdamRule: g' = g + WD·p; M = β1·M + (1−β1)·g'; V = β2·V + (1−β2)·g'²;
	// p -= LR·M / (√V·C2 + ε), with LR the learning rate over 1−β1ᵗ and C2
	// = 1/√(1−β2ᵗ).
	AdamRule
)

// Update is one optimizer step over a parameter vector. M and V are the
// rule's state over the whole vector (nil where the rule has none).
type Update struct {
	Rule                  UpdateRule
	LR, WD                float32
	Mu                    float32 // MomentumRule
	Beta1, Beta2, Eps, C2 float32 // AdamRule
	M, V                  []float32

	coef [6]float32 // the coefficients as the SIMD loops take them
}

// prepare fills coef; the parts that then apply u only read it.
func (u *Update) prepare() {
	switch u.Rule {
	case MomentumRule:
		u.coef = [6]float32{u.LR, u.Mu, u.WD}
	case AdamRule:
		u.coef = [6]float32{u.LR, u.Beta1, u.Beta2, u.Eps, u.WD, u.C2}
	}
}

// apply updates p, the piece of the parameter vector that starts at offset
// off, from its gradient g (same length), on the calling goroutine, after
// prepare.
func (u *Update) apply(p, g []float32, off int) {
	g = g[:len(p)]
	switch u.Rule {
	case SGDRule:
		if u.WD != 0 {
			// p -= lr·(g + wd·p) = (1 − lr·wd)·p − lr·g
			cur.scal(1-u.LR*u.WD, p)
		}
		cur.axpy(-u.LR, g, p)
	case MomentumRule:
		cur.momentum(p, g, u.M[off:off+len(p)], (*[3]float32)(u.coef[:3]))
	case AdamRule:
		cur.adam(p, g, u.M[off:off+len(p)], u.V[off:off+len(p)], &u.coef)
	}
}

// ApplyUpdate applies u to p, the piece of the parameter vector that starts
// at offset off, from its gradient g (same length).
func ApplyUpdate(p, g []float32, u *Update, off int) {
	checkUpdate(len(p), g)
	switch u.Rule {
	case MomentumRule:
		checkUpdate(len(p), u.M[off:off+len(p)])
	case AdamRule:
		checkUpdate(len(p), u.M[off:off+len(p)], u.V[off:off+len(p)])
	}
	u.prepare()
	vecRun(&vecTask{op: vecUpdate, x: g, y: p, upd: u, off: off})
}

// ApplyUpdateRows applies u to the listed rows of a row-major matrix of
// rows of width floats: p and g hold the matrix, which starts at offset off
// of the vector u's state covers. Rows not listed keep their values — what
// u does where the gradient is zero, for plain SGD without decay.
func ApplyUpdateRows(p, g []float32, u *Update, off int, rows []int32, width int) {
	u.prepare()
	t := rowUpdatePool.get()
	*t = rowUpdateTask{p: p, g: g, u: u, off: off, rows: rows, width: width}
	parts := 1
	if len(rows)*width >= vecParallelMin {
		parts = vecChunks
	}
	Default().Run(t, parts)
	*t = rowUpdateTask{}
	rowUpdatePool.put(t)
}

var rowUpdatePool = newFreeList[rowUpdateTask](16)

type rowUpdateTask struct {
	p, g  []float32
	u     *Update
	off   int
	rows  []int32
	width int
}

func (t *rowUpdateTask) Part(i, n int) {
	for _, j := range t.rows[i*len(t.rows)/n : (i+1)*len(t.rows)/n] {
		lo := int(j) * t.width
		t.u.apply(t.p[lo:lo+t.width], t.g[lo:lo+t.width], t.off+lo)
	}
}

func checkUpdate(n int, vs ...[]float32) {
	for _, v := range vs {
		if len(v) != n {
			panic("kernel: update vectors of different lengths")
		}
	}
}

// The portable update loops, which are also the references the SIMD ones are
// tested against.

func adamGo(p, g, m, v []float32, c *[6]float32) {
	lr, b1, b2, eps, wd, c2 := c[0], c[1], c[2], c[3], c[4], c[5]
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for j := range p {
		gj := g[j] + wd*p[j]
		m[j] = b1*m[j] + (1-b1)*gj
		v[j] = b2*v[j] + (1-b2)*gj*gj
		p[j] -= lr * m[j] / (sqrt32(v[j])*c2 + eps)
	}
}

func momentumGo(p, g, b []float32, c *[3]float32) {
	lr, mu, wd := c[0], c[1], c[2]
	g, b = g[:len(p)], b[:len(p)]
	for j := range p {
		b[j] = mu*b[j] + g[j] + wd*p[j]
		p[j] -= lr * b[j]
	}
}
