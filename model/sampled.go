package model

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/lsh"
	"github.com/hetsgd/hetsgd/sparse"
)

// Sampled trains a label-major network whose output layer is computed, for
// each point, on an active set of labels only (SLIDE's sampled softmax):
// the point's own rows — its labels and the rows its hidden vector
// retrieves from the hash tables — and a set of random rows that every
// point of the batch shares. The softmax and its cross-entropy run over the
// active set; the gradient reaches the active rows only.
//
// The shared random rows are SLIDE's random fill made one draw a batch:
// SLIDE pads each point's set from a random offset into a shuffled list of
// the labels, and reseeds that offset from the clock at every point, so the
// points of a batch get nearly the same padding anyway. Shared, they make
// one small product with the batch's hidden vectors (a GEMM) where separate
// fills would visit a new row for every point and touch most of the layer
// in every batch.
//
// With every label active (a fill of at least the label count) the loss
// and gradient are the dense layer's. The hash tables are the caller's:
// they index the output layer's rows as they were when last built, and
// stale tables cost only the quality of the retrieval.
//
// Step updates only the rows a batch touches, in the first layer (its
// points' features) and the output layer (its active rows), whatever the
// rule: for Adam the moments of the other rows wait until their rows are
// touched again (lazy Adam, as a sparse Adam does). SLIDE's code runs Adam
// over every weight after each batch, which at 670,091 labels costs more
// than the sampled layer itself. Step is lazy where a device steps on its
// own batch (elastic, adaptive, CROSSBOW); a strategy that all-reduces
// gradients takes Gradient, and applies their sum lazily too, to the union
// of the rows the devices' batches touched (AppendLast, ApplyRows).
type Sampled struct {
	ws    *Workspace
	s     *lsh.Sampler
	o     SampledOptions
	fill  int       // shared random rows a batch
	start []int     // point i's own rows are own[start[i]:end[i]], in a slot
	end   []int     // that ends at start[i+1]
	own   []int32   // the batch's own rows, a slot a point
	zOwn  []float32 // their logits, then the loss's gradient
	nlab  []int     // the labels at the head of point i's own rows
	loss  []float64 // point i's loss
	nOwn  int       // own rows in all
	// forks retrieve for the parts of a batch side by side (lsh.Sampler.Fork),
	// one a part; pass is the parallel phases' task.
	forks []*lsh.Sampler
	pass  sampledPass
	ids   []int32   // the shared rows: the batch's labels (with Labels), then random ones
	draw  []int32   // the random rows drawn for a batch
	pos   []int32   // pos[k]: row k's place in ids, −1 when not shared
	wf    []float32 // the shared rows' weights, then their gradient (a row each)
	bf    []float32 // the shared rows' biases, then their gradient
	zf    []float32 // every point's logits of the shared rows, then gradient
	union []int32   // the output rows the batch touches
	prev  []int32   // the last batch's, while this one's replaces them
	// kept is KeepZeros's word for the next pass; clean is the gradient
	// buffer the last pass left zero outside its union (a pass that
	// computed the whole gradient), nil when it did not.
	kept  bool
	clean *float32
	// lazyN is the parameters the last lazy update changed (a lazy Step,
	// or ApplyRows), 0 after a Gradient.
	lazyN int
	// markIn and markOut are ApplyRows's rows of the first and the
	// output layer, apart from the batch's own (the workspace's touched
	// and union), which AppendLast reads.
	markIn, markOut []int32
	mark            []uint32 // mark[k] == stamp: row k is in union
	stamp           uint32
	shift           []float32 // −log π_k, the correction's per label (Labels and Correct)
}

