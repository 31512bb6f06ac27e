package data

import (
	"bytes"
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
)

// The label curves' exponents are those the documentation states, and
// each meets the condition that set it.
func TestPaperLabelPowerLaw(t *testing.T) {
	for _, c := range []struct {
		labels, train int
		avg, top      float64
		want          float64
	}{
		{670091, 490449, 5.45, 0, 0.758},
		{205443, 196606, 75.54, 0.402, 0.659},
	} {
		a := labelPowerLaw(c.labels, c.train, c.avg, c.top)
		if math.Abs(a-c.want) > 0.0005 {
			t.Errorf("labelPowerLaw(%d, %d, %v, %v) = %.4f, want %.3f", c.labels, c.train, c.avg, c.top, a, c.want)
		}
		// The shares sum to the labels a point has.
		head := c.avg / harmonic(c.labels, a)
		if c.top > 0 && math.Abs(head-c.top) > 1e-6 {
			t.Errorf("head share %.6f, want %v", head, c.top)
		}
		if c.top == 0 {
			if tail := head * math.Pow(float64(c.labels), -a) * float64(c.train); math.Abs(tail-1) > 1e-3 {
				t.Errorf("least frequent label on %.4f points, want 1", tail)
			}
		}
	}
}

func TestPoissonAndLogNormalQuantiles(t *testing.T) {
	if m := meanQuantile(onePlusPoissonQuantiles(4.45)); math.Abs(m-5.45) > 0.05 {
		t.Errorf("1 + Poisson(4.45): mean of the quantiles %.3f, want 5.45", m)
	}
	if m := meanQuantile(logNormalQuantiles(75.7, 0.5)); math.Abs(m-75.7)/75.7 > 0.02 {
		t.Errorf("log-normal of mean 75.7: mean of the quantiles %.3f", m)
	}
	q := onePlusPoissonQuantiles(0)
	if q[0] != 1 || q[len(q)-1] != 1 {
		t.Errorf("1 + Poisson(0) = %v, want all 1", q)
	}
}

// The papers' stand-ins are valid, generate the published means, and
// put no label on more points than the documented head share.
func TestPaperStandIns(t *testing.T) {
	// Single-threaded and seconds long; the race detector would make it
	// a minute and has nothing to find in it.
	if race.Enabled {
		t.Skip("single-threaded; runs without the race detector")
	}
	want := map[string]struct{ labels, features, top float64 }{
		"amazon-670k":    {5.45, 75.7, 0.0529},
		"delicious-200k": {75.54, 301, 0.402},
	}
	for _, name := range PaperStandInNames() {
		s, err := PaperStandIn(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Check(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w := want[name]
		if got := s.LabelCurve.Value[0]; math.Abs(got-w.top) > 0.0005 {
			t.Errorf("%s: head of the label curve %.4f, want %.4f", name, got, w.top)
		}
		var train, test bytes.Buffer
		n := 2000
		st, _, err := s.WithPoints(n).GenerateContext(t.Context(), 1, &train, &test)
		if err != nil {
			t.Fatal(err)
		}
		sum := st.Summary
		if math.Abs(sum.AvgLabels-w.labels)/w.labels > 0.03 || math.Abs(sum.AvgFeatures-w.features)/w.features > 0.03 {
			t.Errorf("%s: %.2f labels and %.2f features a point, want %.2f and %.1f", name, sum.AvgLabels, sum.AvgFeatures, w.labels, w.features)
		}
		// Sampling noise on 2,000 points: a few standard deviations.
		if slack := 4 * math.Sqrt(w.top*(1-w.top)/float64(n)); sum.TopLabelShare > w.top+slack {
			t.Errorf("%s: top label on %.4f of the points, above %.4f", name, sum.TopLabelShare, w.top)
		}
	}
	if _, err := PaperStandIn("bibtex"); err == nil {
		t.Error("PaperStandIn(bibtex): no error")
	}
}

func TestHarmonic(t *testing.T) {
	for _, n := range []int{1, 999, 1000, 1001, 5000, 200000} {
		for _, a := range []float64{0, 0.5, 0.758, 1, 1.5} {
			var want float64
			for k := 1; k <= n; k++ {
				want += math.Pow(float64(k), -a)
			}
			if got := harmonic(n, a); math.Abs(got-want)/want > 1e-10 {
				t.Errorf("harmonic(%d, %v) = %.12g, want %.12g", n, a, got, want)
			}
		}
	}
}
