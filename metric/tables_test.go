package metric

import (
	"math"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/lsh"
	"github.com/hetsgd/hetsgd/model"
)

// oneBucket hashes every vector to bucket 0 of each of its tables: every
// row is retrieved, in row order.
type oneBucket struct{ l int }

func (o oneBucket) Tables() int { return o.l }
func (o oneBucket) Bits() int   { return 1 }
func (o oneBucket) Hash(codes []uint32, _ []float32) {
	clear(codes)
}

// trained returns the bundled Bibtex set, a network over it with a label-
// major twin, and parameters for each that are the same network, trained a
// little so that its ranking is not the initial one's.
func trained(t *testing.T) (test *data.Dataset, m, mt *model.MLP, p, pt []float32) {
	t.Helper()
	train, test, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.Config{Inputs: train.Features(), Hidden: []int{32}, Outputs: train.Labels()}
	m, _ = model.New(cfg)
	p = make([]float32, m.NumParams())
	m.Init(p, 1)
	g := make([]float32, len(p))
	ws := m.NewWorkspace(256)
	b := data.NewBatch(train, 256)
	for lo := 0; lo+256 <= train.Len(); lo += 256 {
		b.Range(train, lo, lo+256)
		ws.Gradient(p, g, &b.X, &b.Y)
		for i := range p {
			p[i] -= 0.5 * g[i]
		}
	}
	cfg.LabelMajor = true
	mt, _ = model.New(cfg)
	pt = make([]float32, len(p))
	copy(pt, p)
	last := m.Layers()[1]
	copy(pt[last.W:last.B], m.OutputRows(nil, p))
	return test, m, mt, p, pt
}

// sameScores compares the scores but the loss, which approximate top-k does
// not score, to rounding: the points' sums are added in other groups.
func sameScores(a, b Scores) bool {
	return a.Points == b.Points && near(a.P1, b.P1) && near(a.P3, b.P3) && near(a.P5, b.P5) &&
		near(a.NDCG1, b.NDCG1) && near(a.NDCG3, b.NDCG3) && near(a.NDCG5, b.NDCG5) && a.Loss == 0
}

// With tables that retrieve every row and a budget of all of them, the
// approximate top-k is the exact one, in either layout of the output layer.
func TestTablesAllRetrievedEqualsExact(t *testing.T) {
	test, m, mt, p, pt := trained(t)
	exact := NewEvaluator(m, test, 100, 0).Evaluate(p)
	if exact.P1 == 0 {
		t.Fatal("the trained network predicts nothing right: the test would prove nothing")
	}
	for _, c := range []struct {
		name string
		m    *model.MLP
		p    []float32
	}{{"feature-major", m, p}, {"label-major", mt, pt}} {
		e := NewEvaluator(c.m, test, 100, 0)
		if err := e.SetTables(Tables{Family: oneBucket{3}, Capacity: test.Labels(), Budget: test.Labels()}); err != nil {
			t.Fatal(err)
		}
		if got := e.Evaluate(c.p); !sameScores(got, exact) {
			t.Errorf("%s: approximate %+v, exact %+v", c.name, got, exact)
		}
	}
}

// A budget of b rows from tables that list every row in order ranks only
// labels 0…b−1: the scores are the exact network's with every other
// label's output removed.
func TestTablesBudgetRanksRetrievedOnly(t *testing.T) {
	test, m, _, p, _ := trained(t)
	const budget = 20
	e := NewEvaluator(m, test, 100, 0)
	if err := e.SetTables(Tables{Family: oneBucket{2}, Capacity: test.Labels(), Budget: budget}); err != nil {
		t.Fatal(err)
	}
	got := e.Evaluate(p)
	// The reference: the exact evaluator, every label past the budget's
	// bias lowered far enough that it never ranks in a top 5.
	q := append([]float32(nil), p...)
	last := m.Layers()[1]
	for j := budget; j < last.Out; j++ {
		q[last.B+j] = -1e30
	}
	want := NewEvaluator(m, test, 100, 0).Evaluate(q)
	if !sameScores(got, want) {
		t.Errorf("approximate %+v, want %+v", got, want)
	}
	if all := NewEvaluator(m, test, 100, 0).Evaluate(p); got.P1 >= all.P1 {
		t.Errorf("P@1 %v over %d labels, %v over all: the budget did not bind", got.P1, budget, all.P1)
	}
}

// An approximate evaluation allocates nothing once set, tables included.
func TestTablesNoAlloc(t *testing.T) {
	race.SkipAllocs(t)
	test, m, _, p, _ := trained(t)
	fam, err := lsh.NewDWTA(32, 4, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEvaluator(m, test, 256, 0)
	if err := e.SetTables(Tables{Family: fam, Capacity: 32, Budget: 50, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	first := e.Evaluate(p)
	if a := testing.AllocsPerRun(3, func() { e.Evaluate(p) }); a != 0 {
		t.Fatalf("Evaluate allocates %v times", a)
	}
	if again := e.Evaluate(p); again != first {
		t.Fatalf("two evaluations differ: %+v and %+v", first, again)
	}
	if first.P1 == 0 {
		t.Errorf("DWTA tables over a trained network rank no label right: %+v", first)
	}
}

// A ranker with tables that retrieve every row ranks as the network does;
// with a budget of b rows of such tables, only labels 0…b−1, and a point
// gets fewer labels than asked when fewer are retrieved.
func TestTableRanker(t *testing.T) {
	test, m, _, p, _ := trained(t)
	ws := m.NewWorkspace(test.Len())
	h := append([]float32(nil), ws.Hidden(p, &test.X)...)
	ws.Forward(p, &test.X)
	L := test.Labels()
	for _, budget := range []int{L, 20, 3} {
		r, err := NewTableRanker(m, p, Tables{Family: oneBucket{2}, Capacity: L, Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		const points = 50
		all, allScores, counts := make([]int32, 5*points), make([]float32, 5*points), make([]int, points)
		r.TopAll(h[:points*len(h)/test.Len()], 5, all, allScores, counts)
		for i := range points {
			n, labels, scores := counts[i], all[5*i:5*i+5], allScores[5*i:5*i+5]
			row := ws.Logits()[i*L : (i+1)*L][:budget]
			want := model.TopK(row, 5, make([]int32, 5))
			if n != len(want) {
				t.Fatalf("budget %d, point %d: %d labels, want %d", budget, i, n, len(want))
			}
			for j := range n {
				// The dot products are summed in another order than the
				// forward pass's: equal to float32 rounding.
				if d := math.Abs(float64(scores[j] - row[want[j]])); labels[j] != want[j] || d > 1e-5*(1+math.Abs(float64(row[want[j]]))) {
					t.Fatalf("budget %d, point %d: %v %v, want %v", budget, i, labels[:n], scores[:n], want)
				}
			}
		}
	}
}

// Tables of another network's hidden width are refused, not hashed.
func TestTablesOfAnotherWidth(t *testing.T) {
	_, m, _, p, _ := trained(t) // hidden 32
	fam, err := lsh.NewDWTA(16, 4, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewTableRanker(m, p, Tables{Family: fam, Capacity: 8, Budget: 8}); err == nil || !strings.Contains(err.Error(), "take vectors of 16, but the network's last hidden layer is 32 wide") {
		t.Errorf("tables of width 16 for a hidden layer of 32: %v", err)
	}
}