// SampledOptions shape a sampled pass.
type SampledOptions struct {
	// Fill is the random rows every point of a batch shares.
	Fill int
	// Pad fills each point's own rows, when retrieval gives fewer, with
	// random rows of its own up to Pad: SLIDE's code pads a point's set
	// (0: no padding).
	Pad int
	// Dense updates every weight after each batch, as SLIDE's code runs
	// Adam (false: only the rows the batch touches, lazily).
	Dense bool
	// Correct makes the shared rows stand for every label outside a
	// point's own rows: each shared logit gains log(m/f), m those labels
	// and f the shared rows among them, so that the softmax's normalizer is
	// an unbiased estimate of the full one (the sampled softmax's
	// correction for a uniform sample; 0 when every label is active). With
	// Labels the shared rows are no uniform sample: Inclusion gives each
	// label's probability π_k of being among a point's shared rows, and a
	// shared row's logit gains −log π_k instead (the same estimate for a
	// sample of unequal probabilities).
	Correct bool
	// Labels adds the batch's labels to its shared rows, ahead of the
	// random ones: each point's softmax then holds every other point's
	// labels as negatives (in-batch negatives), so a label is pushed down
	// in the batches that push it up, as the full softmax pushes it on
	// every point without it. Frequent labels are then shared more often
	// than rare ones, which Correct with Inclusion accounts for.
	Labels bool
	// Inclusion is π_k for every label k, with Labels and Correct.
	Inclusion []float32
	// BatchLabels sizes the shared rows' buffers for a batch of up to this
	// many labels, with Labels (a batch with more grows them once).
	BatchLabels int
}

// NewSampled returns the buffers of a sampled pass over batches of up to
// maxRows points, each point's own rows from s.
func (m *MLP) NewSampled(maxRows int, s *lsh.Sampler, o SampledOptions) (*Sampled, error) {
	fill := o.Fill
	last := m.layers[len(m.layers)-1]
	switch {
	case !last.Transposed:
		return nil, fmt.Errorf("model: a sampled output layer needs a label-major network")
	case s.Rows() != last.Out:
		return nil, fmt.Errorf("model: a sampler over %d rows for an output layer of %d", s.Rows(), last.Out)
	case fill < 0 || o.Pad < 0:
		return nil, fmt.Errorf("model: %d shared rows and padding to %d: need at least 0", fill, o.Pad)
	case o.Labels && o.Correct && len(o.Inclusion) != last.Out:
		return nil, fmt.Errorf("model: the sampled softmax's correction over the batch's labels needs the inclusion probability of each of the %d labels, got %d", last.Out, len(o.Inclusion))
	}
	var shift []float32 // −log π_k
	if o.Labels && o.Correct {
		shift = make([]float32, last.Out)
		for k, pi := range o.Inclusion {
			if !(pi > 0 && pi <= 1) {
				return nil, fmt.Errorf("model: label %d's inclusion probability %v: need a number in (0, 1]", k, pi)
			}
			shift[k] = float32(-math.Log(float64(pi)))
		}
		o.Inclusion = nil // the caller's; shift holds what the pass needs
	}
	fill = min(fill, last.Out)
	o.Pad = min(o.Pad, last.Out)
	shared := fill // the shared rows' buffers
	if o.Labels {
		shared = min(fill+max(o.BatchLabels, 0), last.Out)
	}
	size := max(s.Size(), o.Pad)
	pos := make([]int32, last.Out)
	for i := range pos {
		pos[i] = -1
	}
	workers := kernel.Default().Workers()
	forks := make([]*lsh.Sampler, 0, workers)
	for range workers {
		forks = append(forks, s.Fork())
	}
	return &Sampled{ws: m.NewWorkspace(maxRows), s: s, o: o, fill: fill, start: make([]int, maxRows+1), end: make([]int, maxRows),
		own: make([]int32, 0, maxRows*size), zOwn: make([]float32, maxRows*size), nlab: make([]int, maxRows), loss: make([]float64, maxRows), forks: forks,
		ids: make([]int32, 0, shared), draw: make([]int32, 0, fill), pos: pos, wf: make([]float32, shared*last.In), bf: make([]float32, shared), zf: make([]float32, maxRows*shared),
		union: make([]int32, 0, min(maxRows*size+fill, last.Out)), prev: make([]int32, 0, min(maxRows*size+fill, last.Out)),
		mark: make([]uint32, last.Out), shift: shift}, nil
}

