package data

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/sparse"
)

// testStandIn is a stand-in built by hand: 200 labels, 500 features, 1 to
// 6 labels and 10 to 50 features a point, a Zipf-like label curve.
func testStandIn() *StandIn {
	s := &StandIn{
		Name: "hand-made", Train: 3000, Test: 500, Features: 500, Labels: 200,
		Topics: 14, Concentration: 0.6, Signal: 0.4, TopicShare: topicShare, PrototypeSize: 30,
	}
	s.LabelsPerPoint = make([]float64, quantileKnots)
	s.FeaturesPerPoint = make([]float64, quantileKnots)
	for i := range quantileKnots {
		q := float64(i) / (quantileKnots - 1)
		s.LabelsPerPoint[i] = math.Round(1 + 5*q)
		s.FeaturesPerPoint[i] = math.Round(10 + 40*q)
	}
	for _, c := range []*Curve{&s.LabelCurve, &s.FeatureCurve} {
		for k := range 20 {
			q := (float64(k) + 0.5) / 20
			c.At = append(c.At, q)
			c.Value = append(c.Value, 0.2*math.Pow(q*20, -0.8))
		}
	}
	return s
}

func TestStandInDeterministic(t *testing.T) {
	s := testStandIn()
	var tr1, te1, tr2, te2, tr3, te3 bytes.Buffer
	ctx := context.Background()
	if _, _, err := s.GenerateContext(ctx, 5, &tr1, &te1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.GenerateContext(ctx, 5, &tr2, &te2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tr1.Bytes(), tr2.Bytes()) || !bytes.Equal(te1.Bytes(), te2.Bytes()) {
		t.Fatal("same stand-in and seed, different bytes")
	}
	s.GenerateContext(ctx, 6, &tr3, &te3)
	if bytes.Equal(tr1.Bytes(), tr3.Bytes()) {
		t.Fatal("different seeds, same bytes")
	}
	// It parses, with the stand-in's shape.
	d, err := ReadXC(&tr1, "stand-in")
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != s.Train || d.Features() != s.Features || d.Labels() != s.Labels {
		t.Fatalf("shape %d×%d×%d, want %d×%d×%d", d.Len(), d.Features(), d.Labels(), s.Train, s.Features, s.Labels)
	}
}

// The generator's bytes are pinned: a stand-in file keeps generating the
// same set as the code changes (two settings: binary rows, and rows of a
// given norm).
func TestStandInKnownAnswer(t *testing.T) {
	for _, c := range []struct {
		rowNorm float64
		seed    uint64
		want    string
	}{
		{0, 5, "3d03da257733ac082c3c885af5789537237d9f11d289122d26d9819dba58d1a1"},
		{2, 7, "734fb17dd2280210c45c1ca9e0d8bb2bed23f0cd603d180fcf94514e89bc09a1"},
	} {
		s := testStandIn().WithPoints(1000)
		s.RowNorm = c.rowNorm
		var train, test bytes.Buffer
		if _, _, err := s.GenerateContext(context.Background(), c.seed, &train, &test); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(append(train.Bytes(), test.Bytes()...))); got != c.want {
			t.Errorf("row norm %v, seed %d: bytes hash %s, want %s", c.rowNorm, c.seed, got, c.want)
		}
	}
}

