package data

import (
	"fmt"
	"math"
)

// maxStandInDim bounds a stand-in's features and labels: the generator
// holds about fifty bytes a label and sixteen a feature, and the largest
// sets of the Extreme Classification Repository have a few million of
// either (the fit refuses as many columns only when the data has entries
// to match them).
const maxStandInDim = 1 << 24

// checkSense reports the first parameter of s that has a type the
// generator takes but no sense (Check's second half): dimensions no
// machine would hold, per-point counts beyond the dimensions, and the
// report's statistics of the real set (Real) outside what they measure —
// counts below zero or beyond a set's size, shares and P@1s outside
// [0, 1]. Each error names the field as the file writes it.
func (s *StandIn) checkSense() error {
	bad := func(field string, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", errStandIn, field, fmt.Sprintf(format, args...))
	}
	for _, c := range []struct {
		field string
		v     int
	}{{"features", s.Features}, {"labels", s.Labels}} {
		if c.v > maxStandInDim {
			return bad(c.field, "%d, more than the %d the generator holds (a stand-in of the largest sets has a few million)", c.v, maxStandInDim)
		}
	}
	for _, q := range []struct {
		field string
		v     []float64
		dim   int
		what  string
	}{{"labels_per_point", s.LabelsPerPoint, s.Labels, "labels"}, {"features_per_point", s.FeaturesPerPoint, s.Features, "features"}} {
		if last := q.v[len(q.v)-1]; last > float64(q.dim) {
			return bad(fmt.Sprintf("%s[%d]", q.field, len(q.v)-1), "%v, more than the stand-in's %d %s: a point holds each at most once", last, q.dim, q.what)
		}
	}
	r := s.Real
	if r == nil {
		return nil
	}
	for _, c := range []struct {
		field string
		v     int
	}{{"real.points", r.Points}, {"real.co_occurrence_points", r.CoOccurrencePoints}, {"real.near_duplicate_points", r.NearDuplicatePoints}} {
		if c.v < 0 || c.v > math.MaxInt32 {
			return bad(c.field, "%d, want a count of points in [0, %d]", c.v, math.MaxInt32)
		}
	}
	for _, c := range []struct {
		field     string
		v, lo, hi float64
		what      string
	}{
		{"real.avg_labels", r.AvgLabels, 0, maxStandInDim, "a count of labels a point"},
		{"real.avg_features", r.AvgFeatures, 0, maxStandInDim, "a count of features a point"},
		{"real.top_label_share", r.TopLabelShare, 0, 1, "a share of the points"},
		{"real.head_share", r.HeadShare, 0, 1, "a share of the label assignments"},
		{"real.labels_on_one_or_less", r.LabelsOnOneOrLess, 0, 1, "a share of the labels"},
		{"real.labels_on_two_or_less", r.LabelsOnTwoOrLess, 0, 1, "a share of the labels"},
		{"real.co_occurrence", r.CoOccurrence, -100, 100, "a mean log lift"},
		{"real.near_duplicates", r.NearDuplicates, 0, 1, "a share of the points"},
		{"real.proxy_p1", r.ProxyP1, 0, 1, "a P@1"},
		{"real.speed", r.Speed, 0, 1, "a P@1"},
		{"real.late", r.Late, 0, 1, "a P@1"},
		{"real.anchored_labels", r.AnchoredLabels, 0, 1, "a share of the labels"},
		{"real.anchor_recall", r.AnchorRecall, 0, 1, "a share of a label's points"},
	} {
		if !(c.v >= c.lo && c.v <= c.hi) {
			return bad(c.field, "%v, want %s in [%v, %v]", c.v, c.what, c.lo, c.hi)
		}
	}
	return nil
}
