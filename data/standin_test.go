package data

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
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
	s.Real = &Summary{Points: 3, CoOccurrence: 0.5}
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