// SampledBytes estimates the memory of NewSampled beyond its workspace's,
// for own rows of at most size a point and fill shared rows (with Labels,
// the random ones and BatchLabels), and a fork of the sampler for each of
// workers parts of a batch, each as big as forkBytes.
func (m *MLP) SampledBytes(maxRows, size, fill, workers int, forkBytes int64) int64 {
	last := m.layers[len(m.layers)-1]
	r, sz, f := int64(maxRows), int64(size), int64(min(fill, last.Out))
	return 32*r + 8*r*sz + 8*f + 4*int64(last.Out)*3 + 4*f*int64(last.In) + 4*r*f + int64(max(workers, 1))*forkBytes
}

// Workspace is the workspace of the hidden layers (dropout, evaluation).
func (s *Sampled) Workspace() *Workspace { return s.ws }

// Own returns point i's own rows in the last batch: its labels, then the
// rows the tables retrieved for it, then its padding (none for a point
// without labels, which has neither loss nor gradient).
func (s *Sampled) Own(i int) []int32 { return s.own[s.start[i]:s.end[i]] }

// Shared returns the last batch's shared rows: its labels with Labels,
// then the random ones.
func (s *Sampled) Shared() []int32 { return s.ids }

// Gradient writes into g the gradient of the mean sampled loss over the
// batch and returns that loss; every element of g is written (those of
// the output layer that are zero already, after KeepZeros, are left).
func (s *Sampled) Gradient(p, g []float32, x, y *sparse.CSR) float64 {
	s.lazyN = 0
	loss := s.train(p, g, x, y, nil)
	if !s.o.Dense {
		s.ws.listTouched(x) // AppendLast's first-layer rows
	}
	return loss
}

// KeepZeros vouches, for the next Gradient (or Step with Dense), that g is
// the buffer the last one wrote and that nothing has written into it
// since: its output layer is then zero outside the rows that pass
// touched, and the pass clears those rows only rather than the whole
// layer (343 MB a batch at the Amazon-670K shape). A Step in between
// (which leaves g unspecified outside its rows) or another buffer makes
// the pass clear the whole layer, as without it.
func (s *Sampled) KeepZeros() { s.kept = true }

// Step trains on one batch and updates the rows it touches with u (every
// weight, with Dense); g's values outside those rows are left unspecified.
// It returns the mean sampled loss before the update.
func (s *Sampled) Step(p, g []float32, x, y *sparse.CSR, u *kernel.Update) float64 {
	if s.o.Dense {
		loss := s.train(p, g, x, y, nil)
		kernel.ApplyUpdate(p, g, u, 0)
		return loss
	}
	loss := s.train(p, g, x, y, u)
	m := s.ws.m
	l0, l := m.layers[0], m.layers[len(m.layers)-1]
	s.lazyN = len(s.ws.touched)*l0.Out + (l.W - l0.B) + len(s.union)*(l.In+1)
	return loss
}

