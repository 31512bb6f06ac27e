package metric

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/model"
)

// Prediction is one point's k highest-scoring labels, best first, with
// their scores (the network's outputs, before any sigmoid or softmax).
type Prediction struct {
	Point  int       // the point's place in the data, from 0
	Labels []int32   // valid until the next call of the callback
	Scores []float32 // valid until the next call of the callback
}

// Predict scores the points next deals, chunk after chunk (next returns
// io.EOF after the last), with network m at parameters p, and calls emit
// with each point's top k labels in order. It holds one chunk at a time, so
// the data may be larger than memory; rows bounds a chunk's points. A done
// ctx stops it between chunks.
func Predict(ctx context.Context, m *model.MLP, p []float32, k, rows int, next func(n int) (*data.Dataset, error), emit func(Prediction) error) error {
	if k < 1 {
		return fmt.Errorf("metric: top %d: need at least 1", k)
	}
	k = min(k, m.Config().Outputs)
	ws := m.NewWorkspace(rows)
	top := make([]int32, k)
	scores := make([]float32, k)
	point := 0
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("metric: prediction stopped after %d points: %w", point, err)
		}
		ds, err := next(rows)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if ds.Features() != m.Config().Inputs {
			return fmt.Errorf("metric: %s has %d features; the model takes %d", ds.Name, ds.Features(), m.Config().Inputs)
		}
		ws.Forward(p, &ds.X)
		logits, L := ws.Logits(), m.Config().Outputs
		for i := range ds.Len() {
			row := logits[i*L : (i+1)*L]
			model.TopK(row, k, top)
			for j, l := range top {
				scores[j] = row[l]
			}
			if err := emit(Prediction{Point: point, Labels: top, Scores: scores}); err != nil {
				return err
			}
			point++
		}
	}
}
