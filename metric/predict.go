package metric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

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

// An OverflowError is a point whose scores are not finite: the weights
// are finite (loading checks them), but their products overflowed, and no
// ranking of them can be trusted.
type OverflowError struct {
	Point int     // the point's place in the data, from 0
	Score float32 // its first score that is not finite
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("point %d's scores overflow (%v): the model's weights are too large to score with", e.Point, e.Score)
}

// Predict scores the points next deals, chunk after chunk (next returns
// io.EOF after the last), with network m at parameters p, and calls emit
// with each point's top k labels in order. It holds one chunk at a time, so
// the data may be larger than memory; rows bounds a chunk's points. A done
// ctx stops it between chunks. A point whose top scores are not finite
// stops it with an *OverflowError, before it is emitted.
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
				if math.IsNaN(float64(row[l])) || math.IsInf(float64(row[l]), 0) {
					return fmt.Errorf("metric: %w", &OverflowError{Point: point, Score: row[l]})
				}
			}
			if err := emit(Prediction{Point: point, Labels: top, Scores: scores}); err != nil {
				return err
			}
			point++
		}
	}
}

// PredictionFormat is how a PredictionWriter writes a prediction.
type PredictionFormat string

const (
	// TSV is a line of tab-separated fields: the point, then a label:score
	// pair for each label, best first ("12\t7:3.25\t40:1.5").
	TSV PredictionFormat = "tsv"
	// JSONL is a JSON object a line, the labels and their scores in two
	// arrays: {"point":12,"labels":[7,40],"scores":[3.25,1.5]}.
	JSONL PredictionFormat = "jsonl"
)

// Valid reports whether f is one of the formats.
func (f PredictionFormat) Valid() bool { return f == TSV || f == JSONL }

// A PredictionWriter writes predictions to w, a line each, in format f.
// Scores are written as the shortest decimal that reads back as the same
// float32. Its Write is Predict's emit.
type PredictionWriter struct {
	w     io.Writer
	f     PredictionFormat
	line  []byte   // reused from line to line: writing allocates nothing
	names [][]byte // a label's name as written, when SetNames gave them
}

// SetNames has the labels written by name, names[id], not by id: in TSV
// as name:score (a name may hold colons: the score follows the last), in
// JSONL as strings. Names hold no tab or newline.
func (pw *PredictionWriter) SetNames(names []string) {
	pw.names = make([][]byte, len(names))
	for i, n := range names {
		if pw.f == JSONL {
			pw.names[i], _ = json.Marshal(n) // a string always marshals
		} else {
			pw.names[i] = []byte(n)
		}
	}
}

// appendLabel appends label l, by name when the writer has names.
func (pw *PredictionWriter) appendLabel(line []byte, l int32) []byte {
	if pw.names != nil {
		return append(line, pw.names[l]...)
	}
	return strconv.AppendInt(line, int64(l), 10)
}

// NewPredictionWriter returns a writer of predictions to w in format f
// (TSV or JSONL).
func NewPredictionWriter(w io.Writer, f PredictionFormat) (*PredictionWriter, error) {
	if !f.Valid() {
		return nil, fmt.Errorf("metric: prediction format %q: want %s or %s", f, TSV, JSONL)
	}
	return &PredictionWriter{w: w, f: f}, nil
}

// Write writes one prediction's line.
func (pw *PredictionWriter) Write(pr Prediction) error {
	line := pw.line[:0]
	if pw.f == TSV {
		line = strconv.AppendInt(line, int64(pr.Point), 10)
		for i, l := range pr.Labels {
			line = append(line, '\t')
			line = pw.appendLabel(line, l)
			line = append(line, ':')
			line = strconv.AppendFloat(line, float64(pr.Scores[i]), 'g', -1, 32)
		}
	} else {
		line = append(line, `{"point":`...)
		line = strconv.AppendInt(line, int64(pr.Point), 10)
		line = append(line, `,"labels":[`...)
		for i, l := range pr.Labels {
			if i > 0 {
				line = append(line, ',')
			}
			line = pw.appendLabel(line, l)
		}
		line = append(line, `],"scores":[`...)
		for i, s := range pr.Scores {
			if i > 0 {
				line = append(line, ',')
			}
			line = strconv.AppendFloat(line, float64(s), 'g', -1, 32)
		}
		line = append(line, "]}"...)
	}
	pw.line = append(line, '\n')
	_, err := pw.w.Write(pw.line)
	return err
}
