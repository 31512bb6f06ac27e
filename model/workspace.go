package model

import (
	"fmt"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/sparse"
)

// Workspace holds the activations and gradient buffers of one pass of an MLP
// over a batch of up to Cap rows.
type Workspace struct {
	m    *MLP
	max  int
	rows int                 // rows of the last Forward
	acts [][]float32         // acts[l]: output of hidden layer l, max×Out (post-ReLU)
	dact [][]float32         // gradient with respect to acts[l]
	out  []float32           // logits, max×L; after LossGrad, the gradient of the loss
	xent *kernel.XentScratch // the fused output layer of Gradient (hidden layers only)

	// sparse, when set for a Step, lets the first layer's weight gradient be
	// written and applied on the rows of the batch's features only; touched
	// lists those rows (mark[j] == stamp when j is listed).
	sparse  bool
	touched []int32
	mark    []uint32
	stamp   uint32

	dropout *Dropout // nil: no dropout
	dropped bool     // the last forward pass applied dropout
}

// WorkspaceBytes estimates the memory of NewWorkspace(maxRows) in use, with
// the fused output layer's buffers for threads worker threads, so that a run
// can be refused before it allocates what the machine does not have.
func (m *MLP) WorkspaceBytes(maxRows, threads int) int64 {
	rows := int64(maxRows)
	hidden := m.layers[:len(m.layers)-1]
	var b int64
	for _, l := range hidden {
		b += 2 * 4 * rows * int64(l.Out) // acts, dact
	}
	b += 4 * rows * int64(m.cfg.Outputs) // out
	if last := m.layers[len(m.layers)-1]; len(hidden) > 0 && !last.Transposed {
		b += kernel.XentScratchBytes(maxRows, last.In, last.Out, threads)
	}
	return b + 8*int64(m.cfg.Inputs) // the sparse step's row marks and list
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
	if last := m.layers[len(m.layers)-1]; len(hidden) > 0 && !last.Transposed {
		w.xent = kernel.NewXentScratch(maxRows, last.In, last.Out)
	}
	return w
}

// SetDropout makes training passes (Gradient) zero each hidden unit with
// probability p and scale the others by 1/(1−p) (inverted dropout), drawing
// the masks from a stream seeded by seed. Forward, used for evaluation, never
// drops. p = 0 turns dropout off.
func (w *Workspace) SetDropout(p float64, seed uint64) error {
	d, err := NewDropout(p, seed)
	if err != nil {
		return err
	}
	w.dropout = d
	return nil
}

// DropoutState returns the state of the dropout masks' random stream, for
// checkpoints (nil before SetDropout).
func (w *Workspace) DropoutState() ([]byte, error) {
	if w.dropout == nil {
		return nil, nil
	}
	return w.dropout.State()
}

// SetDropoutState restores a state DropoutState returned: the masks drawn
// next are those that would have followed it.
func (w *Workspace) SetDropoutState(b []byte) error {
	if w.dropout == nil {
		if b == nil {
			return nil
		}
		return fmt.Errorf("model: a dropout stream's state for a workspace without dropout set")
	}
	return w.dropout.SetState(b)
}

// Cap returns the largest batch the workspace holds.
func (w *Workspace) Cap() int { return w.max }

// Forward computes the logits of the rows of x with parameters p, without
// dropout.
func (w *Workspace) Forward(p []float32, x *sparse.CSR) { w.forward(p, x, false, len(w.m.layers)) }

// Hidden computes the last hidden layer's activations of the rows of x with
// parameters p, without dropout, and returns them (rows×In of the output
// layer, row-major; valid until the next pass): the input of an output layer
// scored apart, as a hash table's query.
func (w *Workspace) Hidden(p []float32, x *sparse.CSR) []float32 {
	last := len(w.m.layers) - 1
	if last == 0 {
		panic("model: Hidden of a network without a hidden layer")
	}
	w.forward(p, x, false, last)
	return w.acts[last-1][:x.Rows*w.m.layers[last].In]
}

