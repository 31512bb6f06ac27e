package data

import (
	"fmt"
	"math"
	"slices"

	"github.com/hetsgd/hetsgd/sparse"
)

// What a stand-in reads off a set: the measuring half of the fit. The
// other half, the knobs found by training models on samples (package
// standin), does not belong to a package that reads sets.

// topicShare is the chance that a feature not drawn from a label's
// prototype comes from a topic's, unless the fit's speed model moves it.
const topicShare = 0.3

// An anchor of a label is a feature on at least anchorMinPoints points,
// at least anchorPrecision of them carrying the label. Fewer points would
// count chance: a rare label's prototype holds rare features that, on a
// dozen points, all carry the label.
const (
	anchorMinPoints = 50
	anchorPrecision = 0.9
)

// MeasureStandIn returns the parameters of a stand-in of d that can be
// read off it: its dimensions and points (testPoints test points; 0: a
// quarter of the training points, at least 8), the distributions of
// labels and features per point (quantiles), its label and feature
// frequency curves, its row norms and its Summary (Real); the number of
// topics and the prototype size follow from the label count, labels per
// point and features per point (see the package documentation), and the
// topic share is the default's. The knobs that cannot be read off
// (Concentration, Anchors, Signal and the speed model) are left for the
// fit. It reads d and never changes it.
func MeasureStandIn(d *Dataset, testPoints int) (*StandIn, error) {
	N, D, L := d.Len(), d.Features(), d.Labels()
	if N < 20 || D < 1 || L < 2 {
		return nil, fmt.Errorf("data: fitting a stand-in to %s: %d points, %d features and %d labels; need at least 20, 1 and 2", d.Name, N, D, L)
	}
	// The generator holds a few words per label and feature: refuse
	// dimensions that the data does not come near (a header's claim).
	for _, m := range []*sparse.CSR{&d.X, &d.Y} {
		if int64(m.Cols) > max(1<<24, 64*int64(len(m.Indices))) {
			return nil, fmt.Errorf("data: fitting a stand-in to %s: %d columns for %d entries; the header's dimension is not that of the data", d.Name, m.Cols, len(m.Indices))
		}
	}
	s := &StandIn{Name: d.Name, Train: N, Test: testPoints, Features: D, Labels: L, Calibration: CalibrateLogShare}
	if s.Test <= 0 {
		s.Test = max(8, N/4)
	}
	nl, nf := make([]int, N), make([]int, N)
	for i := range N {
		nl[i], nf[i] = d.Y.RowNNZ(i), d.X.RowNNZ(i)
	}
	s.LabelsPerPoint, s.FeaturesPerPoint = quantilesOf(nl), quantilesOf(nf)
	s.LabelCurve = curveOf(sortedCounts(d.Y.Indices, L), N)
	s.FeatureCurve = curveOf(sortedCounts(d.X.Indices, D), N)
	s.RowNorm = rowNorm(d)
	avgLabels, avgFeatures := meanOf(nl), meanOf(nf)
	// Topics hold about four times a point's labels (at least 8), so that
	// a point with a high concentration can still find its labels in one
	// or two of them; prototypes hold about a point's features (8 to
	// 256, at most a quarter of the features), so that a few labels
	// account for a point's features.
	s.Topics = max(1, int(math.Round(float64(L)/math.Max(8, 4*avgLabels))))
	s.PrototypeSize = max(1, min(D/4, max(8, min(256, int(math.Round(avgFeatures))))))
	s.TopicShare = topicShare
	measured := Summarize(d, 0)
	s.Real = &measured
	return s, nil
}

// sortedCounts returns the number of entries of each of n columns, most
// frequent first.
func sortedCounts(ids []int32, n int) []int {
	c := make([]int, n)
	for _, j := range ids {
		c[j]++
	}
	slices.SortFunc(c, func(a, b int) int { return b - a })
	return c
}

func meanOf(x []int) float64 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return s / float64(max(len(x), 1))
}

// rowNorm is 0 when every value is 1 (binary rows), otherwise the mean L2
// norm of the rows.
func rowNorm(d *Dataset) float64 {
	binary := true
	for _, v := range d.X.Values {
		if v != 1 {
			binary = false
			break
		}
	}
	if binary {
		return 0
	}
	var sum float64
	for i := range d.Len() {
		_, vals := d.X.Row(i)
		var n float64
		for _, v := range vals {
			n += float64(v) * float64(v)
		}
		sum += math.Sqrt(n)
	}
	return sum / float64(d.Len())
}

// Anchors reads the anchors off d: the features on at least
// anchorMinPoints points, at least anchorPrecision of them carrying one
// label, each that label's anchor (a label keeps its most frequent one).
// It returns, by the labels' frequency rank, the share of a label's points
// that hold its anchor (0 for a label with none), averaged over bands of
// ranks (one by one at the head, then 25 % wider each), nil when no label
// has one; and the share of the labels with an anchor and the mean share
// of a label's points holding it.
func Anchors(d *Dataset) (a *Shares, anchored, recall float64) {
	N, D, L := d.Len(), d.Features(), d.Labels()
	nl := make([]int, L)
	for _, l := range d.Y.Indices {
		nl[l]++
	}
	// Each feature's points, to count their labels feature by feature.
	start := make([]int, D+1)
	for _, f := range d.X.Indices {
		start[f+1]++
	}
	for f := range D {
		start[f+1] += start[f]
	}
	points := make([]int32, len(d.X.Indices))
	next := slices.Clone(start[:D])
	for i := range N {
		feats, _ := d.X.Row(i)
		for _, f := range feats {
			points[next[f]] = int32(i)
			next[f]++
		}
	}
	best := make([]float64, L)
	count := make([]int, L)
	var touched []int32
	for f := range D {
		nf := start[f+1] - start[f]
		if nf < anchorMinPoints {
			continue
		}
		touched = touched[:0]
		top := int32(-1)
		for _, i := range points[start[f]:start[f+1]] {
			labels, _ := d.Y.Row(int(i))
			for _, l := range labels {
				if count[l] == 0 {
					touched = append(touched, l)
				}
				count[l]++
				if top < 0 || count[l] > count[top] {
					top = l
				}
			}
		}
		if top >= 0 && float64(count[top]) >= anchorPrecision*float64(nf) {
			best[top] = max(best[top], float64(count[top])/float64(nl[top]))
		}
		for _, l := range touched {
			count[l] = 0
		}
	}
	order := identity(L)
	slices.SortStableFunc(order, func(x, y int32) int { return nl[y] - nl[x] })
	a = &Shares{}
	for lo := 0; lo < L; {
		hi := min(L, max(lo+1, int(float64(lo)*1.25)))
		var sum float64
		for _, l := range order[lo:hi] {
			sum += best[l]
			if best[l] > 0 {
				anchored++
			}
		}
		a.At = append(a.At, (float64(lo+hi)/2)/float64(L))
		a.Value = append(a.Value, sum/float64(hi-lo))
		recall += sum
		lo = hi
	}
	if anchored == 0 {
		return nil, 0, 0
	}
	return a, anchored / float64(L), recall / float64(L)
}
