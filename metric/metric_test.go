package metric

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/sparse"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// Hand-computed P@k and nDCG@k.
func TestRowScoresKnownAnswers(t *testing.T) {
	l2 := func(r int) float64 { return 1 / math.Log2(float64(r+1)) } // discount at rank r (1-based)
	for _, c := range []struct {
		top, labels []int32
		p, n        [3]float64
	}{
		// Top-1 right, one label: P@1=1, P@3=1/3, P@5=1/5; nDCG = 1 everywhere.
		{[]int32{7, 1, 2, 3, 4}, []int32{7}, [3]float64{1, 1. / 3, 1. / 5}, [3]float64{1, 1, 1}},
		// Hits at ranks 2 and 4 with three labels.
		{[]int32{0, 5, 1, 6, 2}, []int32{5, 6, 9}, [3]float64{0, 1. / 3, 2. / 5},
			[3]float64{0, l2(2) / (l2(1) + l2(2) + l2(3)), (l2(2) + l2(4)) / (l2(1) + l2(2) + l2(3))}},
		// No labels: zero.
		{[]int32{0, 1, 2, 3, 4}, nil, [3]float64{}, [3]float64{}},
	} {
		p, n := rowScores(c.top, c.labels)
		for k := 0; k < 3; k++ {
			if !near(p[k], c.p[k]) || !near(n[k], c.n[k]) {
				t.Errorf("top %v labels %v: P %v nDCG %v, want %v %v", c.top, c.labels, p, n, c.p, c.n)
			}
		}
	}
}

// An evaluator over a linear model whose weights put all mass on a known
// label scores exactly what that label predicts.
func TestEvaluatorKnownModel(t *testing.T) {
	// Feature j of every point predicts label j (identity weights); points
	// have one feature; labels: row 0 {0}, row 1 {2} (wrong, prediction 1),
	// row 2 {} (unlabeled), row 3 {3, 0}.
	x := sparse.CSR{Rows: 4, Cols: 4, Indptr: []int64{0, 1, 2, 3, 4}, Indices: []int32{0, 1, 2, 3}, Values: []float32{1, 1, 1, 1}}
	y := sparse.CSR{Rows: 4, Cols: 4, Indptr: []int64{0, 1, 2, 2, 4}, Indices: []int32{0, 2, 3, 0}}
	test := &data.Dataset{Name: "t", X: x, Y: y}
	m, err := model.New(model.Config{Inputs: 4, Outputs: 4})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	l := m.Layers()[0]
	for j := 0; j < 4; j++ {
		p[l.W+j*4+j] = 10
	}
	for _, bs := range []int{1, 3, 8} { // batch boundaries must not matter
		s := NewEvaluator(m, test, bs, 0).Evaluate(p)
		if !near(s.P1, 2.0/4) {
			t.Fatalf("batch %d: P@1 = %v, want 0.5 (two right of four points)", bs, s.P1)
		}
		// Loss: labeled rows only. Row 0: lse−10; row 1: lse−0; row 3:
		// lse − (10+0)/2, with lse = log(e^10 + 3).
		lse := math.Log(math.Exp(10) + 3)
		want := ((lse - 10) + lse + (lse - 5)) / 3
		if math.Abs(s.Loss-want) > 1e-5 {
			t.Fatalf("batch %d: loss %v, want %v", bs, s.Loss, want)
		}
	}
	if e := NewEvaluator(m, test, 2, 3); e.Points() != 3 {
		t.Fatalf("limit 3 scores %d points", e.Points())
	}
}

func TestEvaluatorNoAlloc(t *testing.T) {
	race.SkipAllocs(t)
	train, test, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := model.New(model.Config{Inputs: train.Features(), Hidden: []int{32}, Outputs: train.Labels()})
	p := make([]float32, m.NumParams())
	m.Init(p, 1)
	e := NewEvaluator(m, test, 256, 0)
	e.Evaluate(p)
	if a := testing.AllocsPerRun(3, func() { e.Evaluate(p) }); a != 0 {
		t.Fatalf("Evaluate allocates %v times", a)
	}
}

// stopAfter is a context whose Err turns to Canceled at its n-th call.
type stopAfter struct {
	context.Context
	n int
}

func (c *stopAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// A cancelled evaluation stops between two batches with an error wrapping
// the context's; an uncancelled one scores what Evaluate does, without
// allocating.
func TestEvaluateContext(t *testing.T) {
	train, test, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := model.New(model.Config{Inputs: train.Features(), Hidden: []int{16}, Outputs: train.Labels()})
	p := make([]float32, m.NumParams())
	m.Init(p, 1)
	e := NewEvaluator(m, test, 64, 0)
	want := e.Evaluate(p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if s, err := e.EvaluateContext(ctx, p); err != nil || s != want {
		t.Fatalf("EvaluateContext = %+v, %v; Evaluate = %+v", s, err, want)
	}
	if a := testing.AllocsPerRun(3, func() { e.EvaluateContext(ctx, p) }); !race.Enabled && a != 0 {
		t.Fatalf("EvaluateContext allocates %v times", a)
	}
	stop := &stopAfter{Context: context.Background(), n: 3}
	_, err = e.EvaluateContext(stop, p)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "after 192 of 2515 test points") {
		t.Fatalf("evaluation cancelled after 3 batches: %v", err)
	}
	cancel()
	if _, err := e.EvaluateContext(ctx, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled evaluation: %v", err)
	}
	if s := e.Evaluate(p); s != want {
		t.Fatalf("Evaluate after a cancelled evaluation: %+v, want %+v", s, want)
	}
}