// forward runs the first layers of the network (all of them for logits).
func (w *Workspace) forward(p []float32, x *sparse.CSR, training bool, layers int) {
	w.m.check(p, "parameters")
	if x.Rows > w.max {
		panic("model: batch larger than the workspace")
	}
	if x.Cols != w.m.cfg.Inputs {
		panic("model: batch has the wrong number of features")
	}
	w.rows = x.Rows
	w.dropped = training && w.dropout != nil && w.dropout.P > 0
	n := x.Rows
	for i, l := range w.m.layers[:layers] {
		dst := w.out
		if i < len(w.acts) {
			dst = w.acts[i]
		}
		wt, b := p[l.W:l.B], p[l.B:l.B+l.Out]
		if i == 0 {
			kernel.SpMM(dst, x, wt, l.Out)
			addBias(dst, n, l.Out, b)
		} else if l.Transposed {
			kernel.Broadcast(dst, n, l.Out, b)
			kernel.Gemm(false, true, n, l.Out, l.In, 1, w.acts[i-1], l.In, wt, l.In, 1, dst, l.Out)
		} else {
			kernel.Broadcast(dst, n, l.Out, b)
			kernel.Gemm(false, false, n, l.Out, l.In, 1, w.acts[i-1], l.In, wt, l.Out, 1, dst, l.Out)
		}
		if i < len(w.acts) {
			kernel.ReLU(dst, n*l.Out)
			if w.dropped {
				w.dropout.Apply(dst[:n*l.Out])
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
// element of g is overwritten. (Gradient does the same work with the output
// layer fused; this unfused path is its reference.)
func (w *Workspace) Backward(p, g []float32, x *sparse.CSR) {
	w.m.check(p, "parameters")
	w.m.check(g, "gradient")
	w.backward(p, g, x, len(w.m.layers)-1, w.out)
}

// backward runs the backward pass from layer i down, up being the gradient
// with respect to layer i's output.
func (w *Workspace) backward(p, g []float32, x *sparse.CSR, i int, up []float32) {
	n := w.rows
	for ; i >= 0; i-- {
		l := w.m.layers[i]
		gw, gb := g[l.W:l.B], g[l.B:l.B+l.Out]
		kernel.SumRows(gb, up, n, l.Out)
		if i == 0 {
			// Only rows of the batch's features get gradient; the rest of
			// gW₀ must read zero, unless a sparse Step never reads them.
			if w.sparse {
				w.listTouched(x)
				for _, j := range w.touched {
					clear(gw[int(j)*l.Out : int(j+1)*l.Out])
				}
			} else {
				clear(gw)
			}
			kernel.SpMMT(gw, x, up, l.Out)
			break
		}
		in, down := w.acts[i-1], w.dact[i-1]
		if l.Transposed {
			kernel.Gemm(true, false, l.Out, l.In, n, 1, up, l.Out, in, l.In, 0, gw, l.In)
			kernel.Gemm(false, false, n, l.In, l.Out, 1, up, l.Out, p[l.W:l.B], l.In, 0, down, l.In)
		} else {
			kernel.Gemm(true, false, l.In, l.Out, n, 1, in, l.In, up, l.Out, 0, gw, l.Out)
			kernel.Gemm(false, true, n, l.In, l.Out, 1, up, l.Out, p[l.W:l.B], l.Out, 0, down, l.In)
		}
		up = w.hiddenGrad(i - 1)
	}
}

// hiddenGrad turns dact[i], the gradient with respect to hidden layer i's
// output, into the gradient with respect to its pre-activation (ReLU and
// dropout), in place, and returns it.
func (w *Workspace) hiddenGrad(i int) []float32 {
	n, out := w.rows, w.m.layers[i].Out
	down := w.dact[i]
	kernel.ReLUGrad(down, w.acts[i], n*out)
	if w.dropped {
		kernel.Scal(1/(1-w.dropout.P), down[:n*out])
	}
	return down
}

// Gradient runs a training forward pass (with dropout, if set), the loss and
// the backward pass on one batch, writes the gradient of the mean loss into g
// and returns the mean loss of the batch's rows. With hidden layers, the
// output layer runs fused (kernel.XentLayer): its logits never reach memory
// as a whole, so Logits holds scratch afterwards.
func (w *Workspace) Gradient(p, g []float32, x, y *sparse.CSR) float64 {
	return w.train(p, g, x, y, nil)
}

// Step trains on one batch: the same as Gradient followed by applying u to
// all of p, but with hidden layers the output layer is updated inside its
// fused pass, right after its last use, so its gradient never reaches memory
// and g's output-layer range is left unspecified. It returns the mean loss of
// the batch's rows, computed before the update.
func (w *Workspace) Step(p, g []float32, x, y *sparse.CSR, u *kernel.Update) float64 {
	return w.train(p, g, x, y, u)
}

// train is Gradient, and with an update u, Step.
func (w *Workspace) train(p, g []float32, x, y *sparse.CSR, u *kernel.Update) float64 {
	w.m.check(g, "gradient")
	last := len(w.m.layers) - 1
	var loss float64
	if last == 0 || w.m.layers[last].Transposed {
		// Unfused: the fused output layer reads In×L weights.
		w.forward(p, x, true, len(w.m.layers))
		loss = w.LossGrad(y)
		w.Backward(p, g, x)
		if u != nil {
			kernel.ApplyUpdate(p, g, u, 0)
		}
	} else {
		w.forward(p, x, true, last)
		w.checkLabels(y)
		l := w.m.layers[last]
		n := x.Rows
		scale := float32(0)
		if n > 0 {
			scale = 1 / float32(n)
		}
		var gOut []float32 // the output layer's gradient, unless fused with u
		if u == nil {
			gOut = g[l.W : l.B+l.Out]
		}
		loss = kernel.XentLayer(w.acts[last-1], n, l.In, p[l.W:l.B+l.Out], l.Out, y, scale,
			gOut, w.dact[last-1], w.out, w.xent, u, l.W)
		// Plain SGD leaves a parameter with a zero gradient as it is: the
		// first layer's weights then change on the batch's feature rows only.
		w.sparse = u != nil && u.Rule == kernel.SGDRule && u.WD == 0
		w.backward(p, g, x, last-1, w.hiddenGrad(last-1))
		if w.sparse {
			l0 := w.m.layers[0]
			kernel.ApplyUpdateRows(p[l0.W:l0.B], g[l0.W:l0.B], u, l0.W, w.touched, l0.Out)
			kernel.ApplyUpdate(p[l0.B:l.W], g[l0.B:l.W], u, l0.B)
			w.sparse = false
		} else if u != nil {
			kernel.ApplyUpdate(p[:l.W], g[:l.W], u, 0)
		}
	}
	if x.Rows == 0 {
		return 0
	}
	return loss / float64(x.Rows)
}

// listTouched lists the distinct features of x in touched.
func (w *Workspace) listTouched(x *sparse.CSR) {
	if w.mark == nil {
		w.mark = make([]uint32, w.m.cfg.Inputs)
		w.touched = make([]int32, 0, w.m.cfg.Inputs)
	}
	w.stamp++
	if w.stamp == 0 { // wrapped: forget every old stamp
		clear(w.mark)
		w.stamp = 1
	}
	w.touched = w.touched[:0]
	for _, j := range x.Indices[:x.NNZ()] {
		if w.mark[j] != w.stamp {
			w.mark[j] = w.stamp
			w.touched = append(w.touched, j)
		}
	}
}