func (s *Sampled) train(p, g []float32, x, y *sparse.CSR, u *kernel.Update) float64 {
	w := s.ws
	m := w.m
	m.check(g, "gradient")
	last := len(m.layers) - 1
	l := m.layers[last]
	w.forward(p, x, true, last)
	w.checkLabels(y)
	n, in := x.Rows, l.In
	h, dh := w.acts[last-1], w.dact[last-1]
	wt, b := p[l.W:l.B], p[l.B:l.B+l.Out]
	gw, gb := g[l.W:l.B], g[l.B:l.B+l.Out]
	scale := float32(0)
	if n > 0 {
		scale = 1 / float32(n)
	}

	// The shared rows and every point's logits of them.
	s.ids = s.ids[:0]
	if s.o.Labels {
		s.share(y.Indices[y.Indptr[0]:y.Indptr[n]])
	}
	s.draw = s.s.Fill(s.draw, s.fill)
	s.share(s.draw)
	f := len(s.ids)
	if len(s.bf) < f { // more labels in a batch than ever before
		s.wf = make([]float32, f*in)
		s.bf = make([]float32, f)
		s.zf = make([]float32, w.max*f)
	}
	for j, k := range s.ids {
		copy(s.wf[j*in:(j+1)*in], wt[int(k)*in:int(k+1)*in])
		s.bf[j] = b[k]
		if s.shift != nil {
			// The correction is the same for every point: it joins the
			// bias in the shared logits (the gradient is the logits').
			s.bf[j] += s.shift[k]
		}
	}
	zf := s.zf[:n*f]
	if f > 0 {
		// As the dense layer's forward: the biases, then the product.
		kernel.Broadcast(zf, n, f, s.bf)
		kernel.Gemm(false, true, n, f, in, 1, h, in, s.wf, in, 1, zf, f)
	}

	// Each point's slot of own rows: room for its labels, its retrieval
	// and its padding, so that the points are retrieved side by side.
	s.start[0] = 0
	for i := range n {
		room := 0
		if k := y.RowNNZ(i); k > 0 {
			room = max(s.s.Size(), k, s.o.Pad)
		}
		s.start[i+1] = s.start[i] + room
	}
	if size := s.start[n]; cap(s.own) < size {
		s.own = slices.Grow(s.own[:0], size) // more labels than the budget
	}
	s.own = s.own[:s.start[n]]
	if len(s.zOwn) < len(s.own) {
		s.zOwn = append(s.zOwn, make([]float32, len(s.own)-len(s.zOwn))...)
	}

	// Each point's own rows and their logits; the loss over own and shared
	// rows together, and its gradient in the logits' place. Padding draws
	// from the sampler's one stream, point after point, between
	// retrieval and logits.
	t := &s.pass
	*t = sampledPass{s: s, h: h, wt: wt, b: b, zf: zf, y: y, in: in, f: f, out: l.Out, scale: scale}
	parts := min(kernel.Default().Workers(), n)
	for len(s.forks) < parts {
		s.forks = append(s.forks, s.s.Fork()) // a pool grown since NewSampled
	}
	if s.o.Pad > 0 {
		s.run(passRetrieve, parts)
		for i := range n {
			if s.start[i] < s.end[i] && s.end[i]-s.start[i] < s.o.Pad {
				s.end[i] = s.start[i] + len(s.s.PadRows(s.own[s.start[i]:s.end[i]:s.start[i+1]], s.o.Pad))
			}
		}
		s.run(passLogits, parts)
	} else {
		s.run(passForward, parts)
	}
	var total float64
	s.nOwn = 0
	for i := range n {
		total += s.loss[i]
		s.nOwn += s.end[i] - s.start[i]
	}

	// The gradient with respect to the hidden layer, from the weights
	// before any update, then the output layer's gradient on the rows the
	// batch touches (all of it when no update follows, for g must then hold
	// the whole gradient: the last pass's rows cleared when the rest is
	// known to be zero, KeepZeros, the whole layer otherwise).
	s.listUnion()
	zeros := u == nil && s.kept && len(g) > 0 && s.clean == &g[0]
	s.kept, s.clean = false, nil
	t.dh, t.gw, t.gb, t.whole, t.prev, t.one[0] = dh, gw, gb, u == nil && !zeros, zeros, 1
	s.run(passHidden, parts)
	if f > 0 {
		kernel.Gemm(false, false, n, in, f, 1, zf, f, s.wf, in, 1, dh, in)
		kernel.Gemm(true, false, f, in, n, 1, zf, f, h, in, 0, s.wf, in) // wf, bf: the shared rows' gradient
		kernel.SumRows(s.bf, zf, n, f)
	}
	s.run(passRows, kernel.Default().Workers())
	*t = sampledPass{}
	if u == nil && len(g) > 0 {
		s.clean = &g[0] // zero outside the union
	}
	w.sparse = u != nil
	w.backward(p, g, x, last-1, w.hiddenGrad(last-1))
	if u != nil {
		l0 := m.layers[0]
		kernel.ApplyUpdateRows(p[l0.W:l0.B], g[l0.W:l0.B], u, l0.W, w.touched, l0.Out)
		kernel.ApplyUpdate(p[l0.B:l.W], g[l0.B:l.W], u, l0.B)
		kernel.ApplyUpdateRows(wt, gw, u, l.W, s.union, in)
		kernel.ApplyUpdateRows(b, gb, u, l.B, s.union, 1)
		w.sparse = false
	}
	if n == 0 {
		return 0
	}
	return total / float64(n)
}

