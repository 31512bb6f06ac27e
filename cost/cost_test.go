package cost

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/workload"
)

// The fit recovers a known linear model exactly, clamps a coefficient the
// data make negative, and a quick calibration on this machine gives a usable
// model.
func TestCalibration(t *testing.T) {
	truth := [nFeatures]float64{1e-4, 2e-10, 3e-11, 4e-9, 1e-10}
	var xs [][nFeatures]float64
	var ys []float64
	r := rand.New(rand.NewPCG(1, 1))
	for range 20 {
		x := [nFeatures]float64{1, float64(r.IntN(100000)), float64(r.IntN(10000000)), float64(r.IntN(100000)), float64(r.IntN(1000000))}
		xs = append(xs, x)
		ys = append(ys, truth[0]+truth[1]*x[1]+truth[2]*x[2]+truth[3]*x[3]+truth[4]*x[4])
	}
	got, err := fitCost(xs, ys)
	if err != nil {
		t.Fatal(err)
	}
	for j := range truth {
		if math.Abs(got[j]-truth[j]) > 1e-6*truth[j] {
			t.Fatalf("fit %v, want %v", got, truth)
		}
	}
	// A pure per-batch cost: every other coefficient must be 0, not negative.
	for i := range ys {
		ys[i] = 5e-5 + 1e-12*float64(i) - 1e-14*xs[i][1]
	}
	got, _ = fitCost(xs, ys)
	for j, c := range got {
		if c < 0 {
			t.Fatalf("coefficient %d negative: %v", j, got)
		}
	}
	var told stages
	c, err := CalibrateContext(context.Background(), true, nil, &told)
	if err != nil {
		t.Fatal(err)
	}
	// Its stages, in order, each shape counted.
	if want := "timing the gradient 0/6 1/6 2/6 3/6 4/6 5/6 6/6; timing the update; timing the sampled layer 0/3 1/3 2/3 3/3"; told.String() != want {
		t.Errorf("stages %q\nwant %q", told.String(), want)
	}
	// Six noisy shapes nearly determine the five coefficients, so the fit
	// may give the dense products' cost to the correlated per-logit and
	// per-weight terms; what must hold is that wider layers cost more, and
	// the update something.
	narrow, wide := workload.Shape{H1: 64, Dense: 64 * 983, Labels: 983, Params: 2000*64 + 64*983}, workload.Shape{H1: 256, Dense: 256 * 983, Labels: 983, Params: 2000*256 + 256*983}
	if !(c.Batch(wide, 64, 4096) > c.Batch(narrow, 64, 4096)) || !(c.PerParam > 0) {
		t.Fatalf("calibrated model %+v: a hidden layer of 256 must cost more than one of 64, and the update something", c)
	}
	if !c.Sampled() {
		t.Fatalf("calibrated model %+v has no sampled layer's terms", c)
	}
}

// A sampled layer's batch is priced by what it did: its logits' gathered
// products and softmax, its hash values, the hidden layers' products and
// the passes over the weights outside the output layer; its update by the
// parameters it touched. A dense batch's Work is zero and keeps Batch.
func TestBatchWorkKnownAnswers(t *testing.T) {
	c := Model{PerBatch: 1, PerSparse: 2, PerDense: 3, PerLogit: 5, PerWeight: 7, PerParam: 11, PerGather: 13, PerHash: 17, BuildShare: 0.5}
	// 10 features → 4 hidden → 6 labels: Dense 4·6, Params 10·4+4+4·6+6.
	s := workload.Shape{H1: 4, Dense: 24, Labels: 6, Params: 74, Out: 4}
	if got, want := c.BatchWork(s, 2, 3, workload.Work{}), c.Batch(s, 2, 3); got != want {
		t.Fatalf("a dense batch: %v, want Batch's %v", got, want)
	}
	w := workload.Work{Logits: 5, Hashes: 8, Overlapped: 4, Touched: 20}
	// 1 + 2·3·4 + 3·2·(24−24) + 5·5 + 13·5·4 + 17·(8 + 0.5·4) + 7·(74−24−6)
	want := 1.0 + 24 + 0 + 25 + 260 + 170 + 7*44
	if got := c.BatchWork(s, 2, 3, w); got != want {
		t.Fatalf("a sampled batch: %v, want %v", got, want)
	}
	if got := c.UpdateWork(s, w); got != 11*20 {
		t.Fatalf("a lazy update: %v, want %v", got, 11*20)
	}
	if got := c.UpdateWork(s, workload.Work{Logits: 5}); got != c.Update(s) {
		t.Fatalf("an update of every weight: %v, want %v", got, c.Update(s))
	}
	if (Model{PerBatch: 1}).Sampled() {
		t.Fatal("a model without sampled terms says it can price a sampled layer")
	}
}

// A model read from a file is refused when a coefficient is outside its
// bounds — negative, or so large that the virtual clock would overflow —
// naming the file and the coefficient; the shipped default passes.
func TestLoadRefusesOutOfBounds(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("the default model: %v", err)
	}
	dir := t.TempDir()
	for _, c := range []struct{ json, want string }{
		{`{"per_batch": 1e300, "per_param": 1e-10}`, "per_batch 1e+300: want seconds a batch in [0, 60]"},
		{`{"per_batch": 1e-5, "per_dense": 1.7e308}`, "per_dense 1.7e+308: want seconds a multiply-add in [0, 0.001]"},
		{`{"per_batch": 1e-5, "per_param": -1e-10}`, "per_param -1e-10"},
		{`{"per_batch": 1e-5, "build_share": 2}`, "build_share 2: want a share of a table build in [0, 1]"},
		{`{"per_param": 1e-10}`, "per_batch, per_sparse, per_dense and per_logit are all 0: the model charges nothing for a batch"},
	} {
		path := filepath.Join(dir, "cost.json")
		if err := os.WriteFile(path, []byte(c.json), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), "cost model "+path+": "+c.want) || !strings.Contains(err.Error(), "hetsgd calibrate") {
			t.Errorf("%s: %v; want %q", c.json, err, c.want)
		}
	}
	m := Default()
	m.PerLogit = math.Inf(1)
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "per_logit +Inf") {
		t.Errorf("an infinite coefficient: %v", err)
	}
}

// stages records what a stage.Reporter is told, as "name done/total …;".
type stages struct {
	b     strings.Builder
	total float64
}

func (s *stages) Stage(name string, total float64, _ string) {
	if s.b.Len() > 0 {
		s.b.WriteString("; ")
	}
	s.b.WriteString(name)
	s.total = total
}

func (s *stages) Update(done float64, _ string) { fmt.Fprintf(&s.b, " %g/%g", done, s.total) }

func (s *stages) String() string { return s.b.String() }
