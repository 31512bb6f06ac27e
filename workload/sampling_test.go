package workload

import (
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/sparse"
)

// A label on every point is always shared; one on none only when drawn
// at random; one on half the points unless the other batch−1 points all
// miss it and the draw does too.
func TestInclusionKnownAnswers(t *testing.T) {
	y := &sparse.CSR{Rows: 4, Cols: 10, Indptr: []int64{0, 2, 3, 5, 6}, Indices: []int32{0, 2, 0, 0, 2, 0}}
	pi := inclusion(y, 3, 2, 10)
	for k, want := range map[int]float64{0: 1, 1: 0.2, 2: 1 - 0.25*0.8} {
		if math.Abs(float64(pi[k])-want) > 1e-6 {
			t.Errorf("label %d: π %v, want %v", k, pi[k], want)
		}
	}
}

// A background table build under way when the run ends is joined by
// Close: its goroutine is over and its tables are in use.
func TestCloseJoinsTheBackgroundBuild(t *testing.T) {
	train, test, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewXML(train, test, []int{16}, 0, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSampling()
	s.K, s.L, s.Active, s.Rehash, s.Background = 2, 4, 0.1, 32, true
	if err := w.SetSampling(s); err != nil {
		t.Fatal(err)
	}
	wk, err := w.NewWorker(32, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	x := wk.(*sampledWorker)
	p, g := make([]float32, w.NumParams()), make([]float32, w.NumParams())
	w.Init(p, 1)
	stream := data.NewSampler(w.Size(), 1)
	for range 100 {
		x.Load(stream, 32)
		x.Gradient(p, g)
		if x.done != nil {
			break
		}
	}
	if x.done == nil {
		t.Fatal("no background build started")
	}
	building := x.spare
	x.Close()
	if x.done != nil || x.ix != building {
		t.Fatalf("after Close: a build still under way (%v) or its tables not in use", x.done != nil)
	}
	x.Close() // twice: nothing left to wait for
}
