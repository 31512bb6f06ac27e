package metric

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteText writes the scores on one line, for people. tables says they
// were ranked through tables (Evaluator.SetTables), which score no loss.
func (s Scores) WriteText(w io.Writer, tables bool) error {
	loss := fmt.Sprintf("loss %.4f", s.Loss)
	if tables {
		loss = "through the tables" // no softmax over every label: no loss
	}
	ps := ""
	if s.Propensities {
		ps = fmt.Sprintf("  PSP@1 %.4f  PSP@3 %.4f  PSP@5 %.4f  PSnDCG@1 %.4f  PSnDCG@3 %.4f  PSnDCG@5 %.4f",
			s.PSP1, s.PSP3, s.PSP5, s.PSNDCG1, s.PSNDCG3, s.PSNDCG5)
	}
	_, err := fmt.Fprintf(w, "%d points  P@1 %.4f  P@3 %.4f  P@5 %.4f  nDCG@1 %.4f  nDCG@3 %.4f  nDCG@5 %.4f%s  %s\n",
		s.Points, s.P1, s.P3, s.P5, s.NDCG1, s.NDCG3, s.NDCG5, ps, loss)
	return err
}

// Fields are the scores as JSON names them, declared once for the run
// log's eval record (runlog.Eval embeds them) and WriteJSON: a reader of
// either reads both.
type Fields struct {
	P1    float64 `json:"p1"`
	P3    float64 `json:"p3"`
	P5    float64 `json:"p5"`
	NDCG1 float64 `json:"ndcg1"`
	NDCG3 float64 `json:"ndcg3"`
	NDCG5 float64 `json:"ndcg5"`
	// Propensity-scored, when measured (absent: not measured, or 0).
	PSP1    float64 `json:"psp1,omitempty"`
	PSP3    float64 `json:"psp3,omitempty"`
	PSP5    float64 `json:"psp5,omitempty"`
	PSNDCG1 float64 `json:"psndcg1,omitempty"`
	PSNDCG3 float64 `json:"psndcg3,omitempty"`
	PSNDCG5 float64 `json:"psndcg5,omitempty"`
	Loss    float64 `json:"loss"`
}

// Fields returns the scores' named fields.
func (s Scores) Fields() Fields {
	return Fields{P1: s.P1, P3: s.P3, P5: s.P5, NDCG1: s.NDCG1, NDCG3: s.NDCG3, NDCG5: s.NDCG5,
		PSP1: s.PSP1, PSP3: s.PSP3, PSP5: s.PSP5, PSNDCG1: s.PSNDCG1, PSNDCG3: s.PSNDCG3, PSNDCG5: s.PSNDCG5, Loss: s.Loss}
}

// WriteJSON writes the scores as one JSON object on a line, each named as
// the run log's eval record names it (Fields, and test_points). Scores
// ranked through tables (tables) add the tables' recall and retrieved.
func (s Scores) WriteJSON(w io.Writer, tables bool) error {
	r := struct {
		Fields
		Test int `json:"test_points"`
		// Pointers, so that a ranking through tables says its recall even
		// when it is 0, and an exact one says none.
		Recall    *float64 `json:"recall,omitempty"`
		Retrieved *float64 `json:"retrieved,omitempty"`
	}{Fields: s.Fields(), Test: s.Points}
	if tables {
		r.Recall, r.Retrieved = &s.Recall, &s.Retrieved
	}
	return json.NewEncoder(w).Encode(r)
}
