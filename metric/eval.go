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
	// Propensity-scored precision and nDCG (Evaluator.SetPropensity; 0
	// without): each hit weighs its label's inverse propensity, and the
	// sum over the points is divided by the best the points' labels
	// allow, as the Extreme Classification Repository's tools (pyxclib's
	// psprecision and psndcg) define them.
	PSP1, PSP3, PSP5          float64
	PSNDCG1, PSNDCG3, PSNDCG5 float64
	Propensities              bool    // the six above were measured
	Loss                      float64 // mean over points with labels
	Points                    int
	// Approximate ranking through hash tables (Evaluator.SetTables):
	// Recall is the share of the points' true labels the tables
	// retrieved, Retrieved the mean number of labels retrieved a point.
	// A label the tables miss cannot be ranked: Recall bounds P@k.
	Recall, Retrieved float64
}

// The sums an evaluation adds point by point, at k = 1, 3, 5 each: P@k,
// nDCG@k, the propensity-scored gains of the ranking (precision's and
// nDCG's) and the best such gains the point's labels allow.
const (
	sumP = 3 * iota
	sumN
	sumPSP
	sumPSN
	sumBestPSP
	sumBestPSN
	rowSums
)

// ks are the cut-offs of the metrics.
var ks = [3]int{1, 3, 5}

// addRow adds to sums the metrics of one point from its top-5 predictions
// (best first) and its true labels; w, when not nil, is each label's
// inverse propensity.
func addRow(sums *[rowSums]float64, top []int32, labels []int32, w []float64) {
	if len(labels) == 0 {
		return
	}
	// best holds the largest weights of the point's labels, largest
	// first: the gains of the best ranking.
	var best [5]float64
	if w != nil {
		for _, l := range labels {
			v := w[l]
			for r := range best {
				if v > best[r] {
					copy(best[r+1:], best[r:len(best)-1])
					best[r] = v
					break
				}
			}
		}
	}
	var hits, dcg, psp, psdcg, bestP, bestD, idcg float64
	r := 0
	for ki, k := range ks {
		for ; r < k; r++ {
			disc := 1 / math.Log2(float64(r+2))
			if r < len(labels) {
				idcg += disc
				bestP += best[r]
				bestD += best[r] * disc
			}
			if r < len(top) && contains(labels, top[r]) {
				hits++
				dcg += disc
				if w != nil {
					psp += w[top[r]]
					psdcg += w[top[r]] * disc
				}
			}
		}
		sums[sumP+ki] += hits / float64(k)
		sums[sumN+ki] += dcg / idcg
		sums[sumPSP+ki] += psp / float64(k)
		sums[sumPSN+ki] += psdcg / idcg
		sums[sumBestPSP+ki] += bestP / float64(k)
		sums[sumBestPSN+ki] += bestD / idcg
	}
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
	sums    [rowSums]float64 // addRow's, over the points
	loss    float64
	labeled int
	w       []float64 // the labels' inverse propensities (SetPropensity); nil: none
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
	e.sums, e.loss, e.labeled = [rowSums]float64{}, 0, 0
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
			t.h, t.y, t.w, t.partial = e.ws.Hidden(p, &e.batch.X), &e.batch.Y, e.w, [tableParts][rowSums]float64{}
			kernel.Default().Run(t, tableParts)
			e.add(t.partial[:])
			continue
		}
		e.ws.Forward(p, &e.batch.X)
		t := &e.task
		t.logits, t.y, t.labels, t.w = e.ws.Logits(), &e.batch.Y, e.test.Labels(), e.w
		t.partial = [evalChunks][rowSums]float64{}
		kernel.Default().Run(t, evalChunks)
		e.add(t.partial[:])
		e.loss += e.ws.Loss(&e.batch.Y)
		for i := 0; i < e.batch.Len(); i++ {
			if e.batch.Y.RowNNZ(i) > 0 {
				e.labeled++
			}
		}
	}
	n := float64(e.limit)
	s := Scores{
		P1: e.sums[sumP] / n, P3: e.sums[sumP+1] / n, P5: e.sums[sumP+2] / n,
		NDCG1: e.sums[sumN] / n, NDCG3: e.sums[sumN+1] / n, NDCG5: e.sums[sumN+2] / n,
		Points: e.limit,
	}
	if e.w != nil {
		s.Propensities = true
		ratio := func(i, best int) float64 {
			if e.sums[best] == 0 {
				return 0
			}
			return e.sums[i] / e.sums[best]
		}
		s.PSP1, s.PSP3, s.PSP5 = ratio(sumPSP, sumBestPSP), ratio(sumPSP+1, sumBestPSP+1), ratio(sumPSP+2, sumBestPSP+2)
		s.PSNDCG1, s.PSNDCG3, s.PSNDCG5 = ratio(sumPSN, sumBestPSN), ratio(sumPSN+1, sumBestPSN+1), ratio(sumPSN+2, sumBestPSN+2)
	}
	if e.labeled > 0 && e.tables == nil {
		s.Loss = e.loss / float64(e.labeled)
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

// add adds the parts' sums of a batch, in order.
func (e *Evaluator) add(partial [][rowSums]float64) {
	for _, part := range partial {
		for i, v := range part {
			e.sums[i] += v
		}
	}
}

// SetPropensity makes Evaluate score PSP@k and PSnDCG@k too, weighing a
// hit on label l by w[l], its inverse propensity (Propensity.Inverse of
// the training set's labels); nil stops it. w holds a weight per label of
// the test set.
func (e *Evaluator) SetPropensity(w []float64) error {
	if w != nil && len(w) != e.test.Labels() {
		return fmt.Errorf("metric: %d propensities for %d labels", len(w), e.test.Labels())
	}
	e.w = w
	return nil
}

// ScorePropensity makes Evaluate score PSP@k and PSnDCG@k with propensity
// p fitted to the label counts of train, the training set of the model's
// run, which shares the test set's labels.
func (e *Evaluator) ScorePropensity(train *data.Dataset, p Propensity) error {
	if train.Labels() != e.test.Labels() {
		return fmt.Errorf("metric: the propensities' training set %s has %d labels, the test set %s %d", train.Name, train.Labels(), e.test.Name, e.test.Labels())
	}
	return e.SetPropensity(p.Inverse(&train.Y))
}

// evalChunks is the fixed number of row chunks of a batch, so that sums are
// reduced in the same order whatever the number of cores.
const evalChunks = 16

type evalTask struct {
	logits  []float32
	y       *sparse.CSR
	w       []float64
	labels  int
	top     []int32
	partial [evalChunks][rowSums]float64
}

func (t *evalTask) Part(c, n int) {
	lo, hi := c*t.y.Rows/n, (c+1)*t.y.Rows/n
	for i := lo; i < hi; i++ {
		top := model.TopK(t.logits[i*t.labels:(i+1)*t.labels], 5, t.top[5*i:5*i+5])
		labels, _ := t.y.Row(i)
		addRow(&t.partial[c], top, labels, t.w)
	}
}
