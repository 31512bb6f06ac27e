package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/sparse"
)

// Workspace holds the activations and gradient buffers of one pass of an MLP
// over a batch of up to Cap rows.
type Workspace struct {
	m    *MLP
	max  int
	rows int         // rows of the last Forward
	acts [][]float32 // acts[l]: output of hidden layer l, max×Out (post-ReLU)
	dact [][]float32 // gradient with respect to acts[l]
	out  []float32   // logits, max×L; after LossGrad, the gradient of the loss

	dropout float32    // probability of zeroing a hidden unit in training
	rng     *rand.Rand // dropout masks
	dropped bool       // the last forward pass applied dropout
}

// NewWorkspace allocates the buffers for batches of up to maxRows rows.
func (m *MLP) NewWorkspace(maxRows int) *Workspace {
	w := &Workspace{m: m, max: maxRows}
	hidden := m.layers[:len(m.layers)-1]
	for _, l := range hidden {
		w.acts = append(w.acts, make([]float32, maxRows*l.Out))
		w.dact = append(w.dact, make([]float32, maxRows*l.Out))
	}
	w.out = make([]float32, maxRows*m.cfg.Outputs)
	return w
}

// SetDropout makes training passes (Gradient) zero each hidden unit with
// probability p and scale the others by 1/(1−p) (inverted dropout), drawing
// the masks from a stream seeded by seed. Forward, used for evaluation, never
// drops. p = 0 turns dropout off.
func (w *Workspace) SetDropout(p float64, seed uint64) error {
	if !(p >= 0 && p < 1) {
		return fmt.Errorf("model: dropout %v must be in [0, 1)", p)
	}
	w.dropout = float32(p)
	w.rng = rand.New(rand.NewPCG(seed, 0xd0_0a7))
	return nil
}

// Cap returns the largest batch the workspace holds.
func (w *Workspace) Cap() int { return w.max }

// Forward computes the logits of the rows of x with parameters p, without
// dropout.
func (w *Workspace) Forward(p []float32, x *sparse.CSR) { w.forward(p, x, false) }

func (w *Workspace) forward(p []float32, x *sparse.CSR, training bool) {
	w.m.check(p, "parameters")
	if x.Rows > w.max {
		panic("model: batch larger than the workspace")
	}
	if x.Cols != w.m.cfg.Inputs {
		panic("model: batch has the wrong number of features")
	}
	w.rows = x.Rows
	w.dropped = training && w.dropout > 0
	n := x.Rows
	for i, l := range w.m.layers {
		dst := w.out
		if i < len(w.acts) {
			dst = w.acts[i]
		}
		wt, b := p[l.W:l.B], p[l.B:l.B+l.Out]
		if i == 0 {
			kernel.SpMM(dst, x, wt, l.Out)
			addBias(dst, n, l.Out, b)
		} else {
			kernel.Broadcast(dst, n, l.Out, b)
			kernel.Gemm(false, false, n, l.Out, l.In, 1, w.acts[i-1], l.In, wt, l.Out, 1, dst, l.Out)
		}
		if i < len(w.acts) {
			kernel.ReLU(dst, n*l.Out)
			if w.dropped {
				w.drop(dst[:n*l.Out])
			}
		}
	}
}

// drop applies inverted dropout to the activations a. Dropped units read 0,
// so ReLUGrad zeroes their gradient in Backward; survivors are scaled here
// and their gradient by the same factor there.
func (w *Workspace) drop(a []float32) {
	keep := 1 - w.dropout
	scale := 1 / keep
	// 24-bit uniform draws, two per 64-bit word.
	threshold := uint32(float64(keep) * (1 << 24))
	for i := 0; i < len(a); i += 2 {
		r := w.rng.Uint64()
		for k := 0; k < 2 && i+k < len(a); k++ {
			if uint32(r>>(32*k))&(1<<24-1) < threshold {
				a[i+k] *= scale
			} else {
				a[i+k] = 0
			}
		}
	}
}

// addBias adds b to every row of the n×out matrix a.
func addBias(a []float32, n, out int, b []float32) {
	for r := 0; r < n; r++ {
		row := a[r*out : (r+1)*out]
		for j, v := range b {
			row[j] += v
		}
	}
}

// Logits returns the logits of the last Forward (rows×L, row-major). After
// LossGrad they hold the loss gradient instead.
func (w *Workspace) Logits() []float32 { return w.out[:w.rows*w.m.cfg.Outputs] }

// Loss returns the summed cross-entropy of the last Forward's rows against
// labels y, leaving the logits intact. Rows without labels add nothing.
func (w *Workspace) Loss(y *sparse.CSR) float64 {
	w.checkLabels(y)
	return kernel.SoftmaxXent(w.out, w.m.cfg.Outputs, y, 0, false)
}

// LossGrad returns the summed cross-entropy like Loss and replaces the logits
// by the gradient of the mean loss over the batch's rows.
func (w *Workspace) LossGrad(y *sparse.CSR) float64 {
	w.checkLabels(y)
	return kernel.SoftmaxXent(w.out, w.m.cfg.Outputs, y, 1/float32(w.rows), true)
}

func (w *Workspace) checkLabels(y *sparse.CSR) {
	if y.Rows != w.rows || y.Cols != w.m.cfg.Outputs {
		panic("model: labels do not match the batch")
	}
}

// Backward writes into g the gradient of the mean loss with respect to p,
// given the input x of the last Forward and a preceding LossGrad. Every
// element of g is overwritten.
func (w *Workspace) Backward(p, g []float32, x *sparse.CSR) {
	w.m.check(p, "parameters")
	w.m.check(g, "gradient")
	n := w.rows
	up := w.out // gradient with respect to the current layer's output
	for i := len(w.m.layers) - 1; i >= 0; i-- {
		l := w.m.layers[i]
		gw, gb := g[l.W:l.B], g[l.B:l.B+l.Out]
		kernel.SumRows(gb, up, n, l.Out)
		if i == 0 {
			// Only rows of the batch's features get gradient; the rest of
			// gW₀ must read zero.
			clear(gw)
			kernel.SpMMT(gw, x, up, l.Out)
			break
		}
		in := w.acts[i-1]
		kernel.Gemm(true, false, l.In, l.Out, n, 1, in, l.In, up, l.Out, 0, gw, l.Out)
		down := w.dact[i-1]
		kernel.Gemm(false, true, n, l.In, l.Out, 1, up, l.Out, p[l.W:l.B], l.Out, 0, down, l.In)
		kernel.ReLUGrad(down, in, n*l.In)
		if w.dropped {
			kernel.Scal(1/(1-w.dropout), down[:n*l.In])
		}
		up = down
	}
}

// Gradient runs a training forward pass (with dropout, if set), LossGrad and
// Backward on one batch and returns the mean loss of its rows.
func (w *Workspace) Gradient(p, g []float32, x, y *sparse.CSR) float64 {
	w.forward(p, x, true)
	loss := w.LossGrad(y)
	w.Backward(p, g, x)
	if x.Rows == 0 {
		return 0
	}
	return loss / float64(x.Rows)
}
