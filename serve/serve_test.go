package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/sparse"
)

// testModel is a network of 6 features, 3 hidden units and 5 labels with
// seeded weights.
func testModel(t testing.TB, seed uint64) Model {
	t.Helper()
	m, err := model.New(model.Config{Inputs: 6, Hidden: []int{3}, Outputs: 5})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	m.Init(p, seed)
	return Model{MLP: m, Params: p, Version: fmt.Sprintf("seed %d", seed)}
}

// start runs a server of m with opt until the test ends, and returns its
// HTTP test server.
func start(t testing.TB, m Model, opt Options) (*Server, *httptest.Server) {
	t.Helper()
	s := New(m, opt)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	h := httptest.NewServer(s.Handler())
	t.Cleanup(func() { h.Close(); cancel(); <-done })
	return s, h
}

func post(t testing.TB, url, body string) (int, map[string]any) {
	t.Helper()
	r, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var v map[string]any
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: the answer %q is no JSON object: %v", url, b, err)
	}
	return r.StatusCode, v
}

// want is the top k of each point, scored by Forward and TopK directly.
func want(m Model, points [][2][]float64, k int) (labels [][]int32, scores [][]float32) {
	b := sparse.NewBuilder(m.MLP.Config().Inputs, false, len(points), 0)
	for _, p := range points {
		for n, f := range p[0] {
			b.Append(int32(f), float32(p[1][n]))
		}
		b.EndRow()
	}
	x := b.Build()
	ws := m.MLP.NewWorkspace(len(points))
	ws.Forward(m.Params, &x)
	L := m.MLP.Config().Outputs
	for i := range points {
		row := ws.Logits()[i*L : (i+1)*L]
		top := model.TopK(row, k, make([]int32, k))
		labels = append(labels, top)
		var s []float32
		for _, l := range top {
			s = append(s, row[l])
		}
		scores = append(scores, s)
	}
	return labels, scores
}

var points = [][2][]float64{
	{{0, 3}, {1, 0.5}},
	{{5}, {2}},
	{{1, 2, 4}, {0.25, 1, 3}},
}

