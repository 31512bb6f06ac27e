//go:build cuda

package gpu

import (
	_ "embed"
	"fmt"
	"slices"

	"github.com/hetsgd/hetsgd/cuda"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/sparse"
)

//go:embed kernels.cu
var kernelSource string

// threads is a block's width: the kernels that reduce assume it.
const threads = 256

// Net is an MLP's replica on a GPU: its parameters, gradient and
// activations in device memory, for batches of up to a fixed size, with
// the training step's arithmetic (model.Workspace's on the host) as
// kernels and cuBLAS products.
type Net struct {
	g   *cuda.GPU
	m   *model.MLP
	max struct{ rows, nnz, labels int }

	p, grad    cuda.Buffer
	om, ov     cuda.Buffer   // the optimizer's state, allocated by its first step
	acts, dact []cuda.Buffer // per hidden layer, max rows × width
	masks      []cuda.Buffer // per hidden layer, its dropout mask (with dropout)
	dropout    *model.Dropout
	dropped    bool        // the last forward pass applied dropout
	out        cuda.Buffer // logits, then their gradient
	loss       cuda.Buffer // a row's loss

	// The loaded batch: inputs by row (xptr, xidx, xval) and by feature
	// (feat, fptr, frow, fval), labels by row (yptr, yidx); rows and
	// features, and host staging of the same, sized once.
	xptr, xidx, xval, feat, fptr, frow, fval, yptr, yidx cuda.Buffer
	rows, features                                       int
	host                                                 staging

	k struct {
		spmmBias, spmmT, broadcast, relu, reluGrad, sumRows, update, xent, mul cuda.Function
	}
}

// staging is the host side of a batch's upload.
type staging struct {
	xptr, xidx, feat, fptr, frow, yptr, yidx []int32
	xval, fval, loss, mask                   []float32
	count                                    []int32 // per feature, then its next slot
	order                                    []int32 // the batch's features, in first-seen order
}

// NewNet allocates a replica of m on g for batches of up to maxRows rows,
// maxNNZ input non-zeros and maxLabels labels, and compiles the kernels
// (once a GPU).
func NewNet(g *cuda.GPU, m *model.MLP, maxRows, maxNNZ, maxLabels int) (*Net, error) {
	if maxRows < 1 || maxNNZ < 1 || maxLabels < 1 {
		return nil, fmt.Errorf("gpu: a replica for %d rows, %d non-zeros and %d labels", maxRows, maxNNZ, maxLabels)
	}
	cfg := m.Config()
	n := &Net{g: g, m: m}
	n.max.rows, n.max.nnz, n.max.labels = maxRows, maxNNZ, maxLabels
	mod, err := g.Compile("hetsgd/gpu/kernels.cu", kernelSource)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		fn   *cuda.Function
		name string
	}{
		{&n.k.spmmBias, "spmm_bias"}, {&n.k.spmmT, "spmm_t"}, {&n.k.broadcast, "broadcast"},
		{&n.k.relu, "relu"}, {&n.k.reluGrad, "relu_grad"}, {&n.k.sumRows, "sum_rows"}, {&n.k.update, "update"}, {&n.k.xent, "softmax_xent"}, {&n.k.mul, "mul"},
	} {
		if *f.fn, err = mod.Function(f.name); err != nil {
			return nil, err
		}
	}
	alloc := func(b *cuda.Buffer, size int) {
		if err == nil {
			*b, err = g.Alloc(size)
		}
	}
	alloc(&n.p, m.NumParams())
	alloc(&n.grad, m.NumParams())
	layers := m.Layers()
	n.acts = make([]cuda.Buffer, len(layers)-1)
	n.dact = make([]cuda.Buffer, len(layers)-1)
	for i, l := range layers[:len(layers)-1] {
		alloc(&n.acts[i], maxRows*l.Out)
		alloc(&n.dact[i], maxRows*l.Out)
	}
	alloc(&n.out, maxRows*cfg.Outputs)
	alloc(&n.loss, maxRows)
	alloc(&n.xptr, maxRows+1)
	alloc(&n.xidx, maxNNZ)
	alloc(&n.xval, maxNNZ)
	alloc(&n.feat, maxNNZ)
	alloc(&n.fptr, maxNNZ+1)
	alloc(&n.frow, maxNNZ)
	alloc(&n.fval, maxNNZ)
	alloc(&n.yptr, maxRows+1)
	alloc(&n.yidx, maxLabels)
	if err != nil {
		n.Close()
		return nil, err
	}
	h := &n.host
	h.xptr, h.yptr = make([]int32, maxRows+1), make([]int32, maxRows+1)
	h.xidx, h.xval = make([]int32, maxNNZ), make([]float32, maxNNZ)
	h.feat, h.fptr, h.frow, h.fval = make([]int32, maxNNZ), make([]int32, maxNNZ+1), make([]int32, maxNNZ), make([]float32, maxNNZ)
	h.yidx, h.loss = make([]int32, maxLabels), make([]float32, maxRows)
	h.count, h.order = make([]int32, cfg.Inputs), make([]int32, 0, maxNNZ)
	return n, nil
}

