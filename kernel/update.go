package kernel

// Fused optimizer updates over flat parameter vectors. The rules are those of
// torch.optim (L2 decay coupled to the gradient); package optim keeps the
// state and the step count and calls these. Long vectors are split over a
// fixed number of chunks, each element updated by one part.

// AdamCoef are the per-step coefficients of the Adam update: LR is the
// learning rate divided by 1−β1ᵗ, C2 is 1/√(1−β2ᵗ).
type AdamCoef struct {
	LR, Beta1, Beta2, Eps, WD, C2 float32
}

// AdamUpdate applies one Adam step to p with gradient g and moments m, v:
//
//	g' = g + wd·p;  m = β1·m + (1−β1)·g';  v = β2·v + (1−β2)·g'²
//	p -= LR·m / (√v·C2 + ε)
func AdamUpdate(p, g, m, v []float32, c AdamCoef) {
	checkUpdate(len(p), g, m, v)
	vecRun(&vecTask{op: vecAdam, x: g, y: p, m: m, v: v, coef: [6]float32{c.LR, c.Beta1, c.Beta2, c.Eps, c.WD, c.C2}})
}

// MomentumUpdate applies one heavy-ball step: b = μ·b + g + wd·p; p -= lr·b.
func MomentumUpdate(p, g, b []float32, lr, mu, wd float32) {
	checkUpdate(len(p), g, b, b)
	vecRun(&vecTask{op: vecMomentum, x: g, y: p, m: b, coef: [6]float32{lr, mu, wd}})
}

// SGDUpdate applies one plain SGD step: p -= lr·(g + wd·p).
func SGDUpdate(p, g []float32, lr, wd float32) {
	checkUpdate(len(p), g, g, g)
	vecRun(&vecTask{op: vecSGD, x: g, y: p, a: lr, wd: wd})
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
