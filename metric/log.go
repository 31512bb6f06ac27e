package metric

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Log writes a run log as JSON Lines: one JSON object per line, each with an
// "event" field. Every record is flushed as it is written, so a log read
// while a run is going (or after it crashed) holds whole records only.
type Log struct {
	name string
	f    *os.File
	w    *bufio.Writer
}

// CreateLog creates the log file path. An existing file is an error unless
// overwrite is set, so an earlier run's log is never lost by accident.
func CreateLog(path string, overwrite bool) (*Log, error) {
	flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if overwrite {
		flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("metric: log file %s already exists (choose another name, or overwrite it with --force)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("metric: %w", err)
	}
	return &Log{name: path, f: f, w: bufio.NewWriter(f)}, nil
}

// NewLog writes a log to w (tests, standard output).
func NewLog(w io.Writer) *Log { return &Log{name: "log", w: bufio.NewWriter(w)} }

// Write appends one record: a struct or map that marshals to a JSON object
// with an "event" field.
func (l *Log) Write(record any) error {
	if l == nil {
		return nil
	}
	b, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("metric: encoding a %T log record: %w", record, err)
	}
	b = append(b, '\n')
	if _, err := l.w.Write(b); err != nil {
		return fmt.Errorf("metric: writing %s: %w", l.name, err)
	}
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("metric: writing %s: %w", l.name, err)
	}
	return nil
}

// Close flushes and closes the log file.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("metric: writing %s: %w", l.name, err)
	}
	if l.f != nil {
		if err := l.f.Close(); err != nil {
			return fmt.Errorf("metric: closing %s: %w", l.name, err)
		}
	}
	return nil
}

// EvalRecord is the "eval" event: the metrics of one evaluation. Later
// versions add fields; these names never change.
type EvalRecord struct {
	Event        string  `json:"event"` // "eval"
	Epoch        float64 `json:"epoch"`
	Samples      int64   `json:"samples"`
	TrainSeconds float64 `json:"train_seconds"`
	P1           float64 `json:"p1"`
	P3           float64 `json:"p3"`
	P5           float64 `json:"p5"`
	NDCG1        float64 `json:"ndcg1"`
	NDCG3        float64 `json:"ndcg3"`
	NDCG5        float64 `json:"ndcg5"`
	Loss         float64 `json:"loss"`
	TrainLoss    float64 `json:"train_loss"`
	TestPoints   int     `json:"test_points"`
}

// NewEvalRecord fills an eval record from scores.
func NewEvalRecord(epoch float64, samples int64, trainSeconds float64, s Scores, trainLoss float64) EvalRecord {
	return EvalRecord{Event: "eval", Epoch: epoch, Samples: samples, TrainSeconds: trainSeconds,
		P1: s.P1, P3: s.P3, P5: s.P5, NDCG1: s.NDCG1, NDCG3: s.NDCG3, NDCG5: s.NDCG5,
		Loss: s.Loss, TrainLoss: trainLoss, TestPoints: s.Points}
}

// Best returns the evaluation with the highest P@1 (the earliest on ties) and
// false when there is none.
func Best(evals []EvalRecord) (EvalRecord, bool) {
	var best EvalRecord
	found := false
	for _, e := range evals {
		if !found || e.P1 > best.P1 {
			best, found = e, true
		}
	}
	return best, found
}

// TimeTo returns the training seconds of the first evaluation whose P@1
// reaches target, and false when none does.
func TimeTo(evals []EvalRecord, target float64) (float64, bool) {
	for _, e := range evals {
		if e.P1 >= target {
			return e.TrainSeconds, true
		}
	}
	return 0, false
}
