package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/hetsgd/hetsgd/sparse"
)

// badRequest is an error of the request itself: 400, with its message.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func bad(format string, args ...any) error { return &badRequest{fmt.Sprintf(format, args...)} }

// Handler returns the server's HTTP API:
//
//   - the Open Inference Protocol's REST form (KServe v2): GET /v2 (the
//     server), /v2/health/live, /v2/health/ready, /v2/models/NAME (the
//     model's metadata), /v2/models/NAME/ready, and POST
//     /v2/models/NAME/infer, whose request holds the points as three
//     tensors of a sparse matrix's rows (see Infer);
//   - POST /predict, the same in plain JSON (see Predict).
//
// A request the server cannot take gets a 4xx answer naming what is wrong
// ({"error": "…"}): malformed JSON, a shape or datatype that does not
// match, a feature outside the model, a value that is not finite, more
// points, labels or bytes than Options allow. Scores that overflow are
// 422.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	name := s.opt.Name
	ok := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }
	mux.HandleFunc("GET /v2/health/live", ok)
	mux.HandleFunc("GET /v2/health/ready", ok)
	mux.HandleFunc("GET /v2", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"name": "hetsgd", "version": "v2", "extensions": []string{}})
	})
	model := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.PathValue("name") != name {
				writeError(w, http.StatusNotFound, fmt.Errorf("no model %q: this server serves %q", r.PathValue("name"), name))
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /v2/models/{name}", model(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.metadata()) }))
	mux.HandleFunc("GET /v2/models/{name}/ready", model(ok))
	mux.HandleFunc("POST /v2/models/{name}/infer", model(func(w http.ResponseWriter, r *http.Request) { s.serveInfer(w, r) }))
	mux.HandleFunc("POST /predict", s.servePredict)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Every path the mux does not route, in JSON as the protocol's
		// errors are: the two that take a POST asked otherwise are 405.
		if r.URL.Path == "/predict" || r.URL.Path == "/v2/models/"+name+"/infer" {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, fmt.Errorf("%s %s: it takes POST", r.Method, r.URL.Path))
			return
		}
		writeError(w, http.StatusNotFound, fmt.Errorf("no such path %s: the model is at /v2/models/%s/infer or /predict", r.URL.Path, name))
	})
	return mux
}

