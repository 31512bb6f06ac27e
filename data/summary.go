package data

import (
	"math"
	"slices"
)

// The co-occurrence is measured on at most this many points, and on no
// more than the points whose label pairs fit in coOccurrenceMaxPairs, so
// that a set of 75 labels a point costs tens of megabytes, not gigabytes.
const (
	coOccurrenceMaxPoints = 20000
	coOccurrenceMaxPairs  = 4 << 20
)

// summer accumulates a Summary point by point, streaming.
type summer struct {
	freq          []int32 // points of each label
	coFreq        []int32 // the same over the co-occurrence's points
	pairs         []uint64
	points        int64
	labels, feats int64
	coLimit       int
	coPoints      int
	coFull        bool
	// rows holds the features of the first rowLimit points, for the
	// near-duplicates.
	rows     [][]int32
	rowLimit int
}

func newSummer(labels, coLimit int) *summer {
	return &summer{freq: make([]int32, labels), coFreq: make([]int32, labels), coLimit: coLimit}
}

// add counts a point of the given (distinct) labels and feature count,
// in the co-occurrence too while its limits allow.
func (s *summer) add(labels []int32, features int) {
	s.count(labels, features)
	s.pair(labels)
}

// count counts a point everywhere but in the co-occurrence.
func (s *summer) count(labels []int32, features int) {
	s.points++
	s.labels += int64(len(labels))
	s.feats += int64(features)
	for _, l := range labels {
		s.freq[l]++
	}
}

// pair counts a point's labels in the co-occurrence while its limits
// allow.
func (s *summer) pair(labels []int32) {
	if s.coFull || s.coPoints >= s.coLimit {
		return
	}
	if len(s.pairs)+len(labels)*(len(labels)-1)/2 > coOccurrenceMaxPairs {
		s.coFull = true
		return
	}
	s.coPoints++
	for i, a := range labels {
		s.coFreq[a]++
		for _, b := range labels[i+1:] {
			s.pairs = append(s.pairs, uint64(min(a, b))<<32|uint64(max(a, b)))
		}
	}
}

// row keeps a point's features for the near-duplicates while rowLimit
// allows.
func (s *summer) row(feats []int32) {
	if len(s.rows) < s.rowLimit {
		s.rows = append(s.rows, slices.Clone(feats))
	}
}

// summary returns the statistics of what was added.
func (s *summer) summary() Summary {
	n := max(s.points, 1)
	sm := Summary{
		Points:             int(s.points),
		AvgLabels:          float64(s.labels) / float64(n),
		AvgFeatures:        float64(s.feats) / float64(n),
		CoOccurrencePoints: s.coPoints,
	}
	sorted := make([]int, len(s.freq))
	for i, c := range s.freq {
		sorted[i] = int(c)
	}
	slices.SortFunc(sorted, func(a, b int) int { return b - a })
	if len(sorted) > 0 {
		sm.TopLabelShare = float64(sorted[0]) / float64(n)
		var head, all int64
		for i, c := range sorted {
			if i < max(1, (len(sorted)+9)/10) {
				head += int64(c)
			}
			all += int64(c)
			if c <= 1 {
				sm.LabelsOnOneOrLess++
			}
			if c <= 2 {
				sm.LabelsOnTwoOrLess++
			}
		}
		sm.HeadShare = float64(head) / float64(max(all, 1))
		sm.LabelsOnOneOrLess /= float64(len(sorted))
		sm.LabelsOnTwoOrLess /= float64(len(sorted))
	}
	sm.CoOccurrence = s.coOccurrence()
	if len(s.rows) > 0 {
		sm.NearDuplicates, sm.NearDuplicatePoints = nearDuplicateShare(s.rows), len(s.rows)
	}
	return sm
}

// coOccurrence is the mean log lift of the co-occurring pairs, weighted
// by their counts: 0 when labels are independent (beyond the noise of
// small counts), higher the more labels come in groups.
func (s *summer) coOccurrence() float64 {
	slices.Sort(s.pairs)
	N := float64(s.coPoints)
	var sum, total float64
	for i := 0; i < len(s.pairs); {
		j := i + 1
		for j < len(s.pairs) && s.pairs[j] == s.pairs[i] {
			j++
		}
		a, b := s.pairs[i]>>32, s.pairs[i]&(1<<32-1)
		nij := float64(j - i)
		sum += nij * math.Log(N*nij/(float64(s.coFreq[a])*float64(s.coFreq[b])))
		total += nij
		i = j
	}
	if total == 0 {
		return 0
	}
	return sum / total
}

// fill sets the statistics of st from what was added.
func (s *summer) fill(st *GenStats) {
	sm := s.summary()
	st.Summary = &sm
	st.AvgNNZ, st.AvgLabels = sm.AvgFeatures, sm.AvgLabels
	for _, c := range s.freq {
		if c > 0 {
			st.UsedLabels++
		}
		if c <= 1 {
			st.LabelsWithOnePointOrLess++
		}
		st.MaxLabelFreq = max(st.MaxLabelFreq, int(c))
	}
}

// Summarize returns the statistics a stand-in is compared on (without
// ProxyP1), the co-occurrence on at most coPoints points (0: as many as
// the limits allow) and the near-duplicates on as many as
// nearDuplicateRows allows, spread evenly over d, so that a file sorted by
// label measures what a shuffled one does: its first points would share
// their labels.
func Summarize(d *Dataset, coPoints int) Summary {
	N := d.Len()
	if coPoints <= 0 {
		coPoints = coOccurrenceMaxPoints
	}
	// As many points as the pairs' room holds on average, a twentieth
	// spare so that the room lasts to the end of the set.
	var pairs float64
	for i := range N {
		n := float64(d.Y.RowNNZ(i))
		pairs += n * (n - 1) / 2
	}
	n := min(N, coPoints)
	if pairs > coOccurrenceMaxPairs {
		n = min(n, max(1, int(0.95*coOccurrenceMaxPairs/pairs*float64(N))))
	}
	s := newSummer(d.Labels(), coPoints)
	nr := nearDuplicateRows(N, float64(d.X.NNZ())/float64(max(N, 1)))
	s.rowLimit = nr
	next, nextRow := 0, 0 // the points spread(k, N, n), k = 0 … n−1, and the same for nr
	for i := range N {
		labels, _ := d.Y.Row(i)
		s.count(labels, d.X.RowNNZ(i))
		if next < n && i == spread(next, N, n) {
			s.pair(labels)
			next++
		}
		if nextRow < nr && i == spread(nextRow, N, nr) {
			feats, _ := d.X.Row(i)
			s.rows = append(s.rows, feats) // read, not changed: no copy
			nextRow++
		}
	}
	return s.summary()
}
