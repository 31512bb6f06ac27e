package standin_test

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/standin"
	"github.com/hetsgd/hetsgd/train"
)

// The speed fit: a set drawn from the speed model (vague points, a high
// topic share) learns its first epoch faster than the fit without vague
// points makes its stand-in learn; the fit then takes the speed model,
// and comes back with the set's first epoch and best.
func TestSpeedFitTakesTheSpeedModel(t *testing.T) {
	// A minute or more, several on a busy machine: the long stage runs it.
	// The ordinary stage checks the choice between the two fits with
	// stand-in learners (TestFitKeepsAStandInThatLearnsAsFast keeps the
	// plain fit, TestFitReportsItsStages runs the speed model's search).
	testdata.Long(t, "the fit trains the network some two hundred times")
	if race.Enabled {
		t.Skip("the fit trains the network some two hundred times: the long stage runs it without the race detector")
	}
	want := data.HandMadeStandIn()
	want.Train, want.Test = 4000, 1000
	want.Signal, want.TopicShare, want.Vague = 0.1, 0.6, 0.2
	var a, b bytes.Buffer
	if _, _, err := want.GenerateContext(context.Background(), 3, &a, &b); err != nil {
		t.Fatal(err)
	}
	trainSet, err := data.ReadXC(&a, "train")
	if err != nil {
		t.Fatal(err)
	}
	testSet, err := data.ReadXC(&b, "test")
	if err != nil {
		t.Fatal(err)
	}
	got, err := standin.Fit(context.Background(), trainSet, standin.Options{Seed: 9, Test: testSet, Learn: train.LearningCurve})
	if err != nil {
		t.Fatal(err)
	}
	if got.Vague == 0 {
		t.Errorf("signal %.3f, topic share %.3f, no vague points: not the speed model", got.Signal, got.TopicShare)
	}
	if math.Abs(got.Speed-got.Real.Speed) > 0.02 || math.Abs(got.Late-got.Real.Late) > 0.01 {
		t.Errorf("P@1 after epoch 1 %.4f, best %.4f; the set's %.4f and %.4f", got.Speed, got.Late, got.Real.Speed, got.Real.Late)
	}
}
