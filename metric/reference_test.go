package metric

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/model"
)

// PSP@k and PSnDCG@k on Bibtex and Delicious equal, to 1e-6, a second
// computation of the Extreme Classification Repository's definitions
// (testdata/psp_reference.py, NumPy on dense arrays) from the same
// top-5 predictions. The predictions are a linear model's whose weights
// count how often a feature and a label share a training point: a ranking
// that hits head and tail labels alike, as a trained one does.
func TestPropensityScoresMatchTheReference(t *testing.T) {
	py := testdata.NumPy(t)
	sets := map[string]func() (*data.Dataset, *data.Dataset){
		"bibtex": func() (*data.Dataset, *data.Dataset) {
			tr, te, err := data.Bundled("bibtex")
			if err != nil {
				t.Fatal(err)
			}
			return tr, te
		},
		"delicious": func() (*data.Dataset, *data.Dataset) {
			sets, err := data.Loader{}.LoadAny(testdata.Dir(t, "delicious"))
			if err != nil {
				t.Fatal(err)
			}
			return sets[0], sets[1]
		},
	}
	for _, name := range []string{"bibtex", "delicious"} {
		t.Run(name, func(t *testing.T) {
			train, test := sets[name]()
			got, q := scoreCooccurrence(t, train, test, Propensity{A: 0.55, B: 1.5})
			cmd := exec.Command(py, filepath.Join("testdata", "psp_reference.py"))
			cmd.Stdin = bytes.NewReader(q)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("the reference: %v", err)
			}
			var want Fields
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: PSP@1,3,5 %.6f %.6f %.6f, PSnDCG@1,3,5 %.6f %.6f %.6f (P@1 %.4f)", name, got.PSP1, got.PSP3, got.PSP5, got.PSNDCG1, got.PSNDCG3, got.PSNDCG5, got.P1)
			for _, c := range []struct {
				what      string
				got, want float64
			}{
				{"PSP@1", got.PSP1, want.PSP1}, {"PSP@3", got.PSP3, want.PSP3}, {"PSP@5", got.PSP5, want.PSP5},
				{"PSnDCG@1", got.PSNDCG1, want.PSNDCG1}, {"PSnDCG@3", got.PSNDCG3, want.PSNDCG3}, {"PSnDCG@5", got.PSNDCG5, want.PSNDCG5},
			} {
				if math.Abs(c.got-c.want) > 1e-6 || c.want == 0 {
					t.Errorf("%s %.8f, the reference's %.8f", c.what, c.got, c.want)
				}
			}
		})
	}
}

// scoreCooccurrence scores on test a linear model whose weight from
// feature f to label l is how many training points hold both, with
// propensity p, and returns its scores and the reference's input: the
// training counts, p, the test points' labels and their top 5 as Predict
// ranks them (in the evaluator's batches, so on the same logits).
func scoreCooccurrence(t *testing.T, train, test *data.Dataset, p Propensity) (Scores, []byte) {
	t.Helper()
	m, err := model.New(model.Config{Inputs: train.Features(), Outputs: train.Labels()})
	if err != nil {
		t.Fatal(err)
	}
	params := make([]float32, m.NumParams())
	l := m.Layers()[0]
	for i := range train.Len() {
		feats, _ := train.X.Row(i)
		labels, _ := train.Y.Row(i)
		for _, f := range feats {
			for _, y := range labels {
				params[l.W+int(f)*l.Out+int(y)]++
			}
		}
	}
	const rows = 256
	e := NewEvaluator(m, test, rows, 0)
	if err := e.SetPropensity(p.Inverse(&train.Y)); err != nil {
		t.Fatal(err)
	}
	s := e.Evaluate(params)
	q := struct {
		NTrain int       `json:"n_train"`
		Counts []int     `json:"counts"`
		A      float64   `json:"A"`
		B      float64   `json:"B"`
		Labels [][]int32 `json:"labels"`
		Top    [][]int32 `json:"top"`
	}{NTrain: train.Len(), Counts: make([]int, train.Labels()), A: p.A, B: p.B}
	for _, y := range train.Y.Indices {
		q.Counts[y]++
	}
	for i := range test.Len() {
		labels, _ := test.Y.Row(i)
		q.Labels = append(q.Labels, append([]int32{}, labels...))
	}
	if err := Predict(context.Background(), m, params, 5, rows, data.Chunks(test, rows), func(pr Prediction) error {
		q.Top = append(q.Top, append([]int32{}, pr.Labels...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}
