package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Whatever the body, /predict and infer answer below 500 and the server
// stays up.
func FuzzRequests(f *testing.F) {
	for _, seed := range []string{
		`{"instances": [{"indices": [0, 3], "values": [1, 0.5]}], "top_k": 3}`,
		`{"inputs": [{"name": "indices", "datatype": "INT32", "shape": [1], "data": [1]}, {"name": "offsets", "datatype": "INT64", "shape": [2], "data": [0, 1]}], "parameters": {"top_k": 2}}`,
		`{"inputs": [{"name": "values", "datatype": "FP32", "shape": [2], "data": [[1], [2]]}]}`,
		`{"instances": [{"indices": [1e9]}]}`, `[]`, `null`, ``,
		`{"texts": ["apple pie", ""], "top_k": 2}`,
		`{"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["a hammer"]}], "outputs": [{"name": "label_names"}]}`,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	s := New(textModel(f), Options{MaxPoints: 64, MaxBody: 1 << 16})
	ctx, cancel := context.WithCancel(context.Background())
	f.Cleanup(cancel)
	go s.Run(ctx)
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body string, infer bool) {
		path := "/predict"
		if infer {
			path = "/v2/models/hetsgd/infer"
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		if w.Code >= 500 {
			t.Fatalf("%s %q: %d %s", path, body, w.Code, w.Body)
		}
	})
}
