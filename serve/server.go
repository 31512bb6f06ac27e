package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/sparse"
	"github.com/hetsgd/hetsgd/tfidf"
	"github.com/hetsgd/hetsgd/trained"
)

// Model is what a Server scores with: a network, its parameters, and the
// version its metadata and answers name (the file it was read from).
type Model struct {
	MLP     *model.MLP
	Params  []float32
	Version string
	// Text, when not nil, turns text into the network's inputs and names
	// its labels (trained.Model.Text): requests may then hold text.
	Text *tfidf.Model
	// Ranker, when not nil, ranks a point's labels among those hash
	// tables over the output layer retrieve for it (SLIDE's inference),
	// not among all: sub-linear in the labels, at a cost in recall. A
	// point that retrieves fewer than the k labels asked gets label -1,
	// scored the lowest float32, for each missing.
	Ranker *metric.TableRanker
	// Modified is the file's modification time when it was read (zero:
	// not read from a file): Follow serves a file newer than it.
	Modified time.Time
}

// Options bound what a Server accepts and how it batches. The zero value
// of a field takes its default.
type Options struct {
	// Name is the model's name in the protocol's paths (default "hetsgd").
	Name string
	// MaxBatch is the most points scored in one pass (default 256): the
	// requests queued when the scorer frees are scored together, up to it.
	MaxBatch int
	// MaxPoints is the most points one request may hold (default 1024).
	MaxPoints int
	// MaxBody is the most bytes of a request's body (default 16 MiB).
	MaxBody int64
	// MaxK is the most labels a request may ask for (default 100), and K
	// those it gets when it names none (default 5).
	MaxK, K int
	// Tables, when not nil, gives the hash tables a model Follow loads
	// ranks through (Model.Ranker), for the model's shape.
	Tables func(*model.MLP) (*metric.Tables, error)
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "hetsgd"
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = 1024
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 16 << 20
	}
	if o.MaxK <= 0 {
		o.MaxK = 100
	}
	if o.K <= 0 {
		o.K = min(5, o.MaxK)
	}
	return o
}

// Server scores the points of concurrent requests with one model, which
// Swap replaces while it serves. One goroutine (Run) does the scoring, so
// the kernels' workers are never shared between two passes; it scores
// together every request queued when it frees (opportunistic batching: a
// lone request waits for nothing).
type Server struct {
	opt   Options
	cur   atomic.Pointer[loaded]
	queue chan *job
}

// loaded is a model with the scorer's workspace for it.
type loaded struct {
	Model
	ws *model.Workspace
}

// job is one request's points, scored by the model it was checked
// against, and its answer.
type job struct {
	m      *loaded
	x      sparse.CSR
	k      int
	labels []int32   // k a point, best first
	scores []float32 // their scores
	err    error
	done   chan struct{}
}

// names returns the names of labels under the job's model's vectorizer,
// nil when it has none.
func (j *job) names(labels []int32) []string {
	if j.m.Text == nil {
		return nil
	}
	out := make([]string, len(labels))
	for i, l := range labels {
		if l >= 0 { // -1: none retrieved (Model.Ranker)
			out[i] = j.m.Text.Labels[l]
		}
	}
	return out
}

// errOverflow is a point whose top scores are not finite: its values,
// finite as they are, overflow the model's products.
var errOverflow = errors.New("the scores of a point overflow: its feature values are too large for the model")

// New returns a server of m. Run must be running for it to answer.
func New(m Model, opt Options) *Server {
	s := &Server{opt: opt.withDefaults(), queue: make(chan *job, 1024)}
	s.Swap(m)
	return s
}

// Swap makes m the model the server scores with: requests checked after it
// returns are scored by m, those queued before by the model they were
// checked against.
func (s *Server) Swap(m Model) {
	s.cur.Store(&loaded{Model: m, ws: m.MLP.NewWorkspace(s.opt.MaxBatch)})
}

// Current returns the model the server scores with.
func (s *Server) Current() Model { return s.cur.Load().Model }

// Run scores the queued requests until ctx ends. A request queued when
// it ends gets ctx's error.
func (s *Server) Run(ctx context.Context) {
	b := &batcher{max: s.opt.MaxBatch}
	var jobs []*job
	for {
		if ctx.Err() != nil {
			// Checked first: a request queued at the end is refused, not
			// scored at random.
			for {
				select {
				case j := <-s.queue:
					j.err = ctx.Err()
					close(j.done)
				default:
					return
				}
			}
		}
		select {
		case <-ctx.Done():
		case j := <-s.queue:
			jobs = append(jobs[:0], j)
			points := j.x.Rows
		more:
			for points < s.opt.MaxBatch {
				select {
				case j := <-s.queue:
					jobs = append(jobs, j)
					points += j.x.Rows
				default:
					break more
				}
			}
			b.score(jobs)
			for _, j := range jobs {
				close(j.done)
			}
		}
	}
}