// Bytes is the device memory NewNet and SetDropout allocate, to refuse a
// run before it allocates what the GPU does not have. (A Step with
// momentum or Adam adds its state: one or two vectors of the parameters.)
func Bytes(m *model.MLP, maxRows, maxNNZ, maxLabels int) int64 {
	e := 2 * int64(m.NumParams())
	for _, l := range m.Layers()[:len(m.Layers())-1] {
		e += 3 * int64(maxRows*l.Out) // activations, their gradient, the dropout mask
	}
	e += int64(maxRows)*int64(m.Config().Outputs) + 3*int64(maxRows+1) + 6*int64(maxNNZ) + 1 + int64(maxLabels)
	return 4 * e
}

// Close frees the replica's memory.
func (n *Net) Close() {
	for _, b := range slices.Concat([]cuda.Buffer{n.p, n.grad, n.om, n.ov, n.out, n.loss, n.xptr, n.xidx, n.xval, n.feat, n.fptr, n.frow, n.fval, n.yptr, n.yidx}, n.acts, n.dact, n.masks) {
		n.g.Free(b)
	}
}

// SetDropout makes training passes drop hidden units with d's masks, drawn
// on the host as model.Workspace draws them (so that a replica here and a
// workspace there with streams of one seed drop the same units); nil, or
// d.P = 0, turns dropout off.
func (n *Net) SetDropout(d *model.Dropout) error {
	n.dropout = d
	if d == nil || d.P == 0 || n.masks != nil {
		return nil
	}
	widest := 0
	for _, l := range n.m.Layers()[:len(n.m.Layers())-1] {
		b, err := n.g.Alloc(n.max.rows * l.Out)
		if err != nil {
			return fmt.Errorf("gpu: dropout masks: %w", err)
		}
		n.masks = append(n.masks, b)
		widest = max(widest, l.Out)
	}
	n.host.mask = make([]float32, n.max.rows*widest)
	return nil
}

// SetParams copies p into the replica's parameters.
func (n *Net) SetParams(p []float32) error {
	if len(p) != n.m.NumParams() {
		return fmt.Errorf("gpu: %d parameters for a network of %d", len(p), n.m.NumParams())
	}
	return cuda.CopyIn(n.g, n.p, p)
}

// Params copies the replica's parameters into p.
func (n *Net) Params(p []float32) error {
	if len(p) != n.m.NumParams() {
		return fmt.Errorf("gpu: %d parameters for a network of %d", len(p), n.m.NumParams())
	}
	return cuda.CopyOut(n.g, p, n.p)
}

// GradientOut copies the gradient of the last Gradient into g.
func (n *Net) GradientOut(g []float32) error {
	if len(g) != n.m.NumParams() {
		return fmt.Errorf("gpu: %d gradient elements for a network of %d", len(g), n.m.NumParams())
	}
	return cuda.CopyOut(n.g, g, n.grad)
}

