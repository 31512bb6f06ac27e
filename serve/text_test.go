package serve

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/tfidf"
)

// textModel is a network over the columns of a vectorizer fitted to a few
// labelled texts, with seeded weights.
func textModel(t testing.TB) Model {
	t.Helper()
	docs := []tfidf.Document{
		{Labels: []string{"fruit"}, Text: "apple banana apple pie"},
		{Labels: []string{"tool", "role::program"}, Text: "a hammer and a saw"},
		{Labels: []string{"fruit", "food"}, Text: "banana bread, cherry pie"},
	}
	tm, _, _, _, err := tfidf.Sets(tfidf.Defaults, docs, docs[:1])
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(model.Config{Inputs: len(tm.Terms), Hidden: []int{3}, Outputs: len(tm.Labels)})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	m.Init(p, 5)
	return Model{MLP: m, Params: p, Version: "text", Text: tm}
}

// Text is scored as its vectorizer's row is: /predict's texts and infer's
// text input give the top k of the row Transform makes, with the labels'
// names; metadata lists the text input and the names' output.
func TestTextIsItsRow(t *testing.T) {
	m := textModel(t)
	_, h := start(t, m, Options{})
	texts := []string{"apple pie and a saw", "nothing it knows", "Banana BREAD"}
	var pts [][2][]float64
	var r tfidf.Row
	for _, text := range texts {
		m.Text.Transform(text, &r)
		var p [2][]float64
		for n, j := range r.IDs {
			p[0], p[1] = append(p[0], float64(j)), append(p[1], float64(r.Values[n]))
		}
		pts = append(pts, p)
	}
	wantL, wantS := want(m, pts, 2)
	code, got := post(t, h.URL+"/predict", `{"texts": `+js(texts)+`, "top_k": 2}`)
	if code != 200 {
		t.Fatalf("/predict: %d %v", code, got)
	}
	var flatNames []string
	for i, p := range got["predictions"].([]any) {
		pm := p.(map[string]any)
		var names []string
		for _, l := range wantL[i] {
			names = append(names, m.Text.Labels[l])
		}
		flatNames = append(flatNames, names...)
		if fmt.Sprint(pm["labels"]) != fmt.Sprint(wantL[i]) || fmt.Sprint(pm["scores"]) != fmt.Sprint(wantS[i]) || fmt.Sprint(pm["names"]) != fmt.Sprint(names) {
			t.Errorf("/predict text %d: %v, want %v %v %v", i, pm, wantL[i], wantS[i], names)
		}
	}
	body := fmt.Sprintf(`{"parameters": {"top_k": 2}, "inputs": [{"name": "text", "datatype": "BYTES", "shape": [3], "data": %s}]}`, js(texts))
	code, got = post(t, h.URL+"/v2/models/hetsgd/infer", body)
	if code != 200 {
		t.Fatalf("infer: %d %v", code, got)
	}
	outs := got["outputs"].([]any)
	var flatL []int32
	for i := range wantL {
		flatL = append(flatL, wantL[i]...)
	}
	if len(outs) != 3 || fmt.Sprint(outs[0].(map[string]any)["data"]) != fmt.Sprint(flatL) || fmt.Sprint(outs[2].(map[string]any)["data"]) != fmt.Sprint(flatNames) || outs[2].(map[string]any)["datatype"] != "BYTES" {
		t.Errorf("infer outputs %v, want labels %v and names %v", outs, flatL, flatNames)
	}
	meta := fmt.Sprint(New(m, Options{}).metadata())
	if !strings.Contains(meta, "text") || !strings.Contains(meta, "label_names") {
		t.Errorf("metadata without the text input or the names: %s", meta)
	}
}