// tensor is a named tensor of the Open Inference Protocol.
type tensor struct {
	Name       string          `json:"name"`
	Shape      []int64         `json:"shape"`
	Datatype   string          `json:"datatype"`
	Parameters map[string]any  `json:"parameters,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// metadata is the model's metadata: its name, version, and the tensors
// an inference takes and gives.
func (s *Server) metadata() map[string]any {
	m := s.Current()
	cfg := m.MLP.Config()
	spec := func(name, dt string, shape ...int64) map[string]any {
		return map[string]any{"name": name, "datatype": dt, "shape": shape}
	}
	inputs := []any{spec("indices", "INT32", -1), spec("values", "FP32", -1), spec("offsets", "INT64", -1)}
	outputs := []any{spec("labels", "INT32", -1, -1), spec("scores", "FP32", -1, -1)}
	if m.Text != nil {
		inputs = append(inputs, spec("text", "BYTES", -1))
		outputs = append(outputs, spec("label_names", "BYTES", -1, -1))
	}
	return map[string]any{
		"name": s.opt.Name, "versions": []string{m.Version}, "platform": "hetsgd",
		"inputs":     inputs,
		"outputs":    outputs,
		"parameters": map[string]any{"features": cfg.Inputs, "labels": cfg.Outputs, "max_points": s.opt.MaxPoints, "max_top_k": s.opt.MaxK},
	}
}

// InferRequest is the body of POST /v2/models/NAME/infer. Its inputs are
// the points as the rows of a sparse matrix, as compressed sparse rows:
//
//   - "indices", INT32 or INT64, shape [nnz]: the feature ids, row by row;
//   - "offsets", INT64 or INT32, shape [n+1]: where each row's ids begin
//     in indices, from 0, the last nnz;
//   - "values", FP32 or FP64, shape [nnz], optional: the features'
//     values (absent: 1 each).
//
// Or, for a model with a text vectorizer (Model.Text), the points are
// documents: the one input "text", BYTES, shape [n], its data n strings.
//
// Its parameters may hold "top_k", the labels a point gets (default
// Options.K). Outputs, when given, name those wanted of "labels" (INT32,
// [n, k], best first), "scores" (FP32, [n, k]) and, for a model with a
// text vectorizer, "label_names" (BYTES, [n, k]); none named: all.
type InferRequest struct {
	ID         string         `json:"id,omitempty"`
	Parameters map[string]any `json:"parameters,omitempty"`
	Inputs     []tensor       `json:"inputs"`
	Outputs    []struct {
		Name string `json:"name"`
	} `json:"outputs,omitempty"`
}

func (s *Server) serveInfer(w http.ResponseWriter, r *http.Request) {
	var req InferRequest
	if !s.decode(w, r, &req) {
		return
	}
	x, texts, k, err := s.inferPoints(&req)
	j, ok := s.score(w, r, x, texts, k, err)
	if !ok {
		return
	}
	names := j.m.Text != nil
	all := len(req.Outputs) == 0
	want := map[string]bool{"labels": all, "scores": all, "label_names": all && names}
	for _, o := range req.Outputs {
		if _, known := want[o.Name]; !known || o.Name == "label_names" && !names {
			writeError(w, http.StatusBadRequest, fmt.Errorf("output %q: the model gives labels and scores (and label_names, with a text vectorizer)", o.Name))
			return
		}
		want[o.Name] = true
	}
	shape := []int64{int64(j.x.Rows), int64(j.k)}
	var outs []tensor
	if want["labels"] {
		outs = append(outs, tensor{Name: "labels", Datatype: "INT32", Shape: shape, Data: mustJSON(j.labels)})
	}
	if want["scores"] {
		outs = append(outs, tensor{Name: "scores", Datatype: "FP32", Shape: shape, Data: mustJSON(j.scores)})
	}
	if want["label_names"] {
		outs = append(outs, tensor{Name: "label_names", Datatype: "BYTES", Shape: shape, Data: mustJSON(j.names(j.labels))})
	}
	m := j.m
	writeJSON(w, http.StatusOK, map[string]any{"model_name": s.opt.Name, "model_version": m.Version, "id": req.ID, "outputs": outs})
}

// inferPoints reads the points (or texts) and top k of an inference
// request.
func (s *Server) inferPoints(req *InferRequest) (sparse.CSR, []string, int, error) {
	var idx, off, val []float64
	var texts []string
	for _, in := range req.Inputs {
		var dst *[]float64
		var types []string
		switch in.Name {
		case "text":
			if texts != nil {
				return sparse.CSR{}, nil, 0, bad("input %q given twice", in.Name)
			}
			if in.Datatype != "BYTES" {
				return sparse.CSR{}, nil, 0, bad("input %q of datatype %q: want BYTES", in.Name, in.Datatype)
			}
			if err := json.Unmarshal(in.Data, &texts); err != nil || texts == nil {
				return sparse.CSR{}, nil, 0, bad("input %q: want its data a list of strings: %v", in.Name, err)
			}
			if len(in.Shape) != 1 || in.Shape[0] != int64(len(texts)) {
				return sparse.CSR{}, nil, 0, bad("input %q: shape %v for %d strings: want [%d]", in.Name, in.Shape, len(texts), len(texts))
			}
			continue
		case "indices":
			dst, types = &idx, []string{"INT32", "INT64"}
		case "offsets":
			dst, types = &off, []string{"INT64", "INT32"}
		case "values":
			dst, types = &val, []string{"FP32", "FP64"}
		default:
			return sparse.CSR{}, nil, 0, bad("input %q: the model takes indices, offsets and values, or text", in.Name)
		}
		if *dst != nil {
			return sparse.CSR{}, nil, 0, bad("input %q given twice", in.Name)
		}
		if in.Datatype != types[0] && in.Datatype != types[1] {
			return sparse.CSR{}, nil, 0, bad("input %q of datatype %q: want %s or %s", in.Name, in.Datatype, types[0], types[1])
		}
		v, err := flatten(in.Data)
		if err != nil {
			return sparse.CSR{}, nil, 0, bad("input %q: %v", in.Name, err)
		}
		if len(in.Shape) != 1 || in.Shape[0] != int64(len(v)) {
			return sparse.CSR{}, nil, 0, bad("input %q: shape %v for %d values: want [%d]", in.Name, in.Shape, len(v), len(v))
		}
		*dst = v
	}
	k := s.opt.K
	if v, ok := req.Parameters["top_k"]; ok {
		f, isNum := v.(float64)
		if !isNum || f != math.Trunc(f) {
			return sparse.CSR{}, nil, 0, bad("parameter top_k %v: want a whole number", v)
		}
		k = int(max(min(f, 1e9), -1))
	}
	switch {
	case texts != nil && (idx != nil || off != nil || val != nil):
		return sparse.CSR{}, nil, 0, bad("give input text, or indices and offsets, not both")
	case texts != nil:
		return sparse.CSR{}, texts, k, s.checkTexts(texts, k)
	case idx == nil || off == nil:
		return sparse.CSR{}, nil, 0, bad("inputs indices and offsets are required (values is optional), or text")
	}
	x, err := s.points(idx, off, val, k)
	return x, nil, k, err
}

// checkTexts checks the texts and top k of a request.
func (s *Server) checkTexts(texts []string, k int) error {
	switch {
	case k < 1 || k > s.opt.MaxK:
		return bad("top_k %d: want 1 to %d", k, s.opt.MaxK)
	case len(texts) < 1 || len(texts) > s.opt.MaxPoints:
		return bad("%d texts: a request holds 1 to %d", len(texts), s.opt.MaxPoints)
	}
	return nil
}

// points checks and assembles points given as compressed sparse rows.
func (s *Server) points(idx, off, val []float64, k int) (sparse.CSR, error) {
	if k < 1 || k > s.opt.MaxK {
		return sparse.CSR{}, bad("top_k %d: want 1 to %d", k, s.opt.MaxK)
	}
	n := len(off) - 1
	switch {
	case n < 1:
		return sparse.CSR{}, bad("offsets has %d values: want n+1 for n ≥ 1 points", len(off))
	case n > s.opt.MaxPoints:
		return sparse.CSR{}, bad("%d points: a request holds at most %d", n, s.opt.MaxPoints)
	case val != nil && len(val) != len(idx):
		return sparse.CSR{}, bad("%d values for %d indices", len(val), len(idx))
	}
	x := sparse.CSR{Rows: n, Cols: math.MaxInt32, Indptr: make([]int64, n+1), Indices: make([]int32, len(idx))}
	for i, o := range off {
		if o != math.Trunc(o) || (i > 0 && o < off[i-1]) {
			return sparse.CSR{}, bad("offsets[%d] %v: want whole numbers, never falling", i, o)
		}
		x.Indptr[i] = int64(o)
	}
	if off[0] != 0 || off[n] != float64(len(idx)) {
		return sparse.CSR{}, bad("offsets run from %v to %v: want 0 to %d, the number of indices", off[0], off[n], len(idx))
	}
	for n, f := range idx {
		if f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
			return sparse.CSR{}, bad("indices[%d] %v: want a feature id, a whole number from 0", n, f)
		}
		x.Indices[n] = int32(f)
	}
	if val != nil {
		x.Values = make([]float32, len(val))
		for n, v := range val {
			x.Values[n] = float32(v)
		}
	}
	return x, nil
}

// flatten reads a tensor's data, flat or nested row-major, as numbers.
func flatten(raw json.RawMessage) ([]float64, error) {
	if len(raw) == 0 {
		return nil, errors.New("no data")
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	out := []float64{}
	var walk func(v any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				if err := walk(e); err != nil {
					return err
				}
			}
		case json.Number:
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return fmt.Errorf("%s is not a number it can hold", v)
			}
			out = append(out, f)
		default:
			return fmt.Errorf("data holds %T: want numbers", v)
		}
		return nil
	}
	return out, walk(v)
}

// PredictRequest is the body of POST /predict: points as feature ids and
// their values (absent: 1 each), or, for a model with a text vectorizer,
// as texts; and the labels a point gets (default Options.K). The answer
// is {"predictions": [{"labels": […], "scores": […]}, …]}, a point's best
// first, with its labels' "names" for a model with a text vectorizer.
type PredictRequest struct {
	Instances []struct {
		Indices []float64 `json:"indices"`
		Values  []float64 `json:"values,omitempty"`
	} `json:"instances,omitempty"`
	Texts []string `json:"texts,omitempty"`
	TopK  *float64 `json:"top_k,omitempty"`
}

func (s *Server) servePredict(w http.ResponseWriter, r *http.Request) {
	var req PredictRequest
	if !s.decode(w, r, &req) {
		return
	}
	var idx, val []float64
	off := []float64{0}
	for i, in := range req.Instances {
		if in.Values != nil && len(in.Values) != len(in.Indices) {
			writeError(w, http.StatusBadRequest, fmt.Errorf("instance %d: %d values for %d indices", i, len(in.Values), len(in.Indices)))
			return
		}
		idx = append(idx, in.Indices...)
		if in.Values == nil {
			for range in.Indices {
				val = append(val, 1)
			}
		} else {
			val = append(val, in.Values...)
		}
		off = append(off, float64(len(idx)))
	}
	k := s.opt.K
	if req.TopK != nil {
		if *req.TopK != math.Trunc(*req.TopK) {
			writeError(w, http.StatusBadRequest, fmt.Errorf("top_k %v: want a whole number", *req.TopK))
			return
		}
		k = int(max(min(*req.TopK, 1e9), -1))
	}
	var x sparse.CSR
	var err error
	switch {
	case req.Texts != nil && req.Instances != nil:
		err = bad("give instances or texts, not both")
	case req.Texts != nil:
		err = s.checkTexts(req.Texts, k)
	default:
		x, err = s.points(idx, off, val, k)
	}
	j, ok := s.score(w, r, x, req.Texts, k, err)
	if !ok {
		return
	}
	type prediction struct {
		Labels []int32   `json:"labels"`
		Scores []float32 `json:"scores"`
		Names  []string  `json:"names,omitempty"`
	}
	out := make([]prediction, j.x.Rows)
	for i := range out {
		labels := j.labels[i*j.k : (i+1)*j.k]
		out[i] = prediction{labels, j.scores[i*j.k : (i+1)*j.k], j.names(labels)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"model_version": j.m.Version, "predictions": out})
}

// score waits for the top k labels of points x (texts', when not nil),
// read from r's body with error err, or answers the error; false when it
// answered.
func (s *Server) score(w http.ResponseWriter, r *http.Request, x sparse.CSR, texts []string, k int, err error) (*job, bool) {
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return nil, false
	}
	j, err := s.predict(r.Context(), x, texts, k)
	if err != nil {
		writeError(w, statusOf(err), err)
		return nil, false
	}
	return j, true
}

// decode reads r's JSON body into v, answering a 4xx and returning false
// when it cannot: a body over Options.MaxBody, malformed JSON, unknown
// fields, anything after the object.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	d := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.opt.MaxBody))
	d.DisallowUnknownFields()
	err := d.Decode(v)
	if err == nil && d.More() {
		err = errors.New("more after the request's JSON object")
	} else if err == nil {
		if _, e := d.Token(); e != io.EOF {
			err = errors.New("more after the request's JSON object")
		}
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("the body is over %d bytes", s.opt.MaxBody))
	case err != nil:
		writeError(w, http.StatusBadRequest, fmt.Errorf("the body is no request: %v", err))
	default:
		return true
	}
	return false
}

// statusOf is the answer's status for an error of predict.
func statusOf(err error) int {
	var b *badRequest
	switch {
	case errors.As(err, &b):
		return http.StatusBadRequest
	case errors.Is(err, errOverflow):
		return http.StatusUnprocessableEntity
	}
	return http.StatusServiceUnavailable // the server is stopping, or the client left
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // slices of numbers always marshal
	}
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