// predict queues x's points, or texts' when texts is not nil, for their
// top k labels under the current model, checked against it (texts
// vectorized by it), and waits for them.
func (s *Server) predict(ctx context.Context, x sparse.CSR, texts []string, k int) (*job, error) {
	m := s.cur.Load()
	if texts != nil {
		if m.Text == nil {
			return nil, bad("the model takes features, not text: %v", trained.ErrNoText)
		}
		x = m.Text.Rows(texts, "request").X
	}
	if err := check(&x, m.MLP.Config().Inputs); err != nil {
		return nil, err
	}
	j := &job{m: m, x: x, k: min(k, m.MLP.Config().Outputs), done: make(chan struct{})}
	select {
	case s.queue <- j:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-j.done:
		return j, j.err
	case <-ctx.Done():
		return nil, ctx.Err() // the scorer still answers j, to no one
	}
}

// check refuses points the model cannot score: a feature id outside its
// inputs, a value that is not finite.
func check(x *sparse.CSR, inputs int) error {
	for i := range x.Rows {
		idx, vals := x.Row(i)
		for n, f := range idx {
			if f < 0 || int(f) >= inputs {
				return &badRequest{fmt.Sprintf("point %d: feature %d outside the model's %d features (0 to %d)", i, f, inputs, inputs-1)}
			}
			if vals != nil && (math.IsNaN(float64(vals[n])) || math.IsInf(float64(vals[n]), 0)) {
				return &badRequest{fmt.Sprintf("point %d: feature %d has value %v: values are finite numbers", i, f, vals[n])}
			}
		}
	}
	return nil
}

// batcher scores jobs' points in passes of at most max rows, through one
// buffer of rows reused from pass to pass.
type batcher struct {
	max int
	x   sparse.CSR
	top []int32
	// A pass's ranking through tables (Model.Ranker).
	tabLabels []int32
	tabScores []float32
	counts    []int
	rows      []struct {
		j *job
		i int // the point's row in its job
	}
}

// score answers jobs, grouped by model: consecutive jobs of one model
// share passes.
func (b *batcher) score(jobs []*job) {
	for _, j := range jobs {
		j.labels = make([]int32, j.x.Rows*j.k)
		j.scores = make([]float32, j.x.Rows*j.k)
	}
	for lo := 0; lo < len(jobs); {
		hi := lo + 1
		for hi < len(jobs) && jobs[hi].m == jobs[lo].m {
			hi++
		}
		b.scoreModel(jobs[lo].m, jobs[lo:hi])
		lo = hi
	}
}

// scoreModel scores jobs of model m, pass after pass.
func (b *batcher) scoreModel(m *loaded, jobs []*job) {
	b.reset(m)
	for _, j := range jobs {
		for i := range j.x.Rows {
			idx, vals := j.x.Row(i)
			for n, f := range idx {
				v := float32(1)
				if vals != nil {
					v = vals[n]
				}
				b.x.Indices = append(b.x.Indices, f)
				b.x.Values = append(b.x.Values, v)
			}
			b.x.Indptr = append(b.x.Indptr, int64(len(b.x.Indices)))
			b.x.Rows++
			b.rows = append(b.rows, struct {
				j *job
				i int
			}{j, i})
			if b.x.Rows == b.max {
				b.pass(m)
				b.reset(m)
			}
		}
	}
	if b.x.Rows > 0 {
		b.pass(m)
	}
}

func (b *batcher) reset(m *loaded) {
	b.x.Rows, b.x.Cols = 0, m.MLP.Config().Inputs
	b.x.Indptr = append(b.x.Indptr[:0], 0)
	b.x.Indices, b.x.Values = b.x.Indices[:0], b.x.Values[:0]
	b.rows = b.rows[:0]
}

// pass scores the buffered rows and writes each one's top labels into its
// job.
func (b *batcher) pass(m *loaded) {
	if m.Ranker != nil {
		// The pass's points ranked on the kernels' pool, as many labels
		// each as the most any asks for.
		k := 0
		for _, at := range b.rows {
			k = max(k, at.j.k)
		}
		n := len(b.rows)
		b.tabLabels, b.tabScores = slices.Grow(b.tabLabels[:0], n*k)[:n*k], slices.Grow(b.tabScores[:0], n*k)[:n*k]
		b.counts = slices.Grow(b.counts[:0], n)[:n]
		m.Ranker.TopAll(m.ws.Hidden(m.Params, &b.x), k, b.tabLabels, b.tabScores, b.counts)
		for r, at := range b.rows {
			j := at.j
			labels, scores := j.labels[at.i*j.k:(at.i+1)*j.k], j.scores[at.i*j.k:(at.i+1)*j.k]
			got := min(b.counts[r], j.k)
			copy(labels, b.tabLabels[r*k:r*k+got])
			copy(scores, b.tabScores[r*k:r*k+got])
			for _, v := range scores[:got] {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					j.err = errOverflow
				}
			}
			for i := got; i < j.k; i++ {
				labels[i], scores[i] = -1, -math.MaxFloat32
			}
		}
		return
	}
	m.ws.Forward(m.Params, &b.x)
	logits, L := m.ws.Logits(), m.MLP.Config().Outputs
	for r, at := range b.rows {
		j := at.j
		if cap(b.top) < j.k {
			b.top = make([]int32, j.k)
		}
		row := logits[r*L : (r+1)*L]
		top := model.TopK(row, j.k, b.top[:j.k])
		out := at.i * j.k
		for n, l := range top {
			v := row[l]
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				j.err = errOverflow
			}
			j.labels[out+n], j.scores[out+n] = l, v
		}
	}
}
