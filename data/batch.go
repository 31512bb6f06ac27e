package data

import (
	"math/rand/v2"

	"github.com/hetsgd/hetsgd/sparse"
)

// Sampler deals out the rows of a dataset of n points in a seeded random
// order, drawing a fresh permutation at every epoch. Batches run on across
// epoch boundaries: the stream of rows is the concatenation of the epochs'
// permutations, so every batch is full and epochs are counted in samples.
type Sampler struct {
	perm []int32
	pos  int
	seen int64
	seed uint64
	rng  *rand.Rand
}

// NewSampler returns a sampler over rows 0..n-1. Two samplers with the same n
// and seed deal the same rows.
func NewSampler(n int, seed uint64) *Sampler {
	s := &Sampler{perm: make([]int32, n), seed: seed}
	s.restart()
	return s
}

// restart puts the sampler back at the start of its stream.
func (s *Sampler) restart() {
	s.rng = rand.New(rand.NewPCG(s.seed, 0x5eed_da7a))
	for i := range s.perm {
		s.perm[i] = int32(i)
	}
	s.seen = 0
	s.shuffle()
}

// Pos returns the position in the stream: the rows dealt so far.
func (s *Sampler) Pos() int64 { return s.seen }

// SetPos moves to position at of the stream, as if Next had dealt at rows
// since the sampler was made: forward by skipping rows (one reshuffle per
// epoch crossed), backward by starting again from the seed. Samplers that
// deal to different processes stay in step this way: a batch is named by
// its position and length.
func (s *Sampler) SetPos(at int64) {
	if at < 0 {
		panic("data: SetPos to a negative position")
	}
	if at < s.seen {
		s.restart()
	}
	if len(s.perm) == 0 && at > 0 {
		panic("data: Sampler over an empty dataset")
	}
	for s.seen < at {
		if s.pos == len(s.perm) {
			s.shuffle()
		}
		k := min(int64(len(s.perm)-s.pos), at-s.seen)
		s.pos += int(k)
		s.seen += k
	}
}

func (s *Sampler) shuffle() {
	// Fisher–Yates, written out so that reshuffling allocates nothing.
	for i := len(s.perm) - 1; i > 0; i-- {
		j := s.rng.IntN(i + 1)
		s.perm[i], s.perm[j] = s.perm[j], s.perm[i]
	}
	s.pos = 0
}

// Next fills rows with the next len(rows) row ids.
func (s *Sampler) Next(rows []int32) {
	if len(s.perm) == 0 {
		panic("data: Sampler over an empty dataset")
	}
	for len(rows) > 0 {
		if s.pos == len(s.perm) {
			s.shuffle()
		}
		n := copy(rows, s.perm[s.pos:])
		s.pos += n
		s.seen += int64(n)
		rows = rows[n:]
	}
}

// Epochs returns the number of passes over the data dealt so far.
func (s *Sampler) Epochs() float64 { return float64(s.seen) / float64(len(s.perm)) }

// Batch is a set of points gathered from a dataset into contiguous CSR
// matrices, with buffers sized once for the largest batch it will hold.
type Batch struct {
	X, Y sparse.CSR
	Rows []int32 // the dataset rows gathered, in order
	max  int
}

// NewBatch returns a batch able to hold any maxRows rows of ds without
// allocating.
func NewBatch(ds *Dataset, maxRows int) *Batch {
	b := &Batch{Rows: make([]int32, 0, maxRows), max: maxRows}
	b.X.Reserve(maxRows, ds.X.MaxNNZ(maxRows), ds.X.Values == nil)
	b.Y.Reserve(maxRows, ds.Y.MaxNNZ(maxRows), true)
	return b
}

// Len returns the number of points in the batch.
func (b *Batch) Len() int { return b.X.Rows }

// Cap returns the largest number of points the batch holds.
func (b *Batch) Cap() int { return b.max }

// Gather fills the batch with the given rows of ds.
func (b *Batch) Gather(ds *Dataset, rows []int32) {
	if len(rows) > b.max {
		panic("data: Gather of more rows than the batch was sized for")
	}
	b.Rows = append(b.Rows[:0], rows...)
	sparse.Gather(&b.X, &ds.X, b.Rows)
	sparse.Gather(&b.Y, &ds.Y, b.Rows)
}

// Draw fills the batch with the next n rows of s from ds.
func (b *Batch) Draw(ds *Dataset, s *Sampler, n int) { b.DrawPolled(ds, s, n, nil) }

// DrawPolled is Draw calling poll (when not nil) between its steps —
// dealing the rows, gathering the features, gathering the labels — so that
// a caller can make a non-blocking collective progress meanwhile.
func (b *Batch) DrawPolled(ds *Dataset, s *Sampler, n int, poll func()) {
	if n > b.max {
		panic("data: Draw of more rows than the batch was sized for")
	}
	b.Rows = b.Rows[:n]
	s.Next(b.Rows)
	if poll != nil {
		poll()
	}
	sparse.Gather(&b.X, &ds.X, b.Rows)
	if poll != nil {
		poll()
	}
	sparse.Gather(&b.Y, &ds.Y, b.Rows)
}

// Range fills the batch with rows lo..hi-1 of ds, in order (for evaluation).
func (b *Batch) Range(ds *Dataset, lo, hi int) {
	if hi-lo > b.max {
		panic("data: Range of more rows than the batch was sized for")
	}
	b.Rows = b.Rows[:hi-lo]
	for i := range b.Rows {
		b.Rows[i] = int32(lo + i)
	}
	sparse.Gather(&b.X, &ds.X, b.Rows)
	sparse.Gather(&b.Y, &ds.Y, b.Rows)
}