// /predict and the protocol's infer give each point the top k that
// Forward and TopK give, alone or batched with other requests.
func TestPredictionsAreTheModels(t *testing.T) {
	m := testModel(t, 3)
	_, h := start(t, m, Options{})
	wantL, wantS := want(m, points, 3)
	var inst []string
	var idx, val []string
	off := []string{"0"}
	for _, p := range points {
		inst = append(inst, fmt.Sprintf(`{"indices": %s, "values": %s}`, js(p[0]), js(p[1])))
		for n := range p[0] {
			idx, val = append(idx, fmt.Sprint(p[0][n])), append(val, fmt.Sprint(p[1][n]))
		}
		off = append(off, fmt.Sprint(len(idx)))
	}
	code, got := post(t, h.URL+"/predict", `{"instances": [`+strings.Join(inst, ",")+`], "top_k": 3}`)
	if code != 200 {
		t.Fatalf("/predict: %d %v", code, got)
	}
	for i, p := range got["predictions"].([]any) {
		pm := p.(map[string]any)
		if fmt.Sprint(pm["labels"]) != fmt.Sprint(wantL[i]) || fmt.Sprint(pm["scores"]) != fmt.Sprint(wantS[i]) {
			t.Errorf("/predict point %d: %v %v, want %v %v", i, pm["labels"], pm["scores"], wantL[i], wantS[i])
		}
	}
	body := fmt.Sprintf(`{"id": "r1", "parameters": {"top_k": 3}, "inputs": [
		{"name": "indices", "datatype": "INT32", "shape": [%d], "data": [%s]},
		{"name": "offsets", "datatype": "INT64", "shape": [%d], "data": [%s]},
		{"name": "values", "datatype": "FP32", "shape": [%d], "data": [%s]}]}`,
		len(idx), strings.Join(idx, ","), len(off), strings.Join(off, ","), len(val), strings.Join(val, ","))
	code, got = post(t, h.URL+"/v2/models/hetsgd/infer", body)
	if code != 200 || got["id"] != "r1" || got["model_version"] != "seed 3" {
		t.Fatalf("infer: %d %v", code, got)
	}
	outs := got["outputs"].([]any)
	labels, scores := outs[0].(map[string]any), outs[1].(map[string]any)
	if fmt.Sprint(labels["shape"]) != "[3 3]" || labels["datatype"] != "INT32" || scores["datatype"] != "FP32" {
		t.Errorf("infer outputs %v", outs)
	}
	var flatL []int32
	var flatS []float32
	for i := range wantL {
		flatL, flatS = append(flatL, wantL[i]...), append(flatS, wantS[i]...)
	}
	if fmt.Sprint(labels["data"]) != fmt.Sprint(flatL) || fmt.Sprint(scores["data"]) != fmt.Sprint(flatS) {
		t.Errorf("infer: labels %v scores %v, want %v %v", labels["data"], scores["data"], flatL, flatS)
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// Requests queued together are scored in shared passes (here, passes of
// 2 points over requests of 1 to 3) and each gets what it gets alone.
func TestBatchedEqualsAlone(t *testing.T) {
	m := testModel(t, 5)
	s := New(m, Options{MaxBatch: 2})
	var wg sync.WaitGroup
	got := make([]*job, 12)
	for r := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps := points[:1+r%3]
			b := sparse.NewBuilder(6, false, len(ps), 0)
			for _, p := range ps {
				for n, f := range p[0] {
					b.Append(int32(f), float32(p[1][n]))
				}
				b.EndRow()
			}
			j, err := s.predict(context.Background(), b.Build(), nil, 2)
			if err != nil {
				t.Error(err)
			}
			got[r] = j
		}()
	}
	// Every request queues before the scorer starts: one batch.
	for len(s.queue) < len(got) {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	wg.Wait()
	wantL, wantS := want(m, points, 2)
	for r, j := range got {
		for i := range 1 + r%3 {
			if !slices.Equal(j.labels[2*i:2*i+2], wantL[i]) || !slices.Equal(j.scores[2*i:2*i+2], wantS[i]) {
				t.Errorf("request %d point %d: %v %v, want %v %v", r, i, j.labels[2*i:2*i+2], j.scores[2*i:2*i+2], wantL[i], wantS[i])
			}
		}
	}
}

// What a request gets wrong is a 4xx answer naming it, never a 5xx.
func TestBadRequests(t *testing.T) {
	m := testModel(t, 1)
	_, h := start(t, m, Options{MaxPoints: 2, MaxBody: 4096, MaxK: 4})
	infer := func(inputs string) string { return `{"inputs": [` + inputs + `]}` }
	ok := `{"name": "indices", "datatype": "INT32", "shape": [1], "data": [1]}, {"name": "offsets", "datatype": "INT64", "shape": [2], "data": [0, 1]}`
	for _, c := range []struct {
		path, body string
		code       int
		says       string
	}{
		{"/predict", `{`, 400, "no request"},
		{"/predict", `{"instances": [{"indices": [1]}]} x`, 400, "more after"},
		{"/predict", `{"instances": [{"indices": [1]}], "k": 3}`, 400, "unknown field"},
		{"/predict", `{"instances": [{"indices": [9]}]}`, 400, "outside the model's 6 features"},
		{"/predict", `{"instances": [{"indices": [-1]}]}`, 400, "feature id"},
		{"/predict", `{"instances": [{"indices": [1.5]}]}`, 400, "feature id"},
		{"/predict", `{"instances": [{"indices": [1], "values": [1e400]}]}`, 400, "no request"},
		{"/predict", `{"instances": [{"indices": [1], "values": [1, 2]}]}`, 400, "2 values for 1 indices"},
		{"/predict", `{"instances": [{"indices": [1]}, {"indices": [2]}, {"indices": [3]}]}`, 400, "at most 2"},
		{"/predict", `{"instances": []}`, 400, "n ≥ 1 points"},
		{"/predict", `{"instances": [{"indices": [1]}], "top_k": 0}`, 400, "top_k 0"},
		{"/predict", `{"instances": [{"indices": [1]}], "top_k": 5}`, 400, "1 to 4"},
		{"/predict", `{"instances": [{"indices": [1]}], "top_k": 2.5}`, 400, "whole number"},
		{"/predict", `{"instances": [{"indices": [1]}], "pad": "` + strings.Repeat("x", 5000) + `"}`, 413, "over 4096 bytes"},
		{"/v2/models/other/infer", infer(ok), 404, `no model "other"`},
		{"/v2/models/hetsgd/infer", infer(`{"name": "indices", "datatype": "FP32", "shape": [1], "data": [1]}`), 400, "datatype"},
		{"/v2/models/hetsgd/infer", infer(`{"name": "indices", "datatype": "INT32", "shape": [2], "data": [1]}`), 400, "shape [2] for 1 values"},
		{"/v2/models/hetsgd/infer", infer(`{"name": "indices", "datatype": "INT32", "shape": [1], "data": ["a"]}`), 400, "want numbers"},
		{"/v2/models/hetsgd/infer", infer(`{"name": "pixels", "datatype": "FP32", "shape": [1], "data": [1]}`), 400, "takes indices"},
		{"/v2/models/hetsgd/infer", infer(`{"name": "indices", "datatype": "INT32", "shape": [1], "data": [1]}`), 400, "required"},
		{"/v2/models/hetsgd/infer", infer(ok + `, {"name": "indices", "datatype": "INT32", "shape": [1], "data": [1]}`), 400, "twice"},
		{"/v2/models/hetsgd/infer", infer(`{"name": "indices", "datatype": "INT32", "shape": [1], "data": [1]}, {"name": "offsets", "datatype": "INT64", "shape": [2], "data": [1, 1]}`), 400, "want 0 to 1"},
		{"/v2/models/hetsgd/infer", infer(`{"name": "indices", "datatype": "INT32", "shape": [2], "data": [1, 2]}, {"name": "offsets", "datatype": "INT64", "shape": [3], "data": [0, 2, 1]}`), 400, "never falling"},
		{"/v2/models/hetsgd/infer", `{"inputs": [` + ok + `], "outputs": [{"name": "probabilities"}]}`, 400, "labels and scores"},
		{"/v2/models/hetsgd/infer", `{"inputs": [` + ok + `], "parameters": {"top_k": "3"}}`, 400, "whole number"},
		{"/v1/models/hetsgd:predict", `{}`, 404, "no such path"},
	} {
		code, got := post(t, h.URL+c.path, c.body)
		if code != c.code || !strings.Contains(fmt.Sprint(got["error"]), c.says) {
			t.Errorf("%s %.60s: %d %v; want %d saying %q", c.path, c.body, code, got["error"], c.code, c.says)
		}
	}
	r, err := http.Get(h.URL + "/v2/models/hetsgd/infer")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET of infer: %d, want 405", r.StatusCode)
	}
}

