package metric

import (
	"bytes"
	"testing"
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
	if _, err := NewPredictionWriter(&bytes.Buffer{}, "csv"); err == nil || PredictionFormat("csv").Valid() {
		t.Errorf("format csv: %v", err)
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
