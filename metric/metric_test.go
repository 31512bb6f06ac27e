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
		var sums [rowSums]float64
		addRow(&sums, c.top, c.labels, nil)
		p, n := [3]float64(sums[sumP:sumP+3]), [3]float64(sums[sumN:sumN+3])
		for k := 0; k < 3; k++ {
			if !near(p[k], c.p[k]) || !near(n[k], c.n[k]) {
				t.Errorf("top %v labels %v: P %v nDCG %v, want %v %v", c.top, c.labels, p, n, c.p, c.n)
			}
		}
	}
}

// Hand-computed propensity-scored gains: a point with labels 5 (weight 4),
// 6 (weight 2) and 9 (weight 8), hit at ranks 2 (label 5) and 4 (label
// 6). The best ranking puts 9, 5, 6 first.
func TestPropensityScoredKnownAnswers(t *testing.T) {
	l2 := func(r int) float64 { return 1 / math.Log2(float64(r+1)) }
	w := make([]float64, 10)
	w[5], w[6], w[9] = 4, 2, 8
	var sums [rowSums]float64
	addRow(&sums, []int32{0, 5, 1, 6, 2}, []int32{5, 6, 9}, w)
	idcg := [3]float64{l2(1), l2(1) + l2(2) + l2(3), l2(1) + l2(2) + l2(3)}
	for ki, c := range []struct{ psp, best, psn, bestN float64 }{
		{0, 8, 0, 8 * l2(1)},
		{4. / 3, 14. / 3, 4 * l2(2), 8*l2(1) + 4*l2(2) + 2*l2(3)},
		{6. / 5, 14. / 5, 4*l2(2) + 2*l2(4), 8*l2(1) + 4*l2(2) + 2*l2(3)},
	} {
		if got := sums[sumPSP+ki]; !near(got, c.psp) {
			t.Errorf("@%d: PSP gain %v, want %v", ks[ki], got, c.psp)
		}
		if got := sums[sumBestPSP+ki]; !near(got, c.best) {
			t.Errorf("@%d: best PSP gain %v, want %v", ks[ki], got, c.best)
		}
		if got := sums[sumPSN+ki]; !near(got, c.psn/idcg[ki]) {
			t.Errorf("@%d: PSnDCG gain %v, want %v", ks[ki], got, c.psn/idcg[ki])
		}
		if got := sums[sumBestPSN+ki]; !near(got, c.bestN/idcg[ki]) {
			t.Errorf("@%d: best PSnDCG gain %v, want %v", ks[ki], got, c.bestN/idcg[ki])
		}
	}
}

// The propensity follows the paper's formula: on N = 100 training points,
// a label on 9 of them weighs 1 + (ln 100 − 1)·2.5^0.55·10.5^−0.55 at A
// 0.55 and B 1.5; one on none 1 + (ln 100 − 1)·(2.5/1.5)^0.55.
func TestPropensityInverse(t *testing.T) {
	y := sparse.CSR{Rows: 100, Cols: 3, Indptr: make([]int64, 101)}
	for i := range 100 {
		if i < 9 {
			y.Indices = append(y.Indices, 0)
		}
		y.Indptr[i+1] = int64(len(y.Indices))
	}
	w := DefaultPropensity.Inverse(&y)
	C := (math.Log(100) - 1) * math.Pow(2.5, 0.55)
	if want := 1 + C*math.Pow(10.5, -0.55); !near(w[0], want) {
		t.Errorf("a label on 9 of 100 points weighs %v, want %v", w[0], want)
	}
	if want := 1 + C*math.Pow(1.5, -0.55); !near(w[1], want) || w[2] != w[1] {
		t.Errorf("labels on no point weigh %v and %v, want %v", w[1], w[2], want)
	}
}

// A propensity is a preset's name or A,B; its String reads back.
func TestPropensityFlag(t *testing.T) {
	for in, want := range map[string]Propensity{"amazon": {0.6, 2.6}, "XC": {0.55, 1.5}, "0.5, 0.4": {0.5, 0.4}, "1,2": {1, 2}} {
		var p Propensity
		if err := p.Set(in); err != nil || p != want {
			t.Errorf("%q: %v %v, want %v", in, p, err, want)
		}
		var q Propensity
		if err := q.Set(p.String()); err != nil || q != p {
			t.Errorf("%q: String %q reads back as %v %v", in, p.String(), q, err)
		}
	}
	for _, in := range []string{"", "0.5", "a,b", "0,1", "0.5,0", "0.5,-1", "11,1", "NaN,1"} {
		var p Propensity
		if err := p.Set(in); err == nil {
			t.Errorf("%q accepted as %v", in, p)
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