// Scores that overflow are refused with 422, not answered as numbers.
func TestOverflowIs422(t *testing.T) {
	m := testModel(t, 1)
	for i := range m.Params {
		m.Params[i] = 1e30
	}
	_, h := start(t, m, Options{})
	code, got := post(t, h.URL+"/predict", `{"instances": [{"indices": [1], "values": [1e30]}]}`)
	if code != 422 || !strings.Contains(fmt.Sprint(got["error"]), "overflow") {
		t.Errorf("%d %v, want 422", code, got)
	}
}

// The protocol's health, server and model metadata answers.
func TestMetadataAndHealth(t *testing.T) {
	_, h := start(t, testModel(t, 1), Options{Name: "amazon"})
	for path, code := range map[string]int{"/v2/health/live": 200, "/v2/health/ready": 200, "/v2/models/amazon/ready": 200, "/v2/models/hetsgd/ready": 404} {
		r, err := http.Get(h.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != code {
			t.Errorf("GET %s: %d, want %d", path, r.StatusCode, code)
		}
	}
	r, err := http.Get(h.URL + "/v2/models/amazon")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var md struct {
		Name     string   `json:"name"`
		Versions []string `json:"versions"`
		Inputs   []tensor `json:"inputs"`
		Params   struct {
			Features, Labels int
		} `json:"parameters"`
	}
	if err := json.NewDecoder(r.Body).Decode(&md); err != nil {
		t.Fatal(err)
	}
	if md.Name != "amazon" || !slices.Equal(md.Versions, []string{"seed 1"}) || len(md.Inputs) != 3 || md.Params.Features != 6 || md.Params.Labels != 5 {
		t.Errorf("metadata %+v", md)
	}
}

// Swap serves another model at once; Follow swaps in a newer archive at
// the path it follows, and keeps the model when the new file is no model.
func TestSwapAndFollow(t *testing.T) {
	a, b := testModel(t, 1), testModel(t, 2)
	path := filepath.Join(t.TempDir(), "m.npz")
	write := func(m Model, mod time.Time) {
		var buf bytes.Buffer
		if err := model.WriteNPZ(&buf, m.MLP.Config(), m.Params); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(path, buf.Bytes(), 0o644)
		os.Chtimes(path, mod, mod)
	}
	write(a, time.Unix(1000, 0))
	first, err := Load(path, "last", 4, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, h := start(t, first, Options{})
	query := `{"instances": [{"indices": [0, 3], "values": [1, 0.5]}], "top_k": 5}`
	score := func() string { _, got := post(t, h.URL+"/predict", query); return fmt.Sprint(got["predictions"]) }
	wantA, wantB := score(), ""
	s.Swap(b)
	wantB = score()
	if wantA == wantB {
		t.Fatal("two models score alike: the test cannot tell them apart")
	}
	s.Swap(first)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	said := make(chan string, 10)
	// Written before Follow starts, or after: either way newer than the
	// file the server's model was read from.
	write(b, time.Unix(2000, 0))
	go s.Follow(ctx, path, "last", time.Millisecond, func(line string) { said <- line })
	if line := testdata.Recv(t, said, "the reload"); !strings.Contains(line, "serving "+path) || score() != wantB {
		t.Errorf("after a new archive: said %q, scores %s, want %s", line, score(), wantB)
	}
	os.WriteFile(path, []byte("not a model"), 0o644)
	os.Chtimes(path, time.Unix(3000, 0), time.Unix(3000, 0))
	if line := testdata.Recv(t, said, "the failed reload"); !strings.Contains(line, "kept") || score() != wantB {
		t.Errorf("after a broken file: said %q, scores %s, want %s", line, score(), wantB)
	}
}

// Run ends with its context, and requests queued then get its error.
func TestRunEndsWithItsContext(t *testing.T) {
	s := New(testModel(t, 1), Options{})
	x := sparse.CSR{Rows: 1, Cols: 6, Indptr: []int64{0, 1}, Indices: []int32{2}}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { _, err := s.predict(context.Background(), x, nil, 1); errs <- err }()
	for len(s.queue) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	s.Run(ctx)
	if err := testdata.Recv(t, errs, "the queued request's answer"); err == nil {
		t.Error("a request queued at the end was answered")
	}
}