// Load uploads a batch: inputs x and labels y, rows alike.
func (n *Net) Load(x, y *sparse.CSR) error {
	cfg := n.m.Config()
	switch {
	case x.Rows != y.Rows:
		return fmt.Errorf("gpu: a batch of %d input rows and %d label rows", x.Rows, y.Rows)
	case x.Cols != cfg.Inputs || y.Cols != cfg.Outputs:
		return fmt.Errorf("gpu: a batch of %d features and %d labels for a network of %d and %d", x.Cols, y.Cols, cfg.Inputs, cfg.Outputs)
	case x.Rows > n.max.rows || x.NNZ() > n.max.nnz || y.NNZ() > n.max.labels:
		return fmt.Errorf("gpu: a batch of %d rows, %d non-zeros and %d labels, more than the replica's %d, %d and %d",
			x.Rows, x.NNZ(), y.NNZ(), n.max.rows, n.max.nnz, n.max.labels)
	}
	h := &n.host
	rows, nnz := x.Rows, x.NNZ()
	for i := range rows + 1 {
		h.xptr[i], h.yptr[i] = int32(x.Indptr[i]), int32(y.Indptr[i])
	}
	copy(h.xidx, x.Indices[:nnz])
	if x.Values == nil {
		for i := range nnz {
			h.xval[i] = 1
		}
	} else {
		copy(h.xval, x.Values[:nnz])
	}
	copy(h.yidx, y.Indices[:y.NNZ()])
	// By feature: count, then offsets in first-seen order, then place the
	// entries row by row (so each feature's are in row order).
	h.order = h.order[:0]
	for _, j := range h.xidx[:nnz] {
		if h.count[j] == 0 {
			h.order = append(h.order, j)
		}
		h.count[j]++
	}
	h.fptr[0] = 0
	for f, j := range h.order {
		h.feat[f] = j
		h.fptr[f+1] = h.fptr[f] + h.count[j]
		h.count[j] = h.fptr[f] // the feature's next slot
	}
	for r := range rows {
		for k := h.xptr[r]; k < h.xptr[r+1]; k++ {
			j := h.xidx[k]
			s := h.count[j]
			h.frow[s], h.fval[s] = int32(r), h.xval[k]
			h.count[j]++
		}
	}
	for _, j := range h.order {
		h.count[j] = 0
	}
	n.rows, n.features = rows, len(h.order)
	f := n.features
	for _, c := range []struct {
		dst cuda.Buffer
		src []int32
	}{{n.xptr, h.xptr[:rows+1]}, {n.xidx, h.xidx[:nnz]}, {n.feat, h.feat[:f]}, {n.fptr, h.fptr[:f+1]}, {n.frow, h.frow[:nnz]}, {n.yptr, h.yptr[:rows+1]}, {n.yidx, h.yidx[:y.NNZ()]}} {
		if err := cuda.CopyIn(n.g, c.dst, c.src); err != nil {
			return err
		}
	}
	if err := cuda.CopyIn(n.g, n.xval, h.xval[:nnz]); err != nil {
		return err
	}
	return cuda.CopyIn(n.g, n.fval, h.fval[:nnz])
}

// grid is the number of blocks of the given threads that cover n elements
// (at least one; grid-stride kernels cover the rest).
func grid(n, threads int) cuda.Dim { return cuda.D1(max(1, min((n+threads-1)/threads, 65535))) }

