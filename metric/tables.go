package metric

import (
	"fmt"
	"slices"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/lsh"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/sparse"
)

// Tables is the approximate top-k of SLIDE's inference: a point's labels
// are ranked among the output rows that its last hidden vector retrieves
// from hash tables over the labels, not among all of them. A label no
// bucket of the point holds is never predicted for it.
type Tables struct {
	Family   lsh.Family // the tables' hash functions, over the last hidden layer's width
	Capacity int        // rows a bucket keeps
	Budget   int        // rows a point ranks at most, those in the most tables first
	Seed     uint64     // which rows a bucket keeps when more hash to it
}

// tableParts is the fixed number of parts a batch's points are scored in,
// each with a sampler of its own.
const tableParts = 4

// TablesBytes estimates the memory SetTables(t) allocates for networks of
// shape m, so that it can be refused before it is.
func TablesBytes(m *model.MLP, t Tables) int64 {
	l := m.Layers()[len(m.Layers())-1]
	b := lsh.Bytes(t.Family, l.Out)
	if !l.Transposed {
		b += 4 * int64(l.In) * int64(l.Out) // the rows, transposed
	}
	// Each part's sampler: a stamp and a hit count a row, its candidates,
	// and the budget's scores.
	cand := int64(t.Family.Tables()) * int64(min(t.Capacity, l.Out))
	return b + tableParts*(6*int64(l.Out)+8*cand+8*int64(t.Budget))
}

// SetTables makes Evaluate rank each point's labels through tables t,
// built from the evaluated parameters at every evaluation. The loss is
// not scored (it reads 0): a ranking over some of the labels has no
// softmax over all of them. The network needs a hidden layer, whose width
// is t.Family's dimension.
func (e *Evaluator) SetTables(t Tables) error {
	ts, err := newTableScorer(e.m, t)
	e.tables = ts
	return err
}

func newTableScorer(m *model.MLP, t Tables) (*tableScorer, error) {
	layers := m.Layers()
	l := layers[len(layers)-1]
	switch {
	case len(layers) < 2:
		return nil, fmt.Errorf("metric: approximate top-k needs a hidden layer to hash")
	case t.Capacity < 1 || t.Budget < 1:
		return nil, fmt.Errorf("metric: approximate top-k with buckets of %d rows and %d rows a point: need at least 1 of each", t.Capacity, t.Budget)
	}
	if d, ok := t.Family.(interface{ Dim() int }); ok && d.Dim() != l.In {
		return nil, fmt.Errorf("metric: approximate top-k's hash functions take vectors of %d, but the network's last hidden layer is %d wide: tables of another network", d.Dim(), l.In)
	}
	ix, err := lsh.NewIndex(t.Family, l.Out, t.Capacity)
	if err != nil {
		return nil, fmt.Errorf("metric: %w", err)
	}
	ts := &tableScorer{cfg: t, ix: ix, in: l.In}
	if !l.Transposed {
		ts.wt = make([]float32, l.In*l.Out)
	}
	for c := range tableParts {
		s, err := lsh.NewSampler(ix, t.Budget, t.Seed+uint64(c))
		if err != nil {
			return nil, fmt.Errorf("metric: %w", err)
		}
		part := &ts.parts[c]
		part.s, part.got, part.z = s, make([]int32, 0, s.Size()), make([]float32, s.Size())
	}
	return ts, nil
}

// A TableRanker ranks points' labels through tables over a network's
// output rows, as Evaluator.SetTables does: SLIDE's inference for a
// server. It is not safe for concurrent use.
type TableRanker struct {
	ts *tableScorer
	// The batch TopAll ranks.
	h      []float32
	k      int
	labels []int32
	scores []float32
	counts []int
}

// NewTableRanker returns a ranker of network m's labels at parameters p
// through tables t, which it builds (TablesBytes estimates their memory).
func NewTableRanker(m *model.MLP, p []float32, t Tables) (*TableRanker, error) {
	ts, err := newTableScorer(m, t)
	if err != nil {
		return nil, err
	}
	ts.build(m, p)
	return &TableRanker{ts: ts}, nil
}