// run runs phase of the sampled pass in parts on the kernels' pool.
func (s *Sampled) run(phase passPhase, parts int) {
	s.pass.phase = phase
	s.pass.next.Store(0)
	// A few points at a time, at least 8 claims a part: the cost of a
	// claim is nothing beside a point's, and small claims even out the
	// parts.
	s.pass.chunk = min(max(s.ws.rows/(8*max(parts, 1)), 1), 4)
	kernel.Default().Run(&s.pass, parts)
}

// passPhase is a phase of the sampled pass that runs in parallel.
type passPhase uint8

const (
	passRetrieve passPhase = iota // each point's own rows
	passLogits                    // their logits, the loss and its gradient
	passForward                   // both, when no padding comes between
	passHidden                    // each point's gradient of the hidden layer
	passRows                      // the output layer's gradient, a range of rows a part
)

// sampledPass is a phase of Sampled.train over the points of a batch (or,
// for passRows, over the output layer's rows), each point's work its own:
// a point's slot of own rows, its logits, loss and row of dh. Parts claim
// points a few at a time, so that a part held up (by another goroutine on
// its core) leaves the rest to the others. Every value is what the serial
// loop would compute, whatever the number of parts: no point's work reads
// another's, and passRows sums each row's terms in the points' order.
type sampledPass struct {
	s                        *Sampled
	phase                    passPhase
	h, wt, b, zf, dh, gw, gb []float32
	y                        *sparse.CSR
	in, f, out               int
	scale                    float32
	whole                    bool // clear all of gw and gb, not only the union's rows
	prev                     bool // and the last batch's rows (KeepZeros)
	next                     atomic.Int64
	chunk                    int // points a part claims at a time
	one                      [1]float32
}

func (t *sampledPass) Part(part, parts int) {
	if t.phase == passRows {
		t.rows(part, parts)
		return
	}
	n := t.s.ws.rows
	for {
		lo := int(t.next.Add(int64(t.chunk))) - t.chunk
		if lo >= n {
			return
		}
		for i := lo; i < min(lo+t.chunk, n); i++ {
			switch t.phase {
			case passRetrieve:
				t.retrieve(part, i)
			case passLogits:
				t.logits(i)
			case passForward:
				t.retrieve(part, i)
				t.logits(i)
			case passHidden:
				s := t.s
				dhi := t.dh[i*t.in : (i+1)*t.in]
				clear(dhi)
				kernel.RowsAxpy(dhi, t.wt, s.Own(i), s.zOwn[s.start[i]:s.end[i]])
			}
		}
	}
}

// retrieve lists point i's own rows with the part's fork of the sampler.
func (t *sampledPass) retrieve(part, i int) {
	s := t.s
	labels, _ := t.y.Row(i)
	lo := s.start[i]
	if len(labels) == 0 {
		s.end[i] = lo // no loss, no gradient
		return
	}
	fork := s.forks[part]
	// The slot's capacity ends where the next point's starts: the budget
	// and the labels fit in it (Retrieve returns no more).
	got := fork.Retrieve(s.own[lo:lo:s.start[i+1]], t.h[i*t.in:(i+1)*t.in], labels)
	s.end[i] = lo + len(got)
	s.nlab[i] = fork.Labels()
}

