package metric

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/sparse"
)

// Scores are the metrics of a model over a test set.
type Scores struct {
	P1, P3, P5          float64
	NDCG1, NDCG3, NDCG5 float64
	Loss                float64 // mean over points with labels
	Points              int
	// Approximate ranking through hash tables (Evaluator.SetTables):
	// Recall is the share of the points' true labels the tables
	// retrieved, Retrieved the mean number of labels retrieved a point.
	// A label the tables miss cannot be ranked: Recall bounds P@k.
	Recall, Retrieved float64
}

// rowScores returns P@1,3,5 and nDCG@1,3,5 of one point from its top-5
// predictions (best first) and its true labels.
func rowScores(top []int32, labels []int32) (p, n [3]float64) {
	if len(labels) == 0 {
		return p, n
	}
	ks := [3]int{1, 3, 5}
	var hits, dcg float64
	r := 0
	for ki, k := range ks {
		for ; r < k && r < len(top); r++ {
			if contains(labels, top[r]) {
				hits++
				dcg += 1 / math.Log2(float64(r+2))
			}
		}
		var idcg float64
		for q := 0; q < min(k, len(labels)); q++ {
			idcg += 1 / math.Log2(float64(q+2))
		}
		p[ki] = hits / float64(k)
		n[ki] = dcg / idcg
	}
	return p, n
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Evaluator scores a model over a test set in batches of its workspace's
// capacity. It allocates its buffers once; Evaluate and EvaluateContext do
// not allocate (but for the error of a cancelled evaluation).
type Evaluator struct {
	test    *data.Dataset
	ws      *model.Workspace
	batch   *data.Batch
	limit   int
	task    evalTask
	sums    [7]float64 // p1 p3 p5 n1 n3 n5 loss
	labeled int
	m       *model.MLP
	tables  *tableScorer // approximate top-k (SetTables); nil: exact
}

// NewEvaluator prepares the evaluation of test with networks of shape m,
// through a workspace of batchRows rows. limit > 0 evaluates only the first
// limit points (for sets too large to score in full at every evaluation).
func NewEvaluator(m *model.MLP, test *data.Dataset, batchRows, limit int) *Evaluator {
	if limit <= 0 || limit > test.Len() {
		limit = test.Len()
	}
	batchRows = EvalRows(test, batchRows, limit)
	e := &Evaluator{test: test, ws: m.NewWorkspace(batchRows), batch: data.NewBatch(test, batchRows), limit: limit, m: m}
	e.task.top = make([]int32, batchRows*5)
	return e
}

// EvalRows returns the rows of the batches NewEvaluator(m, test,
// batchRows, limit) scores, so that its workspace can be sized (and its
// memory checked) before it is made.
func EvalRows(test *data.Dataset, batchRows, limit int) int {
	if limit <= 0 || limit > test.Len() {
		limit = test.Len()
	}
	return max(1, min(batchRows, limit))
}

// ErrNoPoints is the error of an evaluation of a set without points.
var ErrNoPoints = errors.New("metric: no points to score")

// Points returns the number of test points scored.
func (e *Evaluator) Points() int { return e.limit }

// Evaluate scores parameters p.
func (e *Evaluator) Evaluate(p []float32) Scores {
	s, _ := e.EvaluateContext(context.Background(), p) // never cancelled
	return s
}

// EvaluateContext scores parameters p, or stops between two batches once
// ctx is done and returns an error wrapping ctx.Err(): scoring a large test
// set takes minutes, and an interrupted run must not wait for it.
func (e *Evaluator) EvaluateContext(ctx context.Context, p []float32) (Scores, error) {
	if e.limit == 0 {
		// P@k is a mean over the points: of none, it is no number.
		return Scores{}, ErrNoPoints
	}
	e.sums, e.labeled = [7]float64{}, 0
	if e.tables != nil {
		e.tables.build(e.m, p)
		e.tables.recall = [tableParts][3]float64{}
	}
	for lo := 0; lo < e.limit; lo += e.batch.Cap() {
		if err := ctx.Err(); err != nil {
			return Scores{}, fmt.Errorf("metric: evaluation stopped after %d of %d test points: %w", lo, e.limit, err)
		}
		hi := min(lo+e.batch.Cap(), e.limit)
		e.batch.Range(e.test, lo, hi)
		if t := e.tables; t != nil {
			t.h, t.y, t.partial = e.ws.Hidden(p, &e.batch.X), &e.batch.Y, [tableParts][6]float64{}
			kernel.Default().Run(t, tableParts)
			e.add(t.partial[:])
			continue
		}
		e.ws.Forward(p, &e.batch.X)
		t := &e.task
		t.logits, t.y, t.labels = e.ws.Logits(), &e.batch.Y, e.test.Labels()
		t.partial = [evalChunks][6]float64{}
		kernel.Default().Run(t, evalChunks)
		e.add(t.partial[:])
		e.sums[6] += e.ws.Loss(&e.batch.Y)
		for i := 0; i < e.batch.Len(); i++ {
			if e.batch.Y.RowNNZ(i) > 0 {
				e.labeled++
			}
		}
	}
	n := float64(e.limit)
	s := Scores{
		P1: e.sums[0] / n, P3: e.sums[1] / n, P5: e.sums[2] / n,
		NDCG1: e.sums[3] / n, NDCG3: e.sums[4] / n, NDCG5: e.sums[5] / n,
		Points: e.limit,
	}
	if e.labeled > 0 && e.tables == nil {
		s.Loss = e.sums[6] / float64(e.labeled)
	}
	if t := e.tables; t != nil {
		var found, labels, got float64
		for _, r := range t.recall {
			found, labels, got = found+r[0], labels+r[1], got+r[2]
		}
		if labels > 0 {
			s.Recall = found / labels
		}
		s.Retrieved = got / n
	}
	return s, nil
}

// add adds the parts' sums of a batch's P@k and nDCG@k, in order.
func (e *Evaluator) add(partial [][6]float64) {
	for _, part := range partial {
		for i, v := range part {
			e.sums[i] += v
		}
	}
}

// addRow adds to sums the P@1,3,5 and nDCG@1,3,5 of one point from its top
// predictions and its labels.
func addRow(sums *[6]float64, top, labels []int32) {
	p, n := rowScores(top, labels)
	for k := range 3 {
		sums[k] += p[k]
		sums[3+k] += n[k]
	}
}

// evalChunks is the fixed number of row chunks of a batch, so that sums are
// reduced in the same order whatever the number of cores.
const evalChunks = 16

type evalTask struct {
	logits  []float32
	y       *sparse.CSR
	labels  int
	top     []int32
	partial [evalChunks][6]float64
}

func (t *evalTask) Part(c, n int) {
	lo, hi := c*t.y.Rows/n, (c+1)*t.y.Rows/n
	for i := lo; i < hi; i++ {
		top := model.TopK(t.logits[i*t.labels:(i+1)*t.labels], 5, t.top[5*i:5*i+5])
		labels, _ := t.y.Row(i)
		addRow(&t.partial[c], top, labels)
	}
}