// Text to a model without a vectorizer, text beside features, text of the
// wrong type or too many: each a 400 that says what is wrong.
func TestBadTextRequests(t *testing.T) {
	_, plain := start(t, testModel(t, 1), Options{})
	_, text := start(t, textModel(t), Options{MaxPoints: 2})
	for _, c := range []struct{ url, body, says string }{
		{plain.URL + "/predict", `{"texts": ["apple"]}`, "takes features, not text"},
		{plain.URL + "/v2/models/hetsgd/infer", `{"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["apple"]}]}`, "takes features, not text"},
		{plain.URL + "/v2/models/hetsgd/infer", `{"outputs": [{"name": "label_names"}], "inputs": [{"name": "indices", "datatype": "INT32", "shape": [1], "data": [1]}, {"name": "offsets", "datatype": "INT64", "shape": [2], "data": [0, 1]}]}`, "label_names, with a text vectorizer"},
		{text.URL + "/predict", `{"texts": ["apple"], "instances": [{"indices": [1]}]}`, "not both"},
		{text.URL + "/predict", `{"texts": ["a", "b", "c"]}`, "3 texts: a request holds 1 to 2"},
		{text.URL + "/v2/models/hetsgd/infer", `{"inputs": [{"name": "text", "datatype": "FP32", "shape": [1], "data": ["apple"]}]}`, "want BYTES"},
		{text.URL + "/v2/models/hetsgd/infer", `{"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": [1]}]}`, "a list of strings"},
		{text.URL + "/v2/models/hetsgd/infer", `{"inputs": [{"name": "text", "datatype": "BYTES", "shape": [2], "data": ["a"]}]}`, "shape [2] for 1 strings"},
		{text.URL + "/v2/models/hetsgd/infer", `{"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["a"]}, {"name": "offsets", "datatype": "INT64", "shape": [1], "data": [0]}]}`, "not both"},
	} {
		code, got := post(t, c.url, c.body)
		if msg := fmt.Sprint(got["error"]); code != 400 || !strings.Contains(msg, c.says) {
			t.Errorf("%s: %d %q, want 400 saying %q", c.body, code, msg, c.says)
		}
	}
	// Labels' names are the vectorizer's, so a name holds what it holds.
	if m := textModel(t); !slices.Contains(m.Text.Labels, "role::program") {
		t.Fatalf("labels %v", m.Text.Labels)
	}
}

// oneBucket hashes every vector to bucket 0 of each table: every row is
// retrieved, in row order.
type oneBucket struct{}

func (oneBucket) Tables() int                      { return 2 }
func (oneBucket) Bits() int                        { return 1 }
func (oneBucket) Hash(codes []uint32, _ []float32) { clear(codes) }

// Through tables that retrieve every label, a server ranks as the network
// does; with a budget of two labels, it ranks labels 0 and 1 only, and a
// third asked for is -1, scored the lowest float32.
func TestRankThroughTables(t *testing.T) {
	m := testModel(t, 3)
	wantL, wantS := want(m, points, 3)
	for _, budget := range []int{5, 2} {
		r, err := metric.NewTableRanker(m.MLP, m.Params, metric.Tables{Family: oneBucket{}, Capacity: 5, Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		tm := m
		tm.Ranker = r
		_, h := start(t, tm, Options{})
		var inst []string
		for _, p := range points {
			inst = append(inst, fmt.Sprintf(`{"indices": %s, "values": %s}`, js(p[0]), js(p[1])))
		}
		code, got := post(t, h.URL+"/predict", `{"instances": [`+strings.Join(inst, ",")+`], "top_k": 3}`)
		if code != 200 {
			t.Fatalf("budget %d: %d %v", budget, code, got)
		}
		for i, p := range got["predictions"].([]any) {
			labels := fmt.Sprint(p.(map[string]any)["labels"])
			if budget == 5 && labels != fmt.Sprint(wantL[i]) {
				t.Errorf("all retrieved, point %d: %s, want %v (%v)", i, labels, wantL[i], wantS[i])
			}
			if budget == 2 && !strings.HasSuffix(labels, " -1]") {
				t.Errorf("two retrieved, point %d: %s, want the third -1", i, labels)
			}
		}
	}
}
