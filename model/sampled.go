package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/lsh"
	"github.com/hetsgd/hetsgd/sparse"
)

// Sampled trains a label-major network whose output layer is computed, for
// each point, on an active set of labels only (SLIDE's sampled softmax): the
// point's labels, the labels whose weight rows its hidden vector retrieves
// from the hash tables, and random ones, a fixed number in all. The softmax
// and its cross-entropy run over the active set; the gradient reaches the
// active rows only.
//
// With every label active (a Sampler whose size is the label count) the
// loss and gradient are the dense layer's. The hash tables are the
// caller's: they index the output layer's rows as they were when last
// built, and stale tables cost only the quality of the retrieval.
//
// Step updates only the rows a batch touches, in the first layer (its
// points' features) and the output layer (its active labels), whatever the
// rule: for Adam the moments of the other rows wait until their rows are
// touched again (lazy Adam, as a sparse Adam does). SLIDE's code runs
// Adam over every weight after each batch, which at 670,091 labels costs
// more than the sampled layer itself.
type Sampled struct {
	ws    *Workspace
	s     *lsh.Sampler
	start []int     // row i's active set is act[start[i]:start[i+1]]
	act   []int32   // the batch's active sets, back to back
	z     []float32 // their logits, then the loss's gradient
	union []int32   // the output rows the batch touches
	mark  []uint32  // mark[k] == stamp: row k is in union
	stamp uint32
}

// NewSampled returns the buffers of a sampled pass over batches of up to
// maxRows points, with active sets from s (whose index covers the output
// layer's rows).
func (m *MLP) NewSampled(maxRows int, s *lsh.Sampler) (*Sampled, error) {
	last := m.layers[len(m.layers)-1]
	if !last.Transposed {
		return nil, fmt.Errorf("model: a sampled output layer needs a label-major network")
	}
	size := s.Size()
	return &Sampled{ws: m.NewWorkspace(maxRows), s: s, start: make([]int, maxRows+1),
		act: make([]int32, 0, maxRows*size), z: make([]float32, maxRows*size),
		union: make([]int32, 0, min(maxRows*size, last.Out)), mark: make([]uint32, last.Out)}, nil
}

// Workspace is the workspace of the hidden layers (dropout, evaluation).
func (s *Sampled) Workspace() *Workspace { return s.ws }

// Active returns the active set of point i of the last batch (empty for a
// point without labels, which has neither loss nor gradient).
func (s *Sampled) Active(i int) []int32 { return s.act[s.start[i]:s.start[i+1]] }

// Gradient writes into g the gradient of the mean sampled loss over the
// batch and returns that loss; every element of g is written.
func (s *Sampled) Gradient(p, g []float32, x, y *sparse.CSR) float64 {
	return s.train(p, g, x, y, nil)
}

// Step trains on one batch and updates the rows it touches with u; g's
// values outside those rows are left unspecified. It returns the mean
// sampled loss before the update.
func (s *Sampled) Step(p, g []float32, x, y *sparse.CSR, u *kernel.Update) float64 {
	return s.train(p, g, x, y, u)
}

func (s *Sampled) train(p, g []float32, x, y *sparse.CSR, u *kernel.Update) float64 {
	w := s.ws
	m := w.m
	m.check(g, "gradient")
	last := len(m.layers) - 1
	l := m.layers[last]
	w.forward(p, x, true, last)
	w.checkLabels(y)
	n := x.Rows
	h, dh := w.acts[last-1], w.dact[last-1]
	wt, b := p[l.W:l.B], p[l.B:l.B+l.Out]
	gw, gb := g[l.W:l.B], g[l.B:l.B+l.Out]
	scale := float32(0)
	if n > 0 {
		scale = 1 / float32(n)
	}

	// Each point's active set, its logits, and the loss's gradient in
	// their place.
	s.act, s.start[0] = s.act[:0], 0
	var total float64
	for i := range n {
		labels, _ := y.Row(i)
		if len(labels) == 0 {
			s.start[i+1] = len(s.act) // no loss, no gradient: no active set
			continue
		}
		room := max(s.s.Size(), len(labels))
		if cap(s.act)-len(s.act) < room { // more labels than the set's size
			s.act = slices.Grow(s.act, room)
		}
		got := s.s.Active(s.act[len(s.act):len(s.act)], h[i*l.In:(i+1)*l.In], labels)
		lo := len(s.act)
		s.act = s.act[:lo+len(got)]
		s.start[i+1] = len(s.act)
		if len(s.z) < len(s.act) {
			s.z = append(s.z, make([]float32, len(s.act)-len(s.z))...)
		}
		z := s.z[lo:len(s.act)]
		kernel.RowDots(z, wt, got, h[i*l.In:(i+1)*l.In])
		for j, k := range got {
			z[j] += b[k]
		}
		total += xent(z, len(labels), scale)
	}

	// The output layer's gradient, on the rows the batch touches (all of
	// it when no update follows, for g must hold the whole gradient), and
	// the gradient with respect to the hidden layer, from the weights
	// before any update.
	s.listUnion()
	if u == nil {
		clear(gw)
		clear(gb)
	} else {
		for _, k := range s.union {
			clear(gw[int(k)*l.In : int(k+1)*l.In])
			gb[k] = 0
		}
	}
	for i := range n {
		act, z := s.Active(i), s.z[s.start[i]:s.start[i+1]]
		kernel.AxpyRows(gw, act, z, h[i*l.In:(i+1)*l.In])
		for j, k := range act {
			gb[k] += z[j]
		}
		d := dh[i*l.In : (i+1)*l.In]
		clear(d)
		kernel.RowsAxpy(d, wt, act, z)
	}
	w.sparse = u != nil
	w.backward(p, g, x, last-1, w.hiddenGrad(last-1))
	if u != nil {
		l0 := m.layers[0]
		kernel.ApplyUpdateRows(p[l0.W:l0.B], g[l0.W:l0.B], u, l0.W, w.touched, l0.Out)
		kernel.ApplyUpdate(p[l0.B:l.W], g[l0.B:l.W], u, l0.B)
		kernel.ApplyUpdateRows(wt, gw, u, l.W, s.union, l.In)
		kernel.ApplyUpdateRows(b, gb, u, l.B, s.union, 1)
		w.sparse = false
	}
	if n == 0 {
		return 0
	}
	return total / float64(n)
}

// listUnion lists the distinct rows of the batch's active sets in union.
func (s *Sampled) listUnion() {
	s.stamp++
	if s.stamp == 0 { // wrapped: forget every old stamp
		clear(s.mark)
		s.stamp = 1
	}
	s.union = s.union[:0]
	for _, k := range s.act {
		if s.mark[k] != s.stamp {
			s.mark[k] = s.stamp
			s.union = append(s.union, k)
		}
	}
}

// xent is the cross-entropy of the logits z of an active set against the
// uniform target over its first k rows (the point's labels), and turns z
// into scale times the gradient: scale·(softmax(z) − t).
func xent(z []float32, k int, scale float32) float64 {
	mx := float32(math.Inf(-1))
	for _, v := range z {
		mx = max(mx, v)
	}
	var sum float64
	for _, v := range z {
		sum += math.Exp(float64(v - mx))
	}
	lse := float64(mx) + math.Log(sum)
	var loss float64
	for _, v := range z[:k] {
		loss += lse - float64(v)
	}
	t := 1 / float32(k)
	for j, v := range z {
		q := float32(math.Exp(float64(v) - lse))
		if j < k {
			q -= t
		}
		z[j] = scale * q
	}
	return loss / float64(k)
}
