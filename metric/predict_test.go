package metric

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/sparse"
)

// Each format's line, byte for byte: the shortest decimal that reads back
// as the float32, labels best first.
func TestPredictionWriterFormats(t *testing.T) {
	preds := []Prediction{
		{Point: 0, Labels: []int32{7, 40}, Scores: []float32{3.25, 0.1}},
		{Point: 12, Labels: []int32{3}, Scores: []float32{-1e-7}},
	}
	for f, want := range map[PredictionFormat]string{
		TSV:   "0\t7:3.25\t40:0.1\n12\t3:-1e-07\n",
		JSONL: "{\"point\":0,\"labels\":[7,40],\"scores\":[3.25,0.1]}\n{\"point\":12,\"labels\":[3],\"scores\":[-1e-07]}\n",
	} {
		var b bytes.Buffer
		pw, err := NewPredictionWriter(&b, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range preds {
			if err := pw.Write(pr); err != nil {
				t.Fatal(err)
			}
		}
		if b.String() != want {
			t.Errorf("%s: %q, want %q", f, b.String(), want)
		}
	}
	// By name: a name's colons stay, JSON quotes what it must.
	names := make([]string, 41)
	names[7], names[40], names[3] = "role::program", `say "hi"`, "x"
	for f, want := range map[PredictionFormat]string{
		TSV:   "0\trole::program:3.25\tsay \"hi\":0.1\n12\tx:-1e-07\n",
		JSONL: "{\"point\":0,\"labels\":[\"role::program\",\"say \\\"hi\\\"\"],\"scores\":[3.25,0.1]}\n{\"point\":12,\"labels\":[\"x\"],\"scores\":[-1e-07]}\n",
	} {
		var b bytes.Buffer
		pw, _ := NewPredictionWriter(&b, f)
		pw.SetNames(names)
		for _, pr := range preds {
			if err := pw.Write(pr); err != nil {
				t.Fatal(err)
			}
		}
		if b.String() != want {
			t.Errorf("%s by name: %q, want %q", f, b.String(), want)
		}
	}
	if _, err := NewPredictionWriter(&bytes.Buffer{}, "csv"); err == nil || PredictionFormat("csv").Valid() {
		t.Errorf("format csv: %v", err)
	}
}

// Predict ranks each point's labels, whatever the chunks its source
// deals, and stops at a point whose scores are not finite, naming it.
func TestPredict(t *testing.T) {
	// Feature j of every point predicts label j, then label j+1 (mod 4).
	x := sparse.CSR{Rows: 3, Cols: 4, Indptr: []int64{0, 1, 2, 3}, Indices: []int32{0, 3, 2}, Values: []float32{1, 2, 1}}
	y := sparse.CSR{Rows: 3, Cols: 4, Indptr: []int64{0, 0, 0, 0}}
	ds := &data.Dataset{Name: "t", X: x, Y: y}
	m, err := model.New(model.Config{Inputs: 4, Outputs: 4})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	l := m.Layers()[0]
	for j := range 4 {
		p[l.W+j*4+j] = 2
		p[l.W+j*4+(j+1)%4] = 1
	}
	predict := func(rows int) (string, error) {
		var b bytes.Buffer
		pw, _ := NewPredictionWriter(&b, TSV)
		err := Predict(context.Background(), m, p, 2, rows, data.Chunks(ds, rows), pw.Write)
		return b.String(), err
	}
	const want = "0\t0:2\t1:1\n1\t3:4\t0:2\n2\t2:2\t3:1\n"
	for _, rows := range []int{1, 2, 8} {
		if got, err := predict(rows); got != want || err != nil {
			t.Errorf("chunks of %d: %q, %v; want %q", rows, got, err, want)
		}
	}
	p[l.W+3*4+3] = 3e38 // finite, but not twice over: point 1's feature is 2
	got, err := predict(8)
	var o *OverflowError
	if !errors.As(err, &o) || o.Point != 1 || got != "0\t0:2\t1:1\n" || !strings.Contains(err.Error(), "point 1's scores overflow (+Inf)") {
		t.Errorf("an overflowing point: %q, %v", got, err)
	}
}

// The scores' line and JSON object, with and without the tables' ranking.
func TestScoresWrite(t *testing.T) {
	s := Scores{P1: 0.5, P3: 0.25, P5: 0.125, NDCG1: 0.5, NDCG3: 0.375, NDCG5: 0.3125, Loss: 2.5, Points: 8}
	for _, c := range []struct {
		tables     bool
		text, json string
	}{
		{false, "8 points  P@1 0.5000  P@3 0.2500  P@5 0.1250  nDCG@1 0.5000  nDCG@3 0.3750  nDCG@5 0.3125  loss 2.5000\n",
			`{"p1":0.5,"p3":0.25,"p5":0.125,"ndcg1":0.5,"ndcg3":0.375,"ndcg5":0.3125,"loss":2.5,"test_points":8}` + "\n"},
		// Through tables a recall of 0 is said all the same.
		{true, "8 points  P@1 0.5000  P@3 0.2500  P@5 0.1250  nDCG@1 0.5000  nDCG@3 0.3750  nDCG@5 0.3125  through the tables\n",
			`{"p1":0.5,"p3":0.25,"p5":0.125,"ndcg1":0.5,"ndcg3":0.375,"ndcg5":0.3125,"loss":2.5,"test_points":8,"recall":0,"retrieved":0}` + "\n"},
	} {
		var text, js bytes.Buffer
		if err := s.WriteText(&text, c.tables); err != nil || text.String() != c.text {
			t.Errorf("tables %v: text %q (%v), want %q", c.tables, text.String(), err, c.text)
		}
		if err := s.WriteJSON(&js, c.tables); err != nil || js.String() != c.json {
			t.Errorf("tables %v: JSON %q (%v), want %q", c.tables, js.String(), err, c.json)
		}
	}
}
