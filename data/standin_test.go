package data

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
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

func TestStandInDeterministic(t *testing.T) {
	s := HandMadeStandIn()
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
		s := HandMadeStandIn().WithPoints(1000)
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
	s := HandMadeStandIn()
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

func TestStandInJSONRoundTrip(t *testing.T) {
	s := HandMadeStandIn()
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
	s := HandMadeStandIn().WithPoints(1000)
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
	s := HandMadeStandIn()
	// A long tail of rare features, as in text.
	for k, q := range s.FeatureCurve.At {
		s.FeatureCurve.Value[k] = 0.2 * math.Pow(q*20, -2)
	}
	L := float64(s.Labels)
	// Rank 0 always, rank 1 most of the time, no other.
	s.Anchors = &Shares{At: []float64{0.5 / L, 1.5 / L, 2.5 / L}, Value: []float64{1, 0.8, 0}}
	g := newStandInGen(s, 4)
	d := g.sampleSplit(s.Train, 0)
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
	a, anchored, _ := Anchors(d)
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
	if a, _, _ := Anchors(newStandInGen(s, 4).sampleSplit(s.Train, 0)); a != nil && slices.Max(a.Value) > 0.3 {
		t.Fatalf("anchors read off a stand-in without: %v", a.Value)
	}
}

func ExampleStandIn_GenerateContext() {
	s := HandMadeStandIn().WithPoints(1000)
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
	s := HandMadeStandIn()
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

// The co-occurrence of a set too large to count whole is counted on
// points spread over it, so a set sorted by subject (each point by the
// topic most of its labels come from) measures what it does unsorted: its
// first 300 points would give a mean log lift of 0.75 against 1.69.
func TestSummarizeSpreadsTheCoOccurrence(t *testing.T) {
	s := HandMadeStandIn()
	g := newStandInGen(s, 3)
	d := g.sampleSplit(3000, 0)
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
	want, got := Summarize(d, 300), Summarize(d.Pick(bySubject, d.Name), 300)
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
		s := HandMadeStandIn()
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
		s := HandMadeStandIn()
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

// A Generator's samples are the points GenerateContext writes, for the
// stand-in it was made for and for one that differs in the knobs that
// shape a point; a stand-in of another layout is refused.
func TestGeneratorSamplesWhatGenerateWrites(t *testing.T) {
	s := HandMadeStandIn().WithPoints(300)
	g := s.Generator(5)
	t2 := *s
	t2.Signal, t2.Vague, t2.TopicShare, t2.PrototypeSize = 0.9, 0.2, 0.5, 12
	for _, c := range []*StandIn{s, &t2, s} {
		var tr, te bytes.Buffer
		if _, _, err := c.GenerateContext(context.Background(), 5, &tr, &te); err != nil {
			t.Fatal(err)
		}
		for split, b := range []*bytes.Buffer{&tr, &te} {
			want, err := ReadXC(b, "written")
			if err != nil {
				t.Fatal(err)
			}
			got := g.Sample(c, want.Len(), uint64(split))
			if !reflect.DeepEqual(got.X, want.X) || !reflect.DeepEqual(got.Y, want.Y) {
				t.Fatalf("signal %.2f, split %d: the sample differs from the written set", c.Signal, split)
			}
		}
	}
	other := *s
	other.Topics++
	defer func() {
		if recover() == nil {
			t.Error("a stand-in of other topics was sampled with the layout")
		}
	}()
	g.Sample(&other, 10, 0)
}

// Pick takes rows in the order given, features and labels alike; Spaced
// spreads its rows evenly and returns the set itself when it asks for all.
func TestPickAndSpaced(t *testing.T) {
	d, err := ReadXC(strings.NewReader("4 3 2\n0 0:1\n1 1:1\n0,1 2:1\n1 0:1 1:1\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	p := d.Pick([]int32{3, 0}, "p")
	if f, v := p.X.Row(0); p.Name != "p" || p.Len() != 2 || !slices.Equal(f, []int32{0, 1}) || !slices.Equal(v, []float32{1, 1}) {
		t.Errorf("picked %q of %d rows, first row %v %v", p.Name, p.Len(), f, v)
	}
	if l, _ := p.Y.Row(1); !slices.Equal(l, []int32{0}) {
		t.Errorf("second picked row's labels %v, want [0]", l)
	}
	if d.Spaced(4, "s") != d || d.Spaced(9, "s") != d {
		t.Error("Spaced of every row copied the set")
	}
	if s := d.Spaced(2, "s"); s.Len() != 2 {
		t.Errorf("Spaced(2): %d rows", s.Len())
	} else if l, _ := s.Y.Row(1); !slices.Equal(l, []int32{0, 1}) {
		t.Errorf("Spaced(2)'s second row is not row 2: labels %v", l)
	}
}