// forward computes the logits of the loaded batch (with the hidden
// layers' activations), dropping units when training with dropout.
func (n *Net) forward(training bool) error {
	g, rows := n.g, n.rows
	n.dropped = training && n.dropout != nil && n.dropout.P > 0
	if rows == 0 {
		return nil
	}
	layers := n.m.Layers()
	for i, l := range layers {
		dst := n.out
		if i < len(n.acts) {
			dst = n.acts[i]
		}
		w, b := n.p.Slice(l.W, l.B), n.p.Slice(l.B, l.B+l.Out)
		var err error
		switch {
		case i == 0:
			err = g.Launch(n.k.spmmBias, cuda.D1(rows), cuda.D1(min(threads, l.Out)),
				cuda.I32(l.Out), cuda.Ptr(n.xptr), cuda.Ptr(n.xidx), cuda.Ptr(n.xval), cuda.Ptr(w), cuda.Ptr(b), cuda.Ptr(dst))
		default:
			if err = g.Launch(n.k.broadcast, grid(rows*l.Out, threads), cuda.D1(threads), cuda.I32(rows), cuda.I32(l.Out), cuda.Ptr(b), cuda.Ptr(dst)); err != nil {
				return err
			}
			if l.Transposed {
				err = g.Gemm(false, true, rows, l.Out, l.In, 1, n.acts[i-1], l.In, w, l.In, 1, dst, l.Out)
			} else {
				err = g.Gemm(false, false, rows, l.Out, l.In, 1, n.acts[i-1], l.In, w, l.Out, 1, dst, l.Out)
			}
		}
		if err != nil {
			return err
		}
		if i < len(n.acts) {
			if err := g.Launch(n.k.relu, grid(rows*l.Out, threads), cuda.D1(threads), cuda.I32(rows*l.Out), cuda.Ptr(dst)); err != nil {
				return err
			}
			if n.dropped {
				mask := n.host.mask[:rows*l.Out]
				n.dropout.Mask(mask)
				if err := cuda.CopyIn(g, n.masks[i], mask); err != nil {
					return err
				}
				if err := g.Launch(n.k.mul, grid(rows*l.Out, threads), cuda.D1(threads), cuda.I32(rows*l.Out), cuda.Ptr(dst), cuda.Ptr(n.masks[i])); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Gradient computes the gradient of the loaded batch's mean loss at the
// replica's parameters into its gradient buffer (GradientOut reads it)
// and returns that loss, as model.Workspace.Gradient does (with dropout,
// when set).
func (n *Net) Gradient() (float64, error) { return n.step(nil) }

// Step trains on the loaded batch: the gradient, then u applied to the
// replica's parameters with the optimizer's state kept on the GPU (u's M
// and V are not read), as model.Workspace.Step does; it returns the mean
// loss before the update. Under plain SGD without decay, the first
// layer's weights change on the batch's features only (a zero gradient
// leaves a weight as it is), and its gradient is not written.
func (n *Net) Step(u *kernel.Update) (float64, error) {
	if u == nil || !(u.LR > 0) {
		return 0, fmt.Errorf("gpu: a step needs an update with a positive rate")
	}
	if u.Rule != kernel.SGDRule && n.om.Len == 0 {
		var err error
		if n.om, err = n.g.Alloc(n.p.Len); err == nil {
			n.ov, err = n.g.Alloc(n.p.Len)
		}
		for _, b := range []cuda.Buffer{n.om, n.ov} {
			if err == nil {
				err = n.g.Fill(b, 0)
			}
		}
		if err != nil {
			return 0, fmt.Errorf("gpu: the optimizer's state: %w", err)
		}
	}
	return n.step(u)
}

// step is Gradient (u nil), or Step.
func (n *Net) step(u *kernel.Update) (float64, error) {
	sparseSGD := u != nil && u.Rule == kernel.SGDRule && u.WD == 0
	var loss float64
	err := n.g.Do(func() error {
		if err := n.forward(true); err != nil {
			return err
		}
		g, rows := n.g, n.rows
		cfg := n.m.Config()
		if rows > 0 {
			scale := 1 / float32(rows)
			if err := g.Launch(n.k.xent, cuda.D1(rows), cuda.D1(threads), cuda.I32(cfg.Outputs), cuda.Ptr(n.yptr), cuda.Ptr(n.yidx),
				cuda.F32(scale), cuda.I32(1), cuda.Ptr(n.out), cuda.Ptr(n.loss)); err != nil {
				return err
			}
		}
		layers := n.m.Layers()
		up := n.out
		for i := len(layers) - 1; i >= 0; i-- {
			l := layers[i]
			gw, gb := n.grad.Slice(l.W, l.B), n.grad.Slice(l.B, l.B+l.Out)
			if err := g.Launch(n.k.sumRows, grid(l.Out, threads), cuda.D1(threads), cuda.I32(rows), cuda.I32(l.Out), cuda.Ptr(up), cuda.Ptr(gb)); err != nil {
				return err
			}
			if i == 0 {
				if !sparseSGD {
					if err := g.Fill(gw, 0); err != nil {
						return err
					}
				}
				if n.features == 0 {
					break
				}
				// Plain SGD updates the weights' rows in place; otherwise
				// their gradient is written.
				lr, dst := float32(0), gw
				if sparseSGD {
					lr, dst = u.LR, n.p.Slice(l.W, l.B)
				}
				if err := g.Launch(n.k.spmmT, cuda.D1(n.features), cuda.D1(min(threads, l.Out)), cuda.I32(l.Out), cuda.F32(lr),
					cuda.Ptr(n.feat), cuda.Ptr(n.fptr), cuda.Ptr(n.frow), cuda.Ptr(n.fval), cuda.Ptr(up), cuda.Ptr(dst)); err != nil {
					return err
				}
				break
			}
			in, down, w := n.acts[i-1], n.dact[i-1], n.p.Slice(l.W, l.B)
			var err error
			if l.Transposed {
				if err = g.Gemm(true, false, l.Out, l.In, rows, 1, up, l.Out, in, l.In, 0, gw, l.In); err == nil {
					err = g.Gemm(false, false, rows, l.In, l.Out, 1, up, l.Out, w, l.In, 0, down, l.In)
				}
			} else {
				if err = g.Gemm(true, false, l.In, l.Out, rows, 1, in, l.In, up, l.Out, 0, gw, l.Out); err == nil {
					err = g.Gemm(false, true, rows, l.In, l.Out, 1, up, l.Out, w, l.Out, 0, down, l.In)
				}
			}
			if err != nil {
				return err
			}
			if err := g.Launch(n.k.reluGrad, grid(rows*l.In, threads), cuda.D1(threads), cuda.I32(rows*l.In), cuda.Ptr(down), cuda.Ptr(in)); err != nil {
				return err
			}
			if n.dropped {
				// Survivors' gradients scaled as their activations were
				// (the dropped read zero already).
				if err := g.Launch(n.k.mul, grid(rows*l.In, threads), cuda.D1(threads), cuda.I32(rows*l.In), cuda.Ptr(down), cuda.Ptr(n.masks[i-1])); err != nil {
					return err
				}
			}
			up = down
		}
		if u != nil {
			// Everything, or everything but the first layer's weights,
			// updated above.
			from := 0
			if sparseSGD {
				from = layers[0].B
			}
			p, gr, m, v := n.p.Slice(from, n.p.Len), n.grad.Slice(from, n.grad.Len), n.om, n.ov
			if m.Len > 0 {
				m, v = m.Slice(from, m.Len), v.Slice(from, v.Len)
			}
			if err := g.Launch(n.k.update, grid(p.Len, threads), cuda.D1(threads), cuda.I32(p.Len), cuda.I32(int(u.Rule)),
				cuda.F32(u.LR), cuda.F32(u.WD), cuda.F32(u.Mu), cuda.F32(u.Beta1), cuda.F32(u.Beta2), cuda.F32(u.Eps), cuda.F32(u.C2),
				cuda.Ptr(p), cuda.Ptr(gr), cuda.Ptr(m), cuda.Ptr(v)); err != nil {
				return err
			}
		}
		if rows == 0 {
			return nil
		}
		if err := cuda.CopyOut(g, n.host.loss[:rows], n.loss); err != nil {
			return err
		}
		for _, v := range n.host.loss[:rows] {
			loss += float64(v)
		}
		loss /= float64(rows)
		return nil
	})
	return loss, err
}

// Predict writes the logits of the loaded batch's rows into z (rows ×
// outputs).
func (n *Net) Predict(z []float32) error {
	want := n.rows * n.m.Config().Outputs
	if len(z) != want {
		return fmt.Errorf("gpu: %d logits for a batch of %d", len(z), want)
	}
	return n.g.Do(func() error {
		if err := n.forward(false); err != nil {
			return err
		}
		return cuda.CopyOut(n.g, z, n.out)
	})
}
