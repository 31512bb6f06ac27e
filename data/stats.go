package data

import (
	"fmt"
	"io"
	"slices"

	"github.com/hetsgd/hetsgd/sparse"
)

// Dist summarises a distribution of per-row counts.
type Dist struct {
	Mean          float64
	Min, Max      int
	P50, P90, P99 int
}

// Stats describes a dataset.
type Stats struct {
	Name                     string
	Points, Features, Labels int
	NNZ                      Dist // features per point
	LabelsPerPoint           Dist
	EmptyFeatureRows         int // points with no features
	UnlabeledPoints          int
	UsedFeatures, UsedLabels int // ids that occur at least once
	// LabelFreq holds the number of points of each label, most frequent
	// first; Head and Tail are its first and last few (label, count) pairs.
	Head, Tail []LabelCount
}

// LabelCount is a label and the number of points carrying it.
type LabelCount struct {
	Label int32
	Count int
}

// Describe computes the statistics of a dataset. ends is how many labels to
// list at each end of the frequency ranking.
func Describe(d *Dataset, ends int) Stats {
	s := Stats{Name: d.Name, Points: d.Len(), Features: d.Features(), Labels: d.Labels()}
	s.NNZ, s.EmptyFeatureRows = rowDist(&d.X)
	s.LabelsPerPoint, s.UnlabeledPoints = rowDist(&d.Y)
	s.UsedFeatures = len(columnCounts(&d.X))
	ranked := columnCounts(&d.Y)
	s.UsedLabels = len(ranked)
	slices.SortStableFunc(ranked, func(a, b LabelCount) int { return b.Count - a.Count })
	k := min(ends, len(ranked))
	s.Head = ranked[:k]
	s.Tail = ranked[len(ranked)-k:]
	return s
}

func rowDist(m *sparse.CSR) (Dist, int) {
	if m.Rows == 0 {
		return Dist{}, 0
	}
	n := make([]int, m.Rows)
	empty := 0
	for i := range n {
		n[i] = m.RowNNZ(i)
		if n[i] == 0 {
			empty++
		}
	}
	slices.Sort(n)
	pct := func(p int) int { return n[min(len(n)-1, p*len(n)/100)] }
	return Dist{
		Mean: float64(m.NNZ()) / float64(m.Rows),
		Min:  n[0], Max: n[len(n)-1],
		P50: pct(50), P90: pct(90), P99: pct(99),
	}, empty
}

// columnCounts returns, in id order, each column id of m that occurs and
// its number of entries. Its memory follows the entries, not the column
// count, which a file's header sets and its size does not bound: one slot
// per column when there are not many more columns than entries (the
// threshold of sparse.CSR.Validate), otherwise a sorted copy of the ids.
func columnCounts(m *sparse.CSR) []LabelCount {
	var out []LabelCount
	if int64(m.Cols) <= max(1<<20, 4*int64(len(m.Indices))) {
		freq := make([]int, m.Cols)
		for _, j := range m.Indices {
			freq[j]++
		}
		for j, c := range freq {
			if c > 0 {
				out = append(out, LabelCount{int32(j), c})
			}
		}
		return out
	}
	ids := slices.Clone(m.Indices)
	slices.Sort(ids)
	for i := 0; i < len(ids); {
		k := i + 1
		for k < len(ids) && ids[k] == ids[i] {
			k++
		}
		out = append(out, LabelCount{ids[i], k - i})
		i = k
	}
	return out
}

// Write prints the statistics as aligned text.
func (s Stats) Write(w io.Writer) error {
	dist := func(d Dist) string {
		return fmt.Sprintf("mean %.2f  min %d  p50 %d  p90 %d  p99 %d  max %d", d.Mean, d.Min, d.P50, d.P90, d.P99, d.Max)
	}
	pairs := func(lc []LabelCount) string {
		out := ""
		for i, p := range lc {
			if i > 0 {
				out += "  "
			}
			out += fmt.Sprintf("%d:%d", p.Label, p.Count)
		}
		return out
	}
	_, err := fmt.Fprintf(w, `%s
  points            %d
  features          %d (%d used)
  labels            %d (%d used)
  nnz per point     %s
  labels per point  %s
  empty points      %d without features, %d without labels
  most frequent     %s   (label:points)
  least frequent    %s
`, s.Name, s.Points, s.Features, s.UsedFeatures, s.Labels, s.UsedLabels,
		dist(s.NNZ), dist(s.LabelsPerPoint), s.EmptyFeatureRows, s.UnlabeledPoints,
		pairs(s.Head), pairs(s.Tail))
	return err
}