// TopAll ranks the points whose hidden vectors are h (a row of Width
// each), in four parts on the kernels' pool: point i's top k labels among those it retrieves,
// best first, into labels[i*k:(i+1)*k], their scores into
// scores[i*k:(i+1)*k], and their number, fewer than k when fewer are
// retrieved, into counts[i].
func (r *TableRanker) TopAll(h []float32, k int, labels []int32, scores []float32, counts []int) {
	r.h, r.k, r.labels, r.scores, r.counts = h, k, labels, scores, counts
	kernel.Default().Run(r, tableParts)
}

// Part ranks the c-th of n parts of TopAll's points, with the c-th
// sampler: the parts draw from samplers of their own, so the ranking does
// not depend on which goroutine runs a part.
func (r *TableRanker) Part(c, n int) {
	points := len(r.counts)
	part := &r.ts.parts[c]
	for i := c * points / n; i < (c+1)*points/n; i++ {
		var z []float32
		part.got, z = r.ts.retrieve(part.s, part.got, part.z, r.h[i*r.ts.in:(i+1)*r.ts.in])
		labels, scores := r.labels[i*r.k:(i+1)*r.k], r.scores[i*r.k:(i+1)*r.k]
		top := model.TopK(z, r.k, labels)
		for t, j := range top {
			labels[t], scores[t] = part.got[j], z[j]
		}
		r.counts[i] = len(top)
	}
}

// retrieve scores the output rows hidden vector h retrieves through
// sampler s: their ids, in got's buffer, and their scores (the rows' dot
// products with h plus their biases), in z's.
func (t *tableScorer) retrieve(s *lsh.Sampler, got []int32, z []float32, h []float32) ([]int32, []float32) {
	got = s.Retrieve(got, h, nil)
	z = z[:len(got)]
	kernel.RowDots(z, t.rows, got, h)
	for j, r := range got {
		z[j] += t.b[r]
	}
	return got, z
}

// tableScorer holds the tables of an approximate evaluation and the
// buffers of its parts.
type tableScorer struct {
	cfg   Tables
	ix    *lsh.Index
	in    int       // the hidden width
	wt    []float32 // the output rows, transposed from a feature-major layer
	parts [tableParts]struct {
		s   *lsh.Sampler
		got []int32
		z   []float32
		top [5]int32
		ids [5]int32
	}
	rows, b []float32 // the output rows and biases being scored
	// The batch being scored: its hidden vectors and labels.
	h       []float32
	y       *sparse.CSR
	w       []float64 // the labels' inverse propensities; nil: none
	partial [tableParts][rowSums]float64
	// recall: per part, the true labels retrieved, the true labels, and
	// the labels retrieved, summed over the points.
	recall [tableParts][3]float64
}

// build hashes the output rows of p into the tables.
func (t *tableScorer) build(m *model.MLP, p []float32) {
	l := m.Layers()[len(m.Layers())-1]
	t.rows = m.OutputRows(t.wt, p)
	t.b = p[l.B : l.B+l.Out]
	t.ix.Build(t.rows, t.in, t.cfg.Seed)
}

func (t *tableScorer) Part(c, n int) {
	y := t.y
	part := &t.parts[c]
	for i := c * y.Rows / n; i < (c+1)*y.Rows/n; i++ {
		var z []float32
		part.got, z = t.retrieve(part.s, part.got, part.z, t.h[i*t.in:(i+1)*t.in])
		top := model.TopK(z, 5, part.top[:])
		ids := part.ids[:len(top)]
		for r, j := range top {
			ids[r] = part.got[j]
		}
		labels, _ := y.Row(i)
		addRow(&t.partial[c], ids, labels, t.w)
		found := 0
		for _, l := range labels {
			if slices.Contains(part.got, l) {
				found++
			}
		}
		t.recall[c][0] += float64(found)
		t.recall[c][1] += float64(len(labels))
		t.recall[c][2] += float64(len(part.got))
	}
}