// logits computes point i's logits of its own rows, masks its own rows
// among the shared ones, and leaves in their place the gradient of its
// loss, which it keeps in s.loss.
func (t *sampledPass) logits(i int) {
	s := t.s
	zi := t.zf[i*t.f : (i+1)*t.f]
	s.loss[i] = 0
	if s.start[i] == s.end[i] {
		clear(zi) // no labels: no loss, no gradient
		return
	}
	got := s.Own(i)
	z := s.zOwn[s.start[i]:s.end[i]]
	kernel.RowDots(z, t.wt, got, t.h[i*t.in:(i+1)*t.in])
	shared := t.f // shared rows that are not the point's own
	for j, k := range got {
		z[j] += t.b[k]
		if at := s.pos[k]; at >= 0 {
			zi[at] = float32(math.Inf(-1)) // counted once, as an own row
			shared--
		}
	}
	if s.shift == nil && s.o.Correct && shared > 0 {
		c := float32(math.Log(float64(t.out-len(got)) / float64(shared)))
		for j := range zi {
			zi[j] += c // −∞ stays −∞
		}
	}
	s.loss[i] = kernel.SoftmaxXentSplit(z, zi, s.nlab[i], t.scale)
}

// clearRows clears the output layer's gradient on the listed rows in
// [lo, hi).
func (t *sampledPass) clearRows(rows []int32, lo, hi int32) {
	in := t.in
	for _, k := range rows {
		if k >= lo && k < hi {
			clear(t.gw[int(k)*in : int(k+1)*in])
			t.gb[k] = 0
		}
	}
}

// rows accumulates the output layer's gradient on part's range of its
// rows: the points' own terms, point after point, then the shared rows'.
func (t *sampledPass) rows(part, parts int) {
	s := t.s
	in := t.in
	lo, hi := int32(part*t.out/parts), int32((part+1)*t.out/parts)
	if t.whole {
		clear(t.gw[int(lo)*in : int(hi)*in])
		clear(t.gb[lo:hi])
	} else if t.prev {
		// KeepZeros: g is zero outside the last pass's rows, so clearing
		// those zeroes all of it, this batch's rows included.
		t.clearRows(s.prev, lo, hi)
	} else {
		t.clearRows(s.union, lo, hi) // a Step's: g is unspecified outside its rows
	}
	for i := range s.ws.rows {
		own, z := s.Own(i), s.zOwn[s.start[i]:s.end[i]]
		kernel.AxpyRowsIn(t.gw, own, z, t.h[i*in:(i+1)*in], lo, hi)
		for j, k := range own {
			if k >= lo && k < hi {
				t.gb[k] += z[j]
			}
		}
	}
	for j, k := range s.ids {
		if k >= lo && k < hi {
			kernel.AxpyRowsIn(t.gw, s.ids[j:j+1], t.one[:], s.wf[j*in:(j+1)*in], lo, hi)
			t.gb[k] += s.bf[j]
			s.pos[k] = -1
		}
	}
}

// MaskLen is the number of rows AppendLast and ApplyRows number: the
// first layer's rows (a feature each) are 0 to its inputs − 1, the output
// layer's (a label each) follow.
func (s *Sampled) MaskLen() int { return MaskLen(s.ws.m) }

// MaskLen is what Sampled.MaskLen returns for a sampled layer over m, for
// those that size its rows before one is made.
func MaskLen(m *MLP) int { return m.layers[0].In + m.layers[len(m.layers)-1].Out }

// AppendLast appends to rows the rows the last Gradient touched, each
// once, numbered as MaskLen says: the first layer's rows of its batch's
// features, then the output layer's active rows.
func (s *Sampled) AppendLast(rows []int32) []int32 {
	rows = append(rows, s.ws.touched...)
	in := int32(s.ws.m.layers[0].In)
	for _, k := range s.union {
		rows = append(rows, in+k)
	}
	return rows
}

