package standin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/progress/stage/stagetest"
)

// The fit tells its Reporter each of its stages in order, with the work of
// each: the searches' steps and the speed fit's runs, done rising to the
// stage's total. Here the stand-in's samples learn faster than the set
// (the learner says so), so the speed model's search runs whole.
func TestFitReportsItsStages(t *testing.T) {
	s := data.HandMadeStandIn()
	s.Train = 300
	d := sample(s, s.Train)
	d.Name = "the set"
	learn := func(_ context.Context, train, _ *data.Dataset, epochs int, _ uint64) ([]float64, error) {
		p := make([]float64, epochs)
		for i := range p {
			p[i] = 0.3
			if strings.Contains(train.Name, "stand-in") {
				p[i] = 0.6
			}
		}
		return p, nil
	}
	var got stagetest.Recorder
	if _, err := Fit(context.Background(), d, Options{Seed: 9, Learn: learn, Progress: &got}); err != nil {
		t.Fatal(err)
	}
	want := []string{"measuring the set ()", "concentration search (steps)", "anchors ()", "regression on the set (runs)",
		"prototype size (steps)", "signal search (steps)", "learning curves (runs)", "speed model search (runs)"}
	if !slices.Equal(got.Names, want) {
		t.Fatalf("stages %q\nwant %q", got.Names, want)
	}
	for i, name := range got.Names {
		done := got.Done[i]
		if !slices.IsSorted(done) {
			t.Errorf("%s: done %v does not rise", name, done)
		}
		if got.Total[i] > 0 && (len(done) == 0 || done[len(done)-1] != got.Total[i]) {
			t.Errorf("%s: done %v, want it to reach %v", name, done, got.Total[i])
		}
	}
}

// A Check that refuses the measured stand-in ends the fit before its
// searches, with the Check's error.
func TestFitCheckEndsItEarly(t *testing.T) {
	s := data.HandMadeStandIn()
	s.Train = 100
	d := sample(s, s.Train)
	var got stagetest.Recorder
	refused := errors.New("no room")
	var seen *data.StandIn
	_, err := Fit(context.Background(), d, Options{Progress: &got, Check: func(s *data.StandIn) error { seen = s; return refused }})
	if !errors.Is(err, refused) || seen == nil || seen.Train != 100 || seen.Features != s.Features {
		t.Fatalf("fit: %v; the check saw %+v", err, seen)
	}
	if want := []string{"measuring the set ()"}; !slices.Equal(got.Names, want) {
		t.Errorf("stages %q, want %q", got.Names, want)
	}
}
