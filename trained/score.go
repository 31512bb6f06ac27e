package trained

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/metric"
)

var (
	// ErrNoPoints is a test set without points: there is nothing to score.
	ErrNoPoints = errors.New("no points to score")
	// ErrOverflow is an evaluation whose loss is not finite: the weights
	// are finite (Read checks them), but their products overflowed, and no
	// score of them can be trusted.
	ErrOverflow = errors.New("the scores overflow: the model's weights are too large to score with")
)

// A ShapeError is data of other dimensions than the model's.
type ShapeError struct {
	Data             string // the data's name
	Features, Labels int    // the data's dimensions
	Inputs, Outputs  int    // the model's
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("%s has %d features and %d labels; the model takes %d and gives %d", e.Data, e.Features, e.Labels, e.Inputs, e.Outputs)
}

// Fits returns a *ShapeError unless ds has the features the model takes
// and the labels it gives.
func (m *Model) Fits(ds *data.Dataset) error {
	c := m.Config()
	if ds.Features() != c.Inputs || ds.Labels() != c.Outputs {
		return &ShapeError{Data: ds.Name, Features: ds.Features(), Labels: ds.Labels(), Inputs: c.Inputs, Outputs: c.Outputs}
	}
	return nil
}

// EvalRows is the points an evaluation scores at once: a workspace's
// worth, as training evaluates.
const EvalRows = 256

// NewEvaluator prepares the scoring of the model on test, or on its first
// points points (0: all). It refuses data the model does not fit
// (*ShapeError), a set without points (ErrNoPoints) and one none of whose
// points scored has a label (data.ErrNoLabels). Before Evaluate,
// the evaluator may be given tables to rank through (SetTables).
func (m *Model) NewEvaluator(test *data.Dataset, points int) (*metric.Evaluator, error) {
	if err := m.Fits(test); err != nil {
		return nil, err
	}
	if test.Len() == 0 {
		return nil, fmt.Errorf("trained: %s: %w", test.Name, ErrNoPoints)
	}
	if err := test.CheckLabelled(points); err != nil {
		return nil, err
	}
	return metric.NewEvaluator(m.MLP, test, EvalRows, points), nil
}

// Evaluate scores the model with e, made by NewEvaluator; a done ctx stops
// it. A loss that is not finite is ErrOverflow, returned with the scores
// so that the caller can say what the loss was.
func (m *Model) Evaluate(ctx context.Context, e *metric.Evaluator) (metric.Scores, error) {
	s, err := e.EvaluateContext(ctx, m.Params)
	if err != nil {
		return s, err
	}
	if math.IsNaN(s.Loss) || math.IsInf(s.Loss, 0) {
		return s, fmt.Errorf("trained: loss %v: %w", s.Loss, ErrOverflow)
	}
	return s, nil
}