// LastRows returns the rows AppendLast appends — the last batch's features
// and its output rows — for a checkpoint to keep (the worker's batch is
// not kept); SetLastRows restores them.
func (s *Sampled) LastRows() (features, labels []int32) { return s.ws.touched, s.union }

// SetLastRows makes features and labels the rows AppendLast appends.
func (s *Sampled) SetLastRows(features, labels []int32) {
	s.ws.touched = append(s.ws.touched[:0], features...)
	s.union = append(s.union[:0], labels...)
	s.clean = nil
}

// ApplyRows applies u as Step would have to rows (distinct, in any order,
// numbered as MaskLen says) and to the hidden layers, which every batch
// touches. g holds the gradient: that of the last Gradient, or a weighted
// sum of several batches' gradients, each zero outside the rows its batch
// touched. So Gradient, AppendLast and ApplyRows are Step, bit for bit
// (each weight's update is its own, whatever the order of the rows), and a
// strategy that all-reduces several devices' gradients updates the union
// of the rows they touched, lazily, as one device stepping on the union of
// their batches would. The rows AppendLast appends stay the batch's.
func (s *Sampled) ApplyRows(p, g []float32, rows []int32, u *kernel.Update) {
	m := s.ws.m
	l0, l := m.layers[0], m.layers[len(m.layers)-1]
	if s.markIn == nil {
		// Sized once for every row: several batches' rows may exceed one
		// batch's room.
		s.markIn, s.markOut = make([]int32, 0, l0.In), make([]int32, 0, l.Out)
	}
	s.markIn, s.markOut = s.markIn[:0], s.markOut[:0]
	in := int32(l0.In)
	for _, r := range rows {
		if r < in {
			s.markIn = append(s.markIn, r)
		} else {
			s.markOut = append(s.markOut, r-in)
		}
	}
	kernel.ApplyUpdateRows(p[l0.W:l0.B], g[l0.W:l0.B], u, l0.W, s.markIn, l0.Out)
	kernel.ApplyUpdate(p[l0.B:l.W], g[l0.B:l.W], u, l0.B)
	kernel.ApplyUpdateRows(p[l.W:l.B], g[l.W:l.B], u, l.W, s.markOut, l.In)
	kernel.ApplyUpdateRows(p[l.B:l.B+l.Out], g[l.B:l.B+l.Out], u, l.B, s.markOut, 1)
	s.lazyN = len(s.markIn)*l0.Out + (l.W - l0.B) + len(s.markOut)*(l.In+1)
}

// Logits is the number of logits the last batch computed: each point's own
// rows and the batch's shared rows, for every point.
func (s *Sampled) Logits() int {
	return s.nOwn + s.ws.rows*len(s.ids)
}

// Touched is the number of parameters the last update changed lazily: a
// lazy Step's (the first layer's rows of the batch's features, the hidden
// layers, the output layer's active rows) or ApplyRows's (the rows it
// was given); 0 when the last batch updated every weight (Dense) or
// computed a Gradient only.
func (s *Sampled) Touched() int {
	if s.o.Dense {
		return 0
	}
	return s.lazyN
}

// share appends to the shared rows those of rows not among them yet.
func (s *Sampled) share(rows []int32) {
	for _, k := range rows {
		if s.pos[k] < 0 {
			s.pos[k] = int32(len(s.ids))
			s.ids = append(s.ids, k)
		}
	}
}

// listUnion lists the distinct rows of the batch's own and shared rows in
// union.
func (s *Sampled) listUnion() {
	s.stamp++
	if s.stamp == 0 { // wrapped: forget every old stamp
		clear(s.mark)
		s.stamp = 1
	}
	s.prev, s.union = s.union, s.prev[:0]
	for i := range s.ws.rows + 1 {
		rows := s.ids
		if i < s.ws.rows {
			rows = s.Own(i)
		}
		for _, k := range rows {
			if s.mark[k] != s.stamp {
				s.mark[k] = s.stamp
				s.union = append(s.union, k)
			}
		}
	}
}
