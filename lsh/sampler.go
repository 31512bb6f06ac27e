package lsh

import (
	"fmt"
	"math/rand/v2"
)

// A Sampler picks the active rows of an output layer for one input: its
// labels, then the rows its buckets retrieve, most often retrieved first,
// then random rows, to a fixed number. A Sampler belongs to one goroutine.
type Sampler struct {
	ix    *Index
	size  int      // rows of an active set
	stamp []uint32 // stamp[i] == now: row i is in the set or a candidate
	hits  []uint16 // tables that retrieved row i, for the candidates
	now   uint32
	codes []uint32
	cand  []int32 // rows retrieved, not labels
	order []int32 // the candidates, most hits first
	level []int   // the ranking's counting sort: where each hit count starts
	rng   *rand.Rand
	pcg   *rand.PCG
}

// NewSampler returns a sampler of active sets of size rows (all the rows
// when size is at least their number) over ix, its random fill drawn from a
// stream seeded by seed.
func NewSampler(ix *Index, size int, seed uint64) (*Sampler, error) {
	if size < 1 {
		return nil, fmt.Errorf("lsh: an active set of %d rows: need at least 1", size)
	}
	l := ix.fam.Tables()
	pcg := rand.NewPCG(seed, 0x5a_3b1e)
	return &Sampler{ix: ix, size: min(size, ix.rows), stamp: make([]uint32, ix.rows), hits: make([]uint16, ix.rows),
		codes: make([]uint32, l), cand: make([]int32, 0, l*ix.capacity), order: make([]int32, l*ix.capacity), level: make([]int, l+2),
		rng: rand.New(pcg), pcg: pcg}, nil
}

// Size is the number of rows of every active set.
func (s *Sampler) Size() int { return s.size }

// State and SetState save and restore the random fill's stream, for
// checkpoints.
func (s *Sampler) State() ([]byte, error)  { return s.pcg.MarshalBinary() }
func (s *Sampler) SetState(b []byte) error { return s.pcg.UnmarshalBinary(b) }

// Active writes the active set of the query q with labels into dst[:0] and
// returns it: the labels first (however many; a set larger than Size holds
// them all), then the rows that q's buckets hold, those found in more tables
// first (ties in the order the tables list them), then rows drawn
// uniformly from the rest, until Size rows. The rows are distinct. When
// Size is every row, the labels come first and the other rows follow in
// order.
func (s *Sampler) Active(dst []int32, q []float32, labels []int32) []int32 {
	dst = dst[:0]
	s.tick()
	n := s.ix.rows
	for _, y := range labels {
		if s.stamp[y] != s.now {
			s.stamp[y] = s.now
			s.hits[y] = 0
			dst = append(dst, y)
		}
	}
	if s.size == n { // every row: the labels, then the others in order
		for i := range int32(n) {
			if s.stamp[i] != s.now {
				dst = append(dst, i)
			}
		}
		return dst
	}
	// Every label is in; a label that a bucket retrieves stays one.
	nlab := len(dst)
	s.ix.fam.Hash(s.codes, q)
	s.cand = s.cand[:0]
	for t, c := range s.codes {
		for _, i := range s.ix.Bucket(t, c) {
			switch {
			case s.stamp[i] != s.now:
				s.stamp[i] = s.now
				s.hits[i] = 1
				s.cand = append(s.cand, i)
			case s.hits[i] > 0:
				s.hits[i]++
			}
		}
	}
	// Most retrieved first: a stable counting sort on L − hits.
	if room := s.size - nlab; room > 0 {
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
		dst = append(dst, s.order[:min(room, len(s.cand))]...)
	}
	// The rest at random.
	for len(dst) < s.size {
		i := int32(s.rng.IntN(n))
		if s.stamp[i] != s.now {
			s.stamp[i] = s.now
			s.hits[i] = 0
			dst = append(dst, i)
		}
	}
	return dst
}

// tick starts a new set: a row is in it when its stamp is now.
func (s *Sampler) tick() {
	s.now++
	if s.now == 0 { // wrapped: forget every old stamp
		clear(s.stamp)
		s.now = 1
	}
}