// What comes out has the statistics the parameters give: per-point counts,
// and the head of the label curve.
func TestStandInFollowsParameters(t *testing.T) {
	s := testStandIn()
	train, _, err := s.GenerateContext(context.Background(), 1, new(bytes.Buffer), new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	got := train.Summary
	if want := meanQuantile(s.LabelsPerPoint); math.Abs(got.AvgLabels-want)/want > 0.05 {
		t.Errorf("%.3f labels a point, the quantiles' mean is %.3f", got.AvgLabels, want)
	}
	// Features can collide with the ones a point has: a few go missing.
	if want := meanQuantile(s.FeaturesPerPoint); math.Abs(got.AvgFeatures-want)/want > 0.05 {
		t.Errorf("%.3f features a point, the quantiles' mean is %.3f", got.AvgFeatures, want)
	}
	var head, all float64
	for k := range s.Labels {
		v := s.LabelCurve.Eval((float64(k) + 0.5) / float64(s.Labels))
		if k < s.Labels/10 {
			head += v
		}
		all += v
	}
	if want := head / all; math.Abs(got.HeadShare-want) > 0.03 {
		t.Errorf("head share %.3f, the curve's %.3f", got.HeadShare, want)
	}
	if want := s.LabelCurve.Eval(0.5/float64(s.Labels)) * meanQuantile(s.LabelsPerPoint) / all; math.Abs(got.TopLabelShare-want) > 0.03 {
		t.Errorf("top label on %.3f of the points, the curve's head %.3f", got.TopLabelShare, want)
	}
}

// Fitted to a set generated with known parameters, the fit finds them
// again, and the set it generates has the same statistics.
func TestFitStandInRecoversParameters(t *testing.T) {
	if testing.Short() || race.Enabled {
		t.Skip("a fit is single-threaded arithmetic (seconds, ten times that under the race detector): the ordinary stage runs it")
	}
	want := testStandIn()
	d := newStandInGen(want, 3).sample(want.Train)
	got, err := FitStandIn(context.Background(), d, FitOptions{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if got.Topics != want.Topics || got.PrototypeSize != want.PrototypeSize {
		t.Errorf("%d topics and prototypes of %d, want %d and %d", got.Topics, got.PrototypeSize, want.Topics, want.PrototypeSize)
	}
	if math.Abs(got.Concentration-want.Concentration) > 0.1 {
		t.Errorf("concentration %.3f, want %.3f", got.Concentration, want.Concentration)
	}
	if math.Abs(got.Signal-want.Signal) > 0.1 {
		t.Errorf("signal %.3f, want %.3f", got.Signal, want.Signal)
	}
	if g, w := meanQuantile(got.LabelsPerPoint), meanQuantile(want.LabelsPerPoint); math.Abs(g-w)/w > 0.05 {
		t.Errorf("labels a point %.3f, want %.3f", g, w)
	}
	train, _, err := got.GenerateContext(context.Background(), 1, new(bytes.Buffer), new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	g, r := train.Summary, got.Real
	for _, c := range []struct {
		what      string
		got, want float64
		tol       float64
	}{
		{"labels a point", g.AvgLabels, r.AvgLabels, 0.05 * r.AvgLabels},
		{"features a point", g.AvgFeatures, r.AvgFeatures, 0.05 * r.AvgFeatures},
		{"head share", g.HeadShare, r.HeadShare, 0.03},
		{"top label share", g.TopLabelShare, r.TopLabelShare, 0.03},
		{"co-occurrence", g.CoOccurrence, r.CoOccurrence, 0.1},
	} {
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s: stand-in %.4f, fitted set %.4f", c.what, c.got, c.want)
		}
	}
}

func TestStandInJSONRoundTrip(t *testing.T) {
	s := testStandIn()
	s.Real = &Summary{Points: 3, CoOccurrence: 0.5, AnchoredLabels: 0.1, AnchorRecall: 0.05}
	s.Anchors = &Shares{At: []float64{0.1, 0.5}, Value: []float64{0.8, 0}}
	var b bytes.Buffer
	if err := s.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	back, err := ReadStandIn(&b, "fit.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("read back %+v, wrote %+v", back, s)
	}
	// A wrong setting is named, with the file.
	bad := *s
	bad.Concentration = 1.5
	b.Reset()
	bad.WriteJSON(&b)
	if _, err := ReadStandIn(&b, "fit.json"); err == nil || !bytes.Contains([]byte(err.Error()), []byte("fit.json: invalid stand-in: concentration: 1.5")) {
		t.Fatalf("concentration 1.5: %v", err)
	}
	if _, err := ReadStandIn(bytes.NewReader([]byte(`{"format":"hetsgd-standin/1","signall":1}`)), "typo.json"); err == nil || !bytes.Contains([]byte(err.Error()), []byte("signall")) {
		t.Fatalf("misspelt key: %v", err)
	}
	for _, c := range []struct {
		change func(*StandIn)
		want   string
	}{
		{func(s *StandIn) { s.Anchors = &Shares{At: []float64{0.5}, Value: []float64{1.5}} }, "anchors.value[0]: 1.5"},
		{func(s *StandIn) { s.Anchors = &Shares{At: []float64{0.5, 0.2}, Value: []float64{1, 1}} }, "anchors.at[1]: 0.2"},
		{func(s *StandIn) { s.Anchors = &Shares{} }, "anchors: 0 knots"},
		{func(s *StandIn) { s.Calibration = "exact" }, `calibration: "exact"`},
	} {
		bad := *s
		c.change(&bad)
		b.Reset()
		bad.WriteJSON(&b)
		if _, err := ReadStandIn(&b, "fit.json"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error naming %q, got %v", c.want, err)
		}
	}
}

// A stand-in file written before anchors (no such key) reads as a
// stand-in without them, which generates the bytes it always did.
func TestStandInOldFile(t *testing.T) {
	s := testStandIn().WithPoints(1000)
	var b bytes.Buffer
	if err := s.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b.Bytes(), []byte("anchor")) {
		t.Fatalf("a stand-in without anchors writes their key:\n%s", b.Bytes())
	}
	back, err := ReadStandIn(&b, "old.json")
	if err != nil {
		t.Fatal(err)
	}
	if back.Anchors != nil {
		t.Fatalf("anchors %v, want none", back.Anchors)
	}
	var train, test bytes.Buffer
	if _, _, err := back.GenerateContext(context.Background(), 5, &train, &test); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(append(train.Bytes(), test.Bytes()...))); got != "3d03da257733ac082c3c885af5789537237d9f11d289122d26d9819dba58d1a1" {
		t.Fatalf("bytes hash %s, want the known answer", got)
	}
}

// A label of anchor chance 1 has its anchor on all of its points, and the
// feature is rare elsewhere; anchorsOf reads that label's anchor back off
// the set, and no other.
func TestStandInAnchors(t *testing.T) {
	s := testStandIn()
	// A long tail of rare features, as in text.
	for k, q := range s.FeatureCurve.At {
		s.FeatureCurve.Value[k] = 0.2 * math.Pow(q*20, -2)
	}
	L := float64(s.Labels)
	// Rank 0 always, rank 1 most of the time, no other.
	s.Anchors = &Shares{At: []float64{0.5 / L, 1.5 / L, 2.5 / L}, Value: []float64{1, 0.8, 0}}
	g := newStandInGen(s, 4)
	d := g.sample(s.Train)
	for rank, want := range []float64{1, 0.8} {
		id, f := g.labelIDs[rank], g.anchorOf[rank]
		var with, holds, elsewhere, without int
		for i := range d.Len() {
			labels, _ := d.Y.Row(i)
			feats, _ := d.X.Row(i)
			if slices.Contains(labels, id) {
				with++
				if slices.Contains(feats, f) {
					holds++
				}
			} else {
				without++
				if slices.Contains(feats, f) {
					elsewhere++
				}
			}
		}
		// The anchor is a feature like others too: the other points hold
		// it by chance, and so do the label's that the anchor skipped.
		base := float64(elsewhere) / float64(without)
		if base > 0.05 {
			t.Errorf("rank %d: its anchor on %.3f of the other points", rank, base)
		}
		if got, want := float64(holds)/float64(with), want+(1-want)*base; math.Abs(got-want) > 0.06 {
			t.Errorf("rank %d: its anchor on %.3f of its %d points, want %.3f", rank, got, with, want)
		}
	}
	// Read back: the two labels' anchors (at the ranks the sample gives
	// the labels), and no other.
	a, anchored, _ := anchorsOf(d)
	if a == nil {
		t.Fatal("no anchors read back")
	}
	sorted := slices.Sorted(slices.Values(a.Value))
	if a.Value[0] < 0.9 || sorted[len(sorted)-2] < 0.7 || anchored*L != 2 {
		t.Fatalf("anchors read back: %v on %.0f labels, want the top label's and one of about 0.8", a.Value, anchored*L)
	}
	// Without anchors, only weak ones: a prototype feature that is rare
	// as noise is exclusive to its label, on the few of its points that
	// draw it.
	s.Anchors = nil
	if a, _, _ := anchorsOf(newStandInGen(s, 4).sample(s.Train)); a != nil && slices.Max(a.Value) > 0.3 {
		t.Fatalf("anchors read off a stand-in without: %v", a.Value)
	}
}

func ExampleStandIn_GenerateContext() {
	s := testStandIn().WithPoints(1000)
	train, test, err := s.GenerateContext(context.Background(), 1, new(bytes.Buffer), new(bytes.Buffer))
	if err != nil {
		panic(err)
	}
	fmt.Println(train.Points, test.Points, s.Labels)
	// Output: 1000 167 200
}

// A head label on 40 % of the points, with 17 labels a point drawn mostly
// from the point's topics (Delicious's shape): the log-share calibration
// brings the label's share within 0.005 of its curve; the first rule stops
// short, which is why fits record the rule they were made with. (Fixed
// seeds: the shares are known answers, not samples that could flake.)
func TestCalibrationReachesAConcentratedHead(t *testing.T) {
	if race.Enabled {
		t.Skip("a million label draws a rule, slow under the race detector")
	}
	s := testStandIn()
	s.Labels, s.Topics, s.Concentration, s.Train = 1000, 13, 0.97, 20000
	for i := range s.LabelsPerPoint {
		s.LabelsPerPoint[i] = math.Round(9 + 16*float64(i)/(quantileKnots-1))
	}
	// A knot a rank, (rank+1)^−0.57: with 17 labels a point, the head
	// label on about 0.4 of the points.
	s.LabelCurve = Curve{}
	for k := range s.Labels {
		s.LabelCurve.At = append(s.LabelCurve.At, (float64(k)+0.5)/float64(s.Labels))
		s.LabelCurve.Value = append(s.LabelCurve.Value, math.Pow(float64(k+1), -0.57))
	}
	var sum float64
	for k := range s.Labels {
		sum += s.LabelCurve.Eval((float64(k) + 0.5) / float64(s.Labels))
	}
	want := math.Min(s.LabelCurve.Eval(0.5/float64(s.Labels))*meanQuantile(s.LabelsPerPoint)/sum, 0.98)
	share := func(rule string) float64 {
		s.Calibration = rule
		g := newStandInGen(s, 2)
		const n = 20000
		top := 0
		var labels []int32
		for i := range n {
			r := rand.New(rand.NewPCG(7, uint64(i)))
			labels = g.drawLabels(r, labels[:0], drawQuantile(s.LabelsPerPoint, r.Float64()))
			if slices.Contains(labels, 0) { // ranks here
				top++
			}
		}
		return float64(top) / n
	}
	first, logShare := share(""), share(CalibrateLogShare)
	t.Logf("head label's share: want %.4f, first rule %.4f, log-share %.4f", want, first, logShare)
	if math.Abs(logShare-want) > 0.005 {
		t.Errorf("log-share calibration: head label on %.4f of the points, want %.4f", logShare, want)
	}
	if want-first < 0.008 {
		t.Errorf("first rule: head label on %.4f of the points, want %.4f: it no longer falls short, and the test no longer shows the difference", first, want)
	}
}

// proxy is proxyP1 seeded with 1, failing t on an error.
func proxy(t *testing.T, d, test *Dataset) float64 {
	t.Helper()
	v, err := proxyP1(context.Background(), d, test, proxyMaxLabels, 1)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The regression stops within pollRows rows of its context ending, and
// so does the fit, whose regressions take seconds each on Delicious:
// every command stops within a second of Ctrl-C.
func TestProxyStopsWithItsContext(t *testing.T) {
	s := testStandIn()
	d := newStandInGen(s, 3).sample(2000)
	// 1,600 training rows a pass: the third look is in the second pass.
	ctx := &endsAfter{Context: context.Background(), looks: 3}
	if _, err := proxyP1(ctx, d, nil, proxyMaxLabels, 1); !errors.Is(err, context.Canceled) || ctx.looks != -1 {
		t.Errorf("regression whose context ends at its third look: %v after %d more looks, want %v after none", err, ctx.looks+1, context.Canceled)
	}
	// The fit's concentration takes 12 looks; the 20th is in its first
	// regression.
	ctx = &endsAfter{Context: context.Background(), looks: 20}
	if _, err := FitStandIn(ctx, d, FitOptions{}); !errors.Is(err, context.Canceled) || ctx.looks != -1 {
		t.Errorf("fit whose context ends at its 20th look: %v after %d more looks, want %v after none", err, ctx.looks+1, context.Canceled)
	}
}

// endsAfter is a context that ends at the looks-th call of Err.
type endsAfter struct {
	context.Context
	looks int
}

func (c *endsAfter) Err() error {
	c.looks--
	if c.looks < 0 {
		return context.Canceled
	}
	return nil
}

// The regression the fit matches the signal on scores a test split when
// given one: a test split drawn with less signal than the training split
// scores lower than the training split's own held-out fifth, and labels or
// features beyond the training split's count as absent.
func TestProxyScoresTheTestSplit(t *testing.T) {
	s := testStandIn()
	s.Signal = 0.8
	train := newStandInGen(s, 3).sample(2000)
	heldOut := proxy(t, train, nil)
	weak := *s
	weak.Signal = 0
	test := newStandInGen(&weak, 3).sample(1000)
	if got := proxy(t, train, test); got >= heldOut-0.1 {
		t.Errorf("P@1 on a test split without signal %.3f, on the held-out fifth %.3f: want it well below", got, heldOut)
	}
	if got := proxy(t, train, train); got < heldOut {
		t.Errorf("P@1 on the training split itself %.3f, below the held-out fifth's %.3f", got, heldOut)
	}
	// A test split with one more label and feature, on every point.
	wide := *test
	wide.X, wide.Y = sparse.CSR{Rows: test.Len(), Cols: test.X.Cols + 1, Indptr: []int64{0}}, sparse.CSR{Rows: test.Len(), Cols: test.Y.Cols + 1, Indptr: []int64{0}}
	for i := range test.Len() {
		f, v := test.X.Row(i)
		l, _ := test.Y.Row(i)
		wide.X.Indices = append(append(wide.X.Indices, f...), int32(test.X.Cols))
		wide.X.Values = append(append(wide.X.Values, v...), 1)
		wide.Y.Indices = append(append(wide.Y.Indices, l...), int32(test.Y.Cols))
		wide.X.Indptr = append(wide.X.Indptr, int64(len(wide.X.Indices)))
		wide.Y.Indptr = append(wide.Y.Indptr, int64(len(wide.Y.Indices)))
	}
	if got, want := proxy(t, train, &wide), proxy(t, train, test); got != want {
		t.Errorf("P@1 with a label and a feature beyond the training split's %.4f, without %.4f", got, want)
	}
}

// pick returns the given rows of d, in that order.
func pick(d *Dataset, rows []int32) *Dataset {
	b := NewBatch(d, len(rows))
	b.Gather(d, rows)
	return &Dataset{Name: d.Name, X: b.X, Y: b.Y}
}

// The regression the fit matches the signal on reads its training rows in
// a seeded random order, as training does, so a training split sorted by
// label (each point by its largest label id) scores as it does unsorted.
// Read in the file's order, the sorted split scores 0.75 here against
// 0.88: plain SGD remembers the labels it saw last.
func TestProxyIgnoresTheOrderOfTheRows(t *testing.T) {
	s := testStandIn()
	s.Signal = 0.8
	all := newStandInGen(s, 3).sample(3000)
	rows := identity(3000)
	train, test := pick(all, rows[:2000]), pick(all, rows[2000:])
	byLabel := identity(2000)
	slices.SortStableFunc(byLabel, func(a, b int32) int { return cmp.Compare(lastLabel(train, a), lastLabel(train, b)) })
	sorted := pick(train, byLabel)
	got, want := proxy(t, sorted, test), proxy(t, train, test)
	t.Logf("P@1 sorted by label %.4f, as drawn %.4f", got, want)
	if math.Abs(got-want) > 0.04 {
		t.Errorf("P@1 of the regression on a training split sorted by label %.4f, on the same rows as drawn %.4f", got, want)
	}
}

// The co-occurrence of a set too large to count whole is counted on
// points spread over it, so a set sorted by subject (each point by the
// topic most of its labels come from) measures what it does unsorted: its
// first 300 points would give a mean log lift of 0.75 against 1.69.
func TestSummarizeSpreadsTheCoOccurrence(t *testing.T) {
	s := testStandIn()
	g := newStandInGen(s, 3)
	d := g.sample(3000)
	topicOf := make([]int32, s.Labels) // by label id
	for rank, id := range g.labelIDs {
		topicOf[id] = g.topicOf[rank]
	}
	subject := make([]int32, d.Len())
	count := make([]int, s.Topics)
	for i := range subject {
		clear(count)
		l, _ := d.Y.Row(i)
		for _, k := range l {
			count[topicOf[k]]++
		}
		subject[i] = int32(slices.Index(count, slices.Max(count)))
	}
	bySubject := identity(d.Len())
	slices.SortStableFunc(bySubject, func(a, b int32) int { return cmp.Compare(subject[a], subject[b]) })
	want, got := Summarize(d, 300), Summarize(pick(d, bySubject), 300)
	t.Logf("co-occurrence on %d points: %.3f sorted by subject, %.3f as drawn", got.CoOccurrencePoints, got.CoOccurrence, want.CoOccurrence)
	if got.CoOccurrencePoints != 300 || want.CoOccurrencePoints != 300 {
		t.Errorf("co-occurrence on %d and %d points, want 300", got.CoOccurrencePoints, want.CoOccurrencePoints)
	}
	if math.Abs(got.CoOccurrence-want.CoOccurrence) > 0.2 {
		t.Errorf("co-occurrence of a set sorted by subject %.3f, of the same points as drawn %.3f", got.CoOccurrence, want.CoOccurrence)
	}
}

// When the pairs' room limits the co-occurrence's points, they are still
// spread over the set. Here the first half of the points carries labels 0
// to 99, the second half 100 to 199, and the room holds about 800 of the
// 3,000 points: spread, each pair of a half co-occurs on half the counted
// points, a lift of 2 (mean log lift log 2); the first 800 points would
// all be of the first half, lift 1.
func TestSummarizeSpreadsTheCoOccurrenceInThePairsRoom(t *testing.T) {
	const n, per = 3000, 100
	d := &Dataset{X: sparse.CSR{Rows: n, Cols: 1, Indptr: make([]int64, n+1)}, Y: sparse.CSR{Rows: n, Cols: 2 * per, Indptr: []int64{0}}}
	for i := range n {
		for k := range per {
			d.Y.Indices = append(d.Y.Indices, int32(i/(n/2)*per+k))
		}
		d.Y.Indptr = append(d.Y.Indptr, int64(len(d.Y.Indices)))
	}
	got := Summarize(d, 0)
	t.Logf("co-occurrence on %d points: %.4f", got.CoOccurrencePoints, got.CoOccurrence)
	room := 0.95 * coOccurrenceMaxPairs / (per * (per - 1) / 2.0)
	if got.CoOccurrencePoints >= n/2 || got.CoOccurrencePoints < n/5 {
		t.Errorf("co-occurrence on %d points, want the pairs' room to hold about %.0f", got.CoOccurrencePoints, room)
	}
	if math.Abs(got.CoOccurrence-math.Ln2) > 0.01 {
		t.Errorf("co-occurrence %.4f, want log 2 = %.4f: the counted points are not spread over both halves", got.CoOccurrence, math.Ln2)
	}
}

// lastLabel returns the largest label id of row i of d (−1 for none).
func lastLabel(d *Dataset, i int32) int32 {
	l, _ := d.Y.Row(int(i))
	m := int32(-1)
	for _, k := range l {
		m = max(m, k)
	}
	return m
}

// The regression scores fewer labels on a set whose points have many
// features, so that its sample keeps fitMinPoints points within
// fitSampleEntries: 301 features a point (Delicious-200K) give 178 labels
// and 5,010 points, where 1,024 labels gave 871.
func TestProxyLabelsKeepTheSampleLarge(t *testing.T) {
	set := func(n, labels, perPoint int) *Dataset {
		d := &Dataset{X: sparse.CSR{Rows: n, Cols: 1000, Indptr: make([]int64, n+1)}, Y: sparse.CSR{Rows: n, Cols: labels, Indptr: make([]int64, n+1)}}
		for i := range n {
			d.X.Indptr[i+1] = int64((i + 1) * perPoint)
		}
		d.X.Indices = make([]int32, n*perPoint)
		return d
	}
	for _, c := range []struct {
		n, labels, perPoint int
		want, points        int
	}{
		{4880, 159, 68, 159, 4880},      // Bibtex: every label, every point
		{12920, 983, 19, 983, 12920},    // Delicious
		{30000, 5000, 20, 1024, 13107},  // many labels, few features: the cap
		{20000, 205443, 301, 178, 5010}, // Delicious-200K's dimensions
		{300, 205443, 20000, 64, 209},   // features beyond reason: the floor
	} {
		d := set(c.n, c.labels, c.perPoint)
		if got := proxyLabels(d); got != c.want {
			t.Errorf("%d points of %d features, %d labels: the regression scores %d labels, want %d", c.n, c.perPoint, c.labels, got, c.want)
		}
		if got := sampleOf(d, proxyLabels(d)).Len(); got != c.points {
			t.Errorf("%d points of %d features, %d labels: a sample of %d points, want %d", c.n, c.perPoint, c.labels, got, c.points)
		}
	}
}

// The report sets the stand-in's regression P@1 beside the set's, and
// says so when the fit could not bring them within proxyMismatch.
func TestStandInReportSaysWhenTheFitFellShort(t *testing.T) {
	for _, c := range []struct {
		stand float64
		note  string
	}{
		{0.63, ""},
		{0.55, "the stand-in is harder than the set"},
		{0.71, "the stand-in is easier than the set"},
	} {
		s := testStandIn()
		s.Real = &Summary{Points: 3000, ProxyP1: 0.6298}
		s.ProxyP1 = c.stand
		var b strings.Builder
		if err := WriteStandInReport(&b, s, GenStats{}, GenStats{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), fmt.Sprintf("regression P@1 (fit)         0.6298       %.4f", c.stand)) {
			t.Errorf("stand-in at %.2f: no regression row in\n%s", c.stand, b.String())
		}
		if got := strings.Contains(b.String(), "note: the fit could not bring"); got != (c.note != "") || !strings.Contains(b.String(), c.note) {
			t.Errorf("stand-in at %.2f, set at 0.6298: want note %q in\n%s", c.stand, c.note, b.String())
		}
	}
	// With the trained model's figures, they decide the note.
	for _, c := range []struct {
		speed, late float64
		note        bool
	}{{0.55, 0.67, false}, {0.52, 0.67, true}, {0.55, 0.69, true}} {
		s := testStandIn()
		s.Real = &Summary{Points: 3000, ProxyP1: 0.6298, Speed: 0.55, Late: 0.67}
		s.ProxyP1, s.Speed, s.Late = 0.71, c.speed, c.late
		var b strings.Builder
		if err := WriteStandInReport(&b, s, GenStats{}, GenStats{}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.Contains(out, "note: the fit could not bring") || strings.Contains(out, "note: the default model's") != c.note ||
			!strings.Contains(out, fmt.Sprintf("P@1, epoch 1 (fit)           0.5500       %.4f", c.speed)) {
			t.Errorf("stand-in at %.2f and %.2f, set at 0.55 and 0.67: note %v wanted in\n%s", c.speed, c.late, c.note, out)
		}
	}
}

// A test split of more than fitSamplePoints points is scored on at most
// that many, every step-th point with the step rounded up: here 20,001
// points give a step of 2, and only the even points, which carry the label
// the regression predicts, are scored (every point, as a step rounded
// down would score them, gives 0.5).
func TestProxyScoresAtMostTheSampleOfATestSplit(t *testing.T) {
	var train, test strings.Builder
	fmt.Fprintf(&train, "100 2 2\n")
	for i := range 100 {
		if i%10 == 0 {
			train.WriteString("1 1:1\n")
		} else {
			train.WriteString("0 0:1\n")
		}
	}
	n := fitSamplePoints + 1
	fmt.Fprintf(&test, "%d 2 2\n", n)
	for i := range n {
		fmt.Fprintf(&test, "%d 0:1\n", i%2)
	}
	tr, err := ReadXC(strings.NewReader(train.String()), "train")
	if err != nil {
		t.Fatal(err)
	}
	te, err := ReadXC(strings.NewReader(test.String()), "test")
	if err != nil {
		t.Fatal(err)
	}
	if got := proxy(t, tr, te); got != 1 {
		t.Errorf("P@1 %.4f on a test split of %d points, want 1: only its even points are scored", got, n)
	}
}

// A vague point's features come from the feature curve alone: a set of
// vague points teaches the regression nothing beyond the labels'
// frequencies, one without them a great deal. (A stand-in without vague
// points draws the bytes it did before they existed: the coin is not
// tossed, and TestStandInKnownAnswer holds.)
func TestVaguePoints(t *testing.T) {
	s := testStandIn()
	s.Signal = 1
	clear := proxy(t, newStandInGen(s, 3).sample(2000), nil)
	vague := *s
	vague.Vague = 1
	d := newStandInGen(&vague, 3).sample(2000)
	blind := *d
	blind.X = sparse.CSR{Rows: d.Len(), Cols: d.X.Cols, Indptr: make([]int64, d.Len()+1)}
	all, prior := proxy(t, d, nil), proxy(t, &blind, nil)
	if all > prior+0.03 || clear < prior+0.3 {
		t.Errorf("P@1 on vague points %.3f, on clear points %.3f, from the labels' frequencies alone %.3f", all, clear, prior)
	}
	half := *s
	half.Vague = 0.5
	if got := proxy(t, newStandInGen(&half, 3).sample(2000), nil); !(got < clear-0.1 && got > all+0.1) {
		t.Errorf("P@1 with half the points vague %.3f, between %.3f and %.3f wanted", got, all, clear)
	}
}

// topLabels keeps the training split's most frequent labels, numbered by
// rank, in both splits; fifths splits as the regression does.
func TestTopLabelsAndFifths(t *testing.T) {
	read := func(text string) *Dataset {
		d, err := ReadXC(strings.NewReader(text), "t")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	train := read("5 2 4\n3 0:1\n1,3 1:1\n3 0:1\n1,2 1:1\n0,3 0:1\n")
	test := read("2 2 4\n0,2 0:1\n1,3 1:1\n")
	a, b := topLabels(train, test, 2)
	// Label 3 is on 4 points, label 1 on 2: they become 0 and 1.
	for _, c := range []struct {
		d    *Dataset
		want [][]int32
	}{{a, [][]int32{{0}, {0, 1}, {0}, {1}, {0}}}, {b, [][]int32{{}, {0, 1}}}} {
		if c.d.Labels() != 2 || c.d.X.Indices == nil {
			t.Fatalf("%d labels, features %v", c.d.Labels(), c.d.X.Indices)
		}
		for i, w := range c.want {
			if got, _ := c.d.Y.Row(i); !slices.Equal(got, w) {
				t.Errorf("point %d: labels %v, want %v", i, got, w)
			}
		}
	}
	if x, y := topLabels(train, test, 4); x != train || y != test {
		t.Error("a set with no more labels than kept was copied")
	}
	fit, held := fifths(train)
	if fit.Len() != 4 || held.Len() != 1 {
		t.Fatalf("fifths of 5 points: %d and %d", fit.Len(), held.Len())
	}
	if got, _ := held.Y.Row(0); !slices.Equal(got, []int32{3}) {
		t.Errorf("the held-out fifth is not the first row: %v", got)
	}
}

// A fit whose stand-in learns as fast as the set (here every set learns
// alike) keeps the fit without the speed model, its curve recorded; the
// learner sees the splits the fit promises.
func TestFitKeepsAStandInThatLearnsAsFast(t *testing.T) {
	if testing.Short() || race.Enabled {
		t.Skip("a fit is single-threaded arithmetic (seconds, ten times that under the race detector): the ordinary stage runs it")
	}
	want := testStandIn()
	d := newStandInGen(want, 3).sample(want.Train)
	plain, err := FitStandIn(context.Background(), d, FitOptions{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	learn := func(ctx context.Context, train, test *Dataset, epochs int, seed uint64) ([]float64, error) {
		calls++
		if train.Len() != 4*d.Len()/5 || test.Len() != d.Len()/5 || epochs != lateEpochs || seed < 1 || seed > realSeeds {
			t.Errorf("learning on %d and %d points, %d epochs, seed %d", train.Len(), test.Len(), epochs, seed)
		}
		p := make([]float64, epochs)
		for i := range p {
			p[i] = 0.3 + 0.01*float64(i)
		}
		return p, nil
	}
	got, err := FitStandIn(context.Background(), d, FitOptions{Seed: 9, Learn: learn})
	if err != nil {
		t.Fatal(err)
	}
	if calls != realSeeds+speedSeeds || got.Speed != 0.3 || got.Real.Speed != 0.3 || math.Abs(got.Late-0.39) > 1e-12 || math.Abs(got.Real.Late-0.39) > 1e-12 {
		t.Errorf("%d runs; speed %v (real %v), best %v (real %v)", calls, got.Speed, got.Real.Speed, got.Late, got.Real.Late)
	}
	got.Speed, got.Late, got.Real.Speed, got.Real.Late = 0, 0, 0, 0
	if !reflect.DeepEqual(got, plain) {
		t.Errorf("the fit changed:\n%+v\nwant\n%+v", got, plain)
	}
}

// curveOf takes Good–Turing's counts below goodTuringBelow, keeps the
// head's and the sum, and gives the ranks on no point what the ranks seen
// once carried; a set with no small count keeps its counts.
func TestCurveOfGoodTuring(t *testing.T) {
	// Seen 0 times: 7 ranks, once: 4, twice: 2, three times: 1. Good–
	// Turing: 1 → 2·2/4 = 1, 2 → 3·1/2 = 1.5, 3 stays (no rank seen
	// 4 times), 0 → 4/7; then all of them by 11/14, the counts they had
	// over the counts they got.
	counts := []int{9, 5, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0}
	c := curveOf(counts, 10)
	f := 11.0 / 14
	want := []float64{0.9, 0.5, 3 * f / 10, 1.5 * f / 10, 1.5 * f / 10, f / 10, f / 10, f / 10, f / 10}
	for range 7 {
		want = append(want, 4.0/7*f/10)
	}
	var sum float64
	for i, v := range c.Value {
		sum += v
		if math.Abs(v-want[i]) > 1e-12 {
			t.Errorf("rank %d (count %d): share %.6f, want %.6f", i, counts[i], v, want[i])
		}
	}
	if math.Abs(sum-2.5) > 1e-12 {
		t.Errorf("the curve sums to %.6f labels a point, the counts to 2.5", sum)
	}
	big := curveOf([]int{40, 20, 7, 5}, 50)
	for i, w := range []float64{0.8, 0.4, 0.14, 0.1} {
		if big.Value[i] != w {
			t.Errorf("no count below %d: rank %d's share %v, want %v", goodTuringBelow, i, big.Value[i], w)
		}
	}
	// No rank seen once: the empty rank's floor comes out of the small
	// counts, and the head and the sum stay.
	var sum2 float64
	two := curveOf([]int{10, 3, 2, 2, 0}, 10)
	for _, v := range two.Value {
		sum2 += v
	}
	if two.Value[0] != 1 || math.Abs(sum2-1.7) > 1e-12 || two.Value[4] <= 0 {
		t.Errorf("counts 10, 3, 2, 2, 0: shares %v, want the head's 1, a positive floor and the sum 1.7", two.Value)
	}
	// Ranks on no point and none seen once: a quarter point each, unless
	// that would be more than zeroMass of the counts.
	if v := curveOf([]int{40, 20, 0}, 50).Value[2]; v != 0.25/50 {
		t.Errorf("one empty rank: share %v, want a quarter point", v)
	}
	empty := make([]int, 1000)
	empty[0] = 8
	e := curveOf(empty, 4)
	if v, w := e.Value[len(e.Value)-1], zeroMass*8/999/4; math.Abs(v-w) > 1e-15 {
		t.Errorf("999 empty ranks: share %v, want %v", v, w)
	}
}

// A stand-in fitted to a sample too small for its labels (most of them on
// no point) keeps the sample's head and labels a point.
func TestFitToASparseSampleKeepsTheHead(t *testing.T) {
	if testing.Short() || race.Enabled {
		t.Skip("a fit is single-threaded arithmetic (seconds, ten times that under the race detector): the ordinary stage runs it")
	}
	s := testStandIn()
	s.Labels, s.Topics, s.Train = 40000, 2000, 2000
	s.LabelCurve = Curve{}
	for _, q := range []float64{1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1} {
		s.LabelCurve.At = append(s.LabelCurve.At, q)
		s.LabelCurve.Value = append(s.LabelCurve.Value, 0.08*math.Pow(q/1e-5, -0.6))
	}
	d := newStandInGen(s, 3).sample(s.Train)
	got, err := FitStandIn(context.Background(), d, FitOptions{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	train, _, err := got.GenerateContext(context.Background(), 1, new(bytes.Buffer), new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	g, r := train.Summary, got.Real
	t.Logf("labels on no point of the sample: %.3f; top label %.4f (sample %.4f), labels a point %.3f (%.3f)",
		1-float64(usedLabels(d))/float64(s.Labels), g.TopLabelShare, r.TopLabelShare, g.AvgLabels, r.AvgLabels)
	if math.Abs(g.TopLabelShare-r.TopLabelShare) > 0.15*r.TopLabelShare {
		t.Errorf("top label on %.4f of the stand-in's points, %.4f of the sample's", g.TopLabelShare, r.TopLabelShare)
	}
	if math.Abs(g.AvgLabels-r.AvgLabels) > 0.05*r.AvgLabels {
		t.Errorf("%.3f labels a point on the stand-in, %.3f on the sample", g.AvgLabels, r.AvgLabels)
	}
}

// usedLabels counts the labels on at least one point of d.
func usedLabels(d *Dataset) int {
	seen := map[int32]bool{}
	for _, l := range d.Y.Indices {
		seen[l] = true
	}
	return len(seen)
}
