package lsh

import (
	"fmt"
	"math/rand/v2"
)

// A Sampler picks the active rows of an output layer. For one input,
// Retrieve gives its labels and the rows its buckets hold, most often
// retrieved first, up to a budget; for a batch, Fill draws the random rows
// that every input of the batch shares (the negatives of a sampled
// softmax). A Sampler belongs to one goroutine.
type Sampler struct {
	ix    *Index
	size  int      // rows Retrieve gives at most (labels aside)
	nlab  int      // labels the last Retrieve gave
	stamp []uint32 // stamp[i] == now: row i is listed already
	hits  []uint16 // tables that retrieved row i, for the candidates
	now   uint32
	codes []uint32
	cand  []int32 // rows retrieved, not labels
	order []int32 // the candidates, most hits first
	level []int   // the ranking's counting sort: where each hit count starts
	rng   *rand.Rand
	pcg   *rand.PCG
	// src is the sampler a fork retrieves for: its index is the fork's.
	src *Sampler
}

// NewSampler returns a sampler over ix whose Retrieve gives at most size
// rows (more only when an input has more labels), its random rows drawn
// from a stream seeded by seed.
func NewSampler(ix *Index, size int, seed uint64) (*Sampler, error) {
	if size < 1 {
		return nil, fmt.Errorf("lsh: a budget of %d retrieved rows: need at least 1", size)
	}
	s := newScratch(ix, min(size, ix.rows))
	s.pcg = rand.NewPCG(seed, 0x5a_3b1e)
	s.rng = rand.New(s.pcg)
	return s, nil
}

// newScratch returns a sampler over ix with a budget of size rows and the
// scratch of a retrieval, without a random stream.
func newScratch(ix *Index, size int) *Sampler {
	l := ix.fam.Tables()
	most := l * min(ix.capacity, ix.rows) // rows the buckets of a query hold
	return &Sampler{ix: ix, size: size, stamp: make([]uint32, ix.rows), hits: make([]uint16, ix.rows),
		codes: make([]uint32, l), cand: make([]int32, 0, most), order: make([]int32, most), level: make([]int, l+2)}
}

// Fork returns a sampler that retrieves from s's index, whichever s uses
// at the time, with scratch of its own: forks retrieve for several inputs
// side by side, each on its goroutine, and give what s would. A fork
// draws no random rows (Fill and Pad belong to s, whose stream they
// consume in order).
func (s *Sampler) Fork() *Sampler {
	f := newScratch(s.ix, s.size)
	f.src = s
	return f
}

// SamplerBytes estimates the memory of a sampler (or a fork) over rows
// rows and tables tables of buckets of capacity rows.
func SamplerBytes(rows, tables, capacity int) int64 {
	return 6*int64(rows) + 8*int64(tables)*int64(min(capacity, rows)) + 12*int64(tables)
}

// Use makes the sampler retrieve from ix, an index of the same rows,
// tables and bucket capacity as its own (tables rebuilt elsewhere).
func (s *Sampler) Use(ix *Index) {
	if ix.rows != s.ix.rows || ix.fam.Tables() != s.ix.fam.Tables() || ix.capacity != s.ix.capacity {
		panic("lsh: a sampler given an index of another shape")
	}
	s.ix = ix
}

// Size is Retrieve's budget.
func (s *Sampler) Size() int { return s.size }

// Rows is the number of rows the index covers.
func (s *Sampler) Rows() int { return s.ix.rows }

// State and SetState save and restore the random rows' stream, for
// checkpoints.
func (s *Sampler) State() ([]byte, error)  { return s.pcg.MarshalBinary() }
func (s *Sampler) SetState(b []byte) error { return s.pcg.UnmarshalBinary(b) }

// Retrieve writes into dst[:0] and returns the rows of the query q with
// labels: the labels first (all of them, however many), then the rows that
// q's buckets hold, those found in more tables first (ties in the order the
// tables list them), up to Size rows in all. The rows are distinct.
func (s *Sampler) Retrieve(dst []int32, q []float32, labels []int32) []int32 {
	dst = dst[:0]
	s.tick()
	for _, y := range labels {
		if s.stamp[y] != s.now {
			s.stamp[y] = s.now
			s.hits[y] = 0
			dst = append(dst, y)
		}
	}
	s.nlab = len(dst)
	room := s.size - len(dst)
	if room <= 0 {
		return dst
	}
	ix := s.ix
	if s.src != nil {
		ix = s.src.ix
	}
	ix.fam.Hash(s.codes, q)
	s.cand = s.cand[:0]
	for t, c := range s.codes {
		for _, i := range ix.Bucket(t, c) {
			switch {
			case s.stamp[i] != s.now:
				s.stamp[i] = s.now
				s.hits[i] = 1
				s.cand = append(s.cand, i)
			case s.hits[i] > 0: // a label that a bucket holds stays a label
				s.hits[i]++
			}
		}
	}
	// Most retrieved first: a stable counting sort on L − hits.
	l := len(s.codes)
	clear(s.level)
	for _, i := range s.cand {
		s.level[l-int(s.hits[i])+1]++
	}
	for h := 1; h < len(s.level); h++ {
		s.level[h] += s.level[h-1]
	}
	for _, i := range s.cand {
		at := &s.level[l-int(s.hits[i])]
		s.order[*at] = i
		*at++
	}
	take := min(room, len(s.cand))
	for _, i := range s.order[take:len(s.cand)] {
		s.stamp[i] = 0 // not listed: Pad may draw it
	}
	return append(dst, s.order[:take]...)
}

// Labels is the number of labels at the head of the last Retrieve's rows:
// the distinct ones among those it was given.
func (s *Sampler) Labels() int { return s.nlab }

// Pad appends to dst, the rows Retrieve just returned, rows drawn uniformly
// from the others until it holds size rows (all the rows, at most), and
// returns it: SLIDE's per-input padding of a set that retrieval left short.
func (s *Sampler) Pad(dst []int32, size int) []int32 { return s.draw(dst, size) }

// PadRows is Pad for rows that a fork retrieved: it lists them first, so
// that no row is drawn twice, then pads them as Pad would have after s's
// own Retrieve gave them.
func (s *Sampler) PadRows(dst []int32, size int) []int32 {
	s.tick()
	for _, i := range dst {
		s.stamp[i] = s.now
	}
	return s.draw(dst, size)
}

// Fill writes into dst[:0] and returns k distinct rows drawn uniformly (all
// the rows in order when k is at least their number).
func (s *Sampler) Fill(dst []int32, k int) []int32 {
	s.tick()
	return s.draw(dst[:0], k)
}

// draw appends to dst rows not in the current list, drawn uniformly, until
// it holds size rows (every such row, in order, when size is at least the
// row count), listing each.
func (s *Sampler) draw(dst []int32, size int) []int32 {
	n := s.ix.rows
	if size >= n {
		for i := range int32(n) {
			if s.stamp[i] != s.now {
				s.stamp[i] = s.now
				dst = append(dst, i)
			}
		}
		return dst
	}
	for len(dst) < size {
		if i := int32(s.rng.IntN(n)); s.stamp[i] != s.now {
			s.stamp[i] = s.now
			s.hits[i] = 0
			dst = append(dst, i)
		}
	}
	return dst
}

// tick starts a new list: a row is in it when its stamp is now.
func (s *Sampler) tick() {
	s.now++
	if s.now == 0 { // wrapped: forget every old stamp
		clear(s.stamp)
		s.now = 1
	}
}
