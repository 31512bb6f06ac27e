package trained_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/engine/enginetest"
	"github.com/hetsgd/hetsgd/model"
	_ "github.com/hetsgd/hetsgd/strategy/all" // the run that saves the models
	"github.com/hetsgd/hetsgd/trained"
)

// touch makes an empty file: File resolves names, it reads no file.
func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Which model a path names: a folder's newest checkpoint or its best.hck,
// a file itself; and the refusals a front end words for its users.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	ck := checkpoint.Dir(filepath.Join(dir, "ck"))
	if err := ck.Make(); err != nil {
		t.Fatal(err)
	}
	for _, samples := range []int64{100, 2000, 300} {
		touch(t, ck.Path(samples))
	}
	noBest := filepath.Join(dir, "nobest")
	os.Mkdir(noBest, 0o755)
	touch(t, filepath.Join(noBest, "checkpoint-000000000001.hck"))
	touch(t, ck.Best())
	file := ck.Path(100)
	for _, c := range []struct {
		path  string
		which trained.Which
		want  string
		err   error
	}{
		{string(ck), trained.Last, ck.Path(2000), nil},
		{file, trained.Last, file, nil},
		{string(ck), trained.Best, ck.Best(), nil},
		{file, trained.Best, "", trained.ErrNotFolder},
		{filepath.Join(dir, "nowhere"), trained.Best, "", trained.ErrNotFolder},
		{noBest, trained.Best, "", trained.ErrNoBest},
		{string(ck), "newest", "", trained.ErrWhich},
		{"", "", "", trained.ErrWhich},
	} {
		got, err := trained.File(c.path, c.which)
		if got != c.want || !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
			t.Errorf("File(%q, %q) = %q, %v; want %q, %v", c.path, c.which, got, err, c.want, c.err)
		}
	}
	// The newest checkpoint of an empty folder, or of nothing, is the
	// checkpoint package's error, passed on as it is.
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, p := range []string{empty, filepath.Join(dir, "nowhere")} {
		if _, err := trained.File(p, trained.Last); err == nil || !strings.HasPrefix(err.Error(), "checkpoint: ") {
			t.Errorf("File(%q, Last): %v, want checkpoint's error", p, err)
		}
	}
}

// newMLP is a small network with random parameters.
func newMLP(t *testing.T) (*model.MLP, []float32) {
	t.Helper()
	m, err := model.New(model.Config{Inputs: 6, Hidden: []int{4}, Outputs: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	m.Init(p, 1)
	return m, p
}

// An exported archive reads back as the same network, whatever the file's
// name; a file of neither format, or an archive of something else, is
// refused naming the file.
func TestReadArchive(t *testing.T) {
	dir := t.TempDir()
	mlp, p := newMLP(t)
	var b bytes.Buffer
	if err := (&trained.Model{MLP: mlp, Params: p}).WriteNPZ(&b, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "model.bin") // an archive under any name
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := trained.Load(path, trained.Last, trained.Use{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Params, p) || !slices.Equal(m.Config().Hidden, []int{4}) || m.File != path || m.Scored != nil {
		t.Errorf("read back %+v from %s", m.Config(), m.File)
	}

	// A zip that holds no model: an *NPZError naming the archive.
	trunc := filepath.Join(dir, "trunc.npz")
	os.WriteFile(trunc, b.Bytes()[:len(b.Bytes())/2], 0o644)
	var npz *trained.NPZError
	if _, err := trained.Read(trunc); !errors.As(err, &npz) || npz.File != trunc || !strings.HasPrefix(err.Error(), trunc+": model: ") {
		t.Errorf("a truncated archive: %v", err)
	}
	// Neither an archive nor a checkpoint: checkpoint's error, with the
	// formats wanted.
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("not a model"), 0o644)
	if _, err := trained.Read(text); err == nil || !strings.HasSuffix(err.Error(), "(want a checkpoint or an .npz of hetsgd export)") || errors.As(err, &npz) {
		t.Errorf("a text file: %v", err)
	}
	if _, err := trained.Read(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// The bar: a run's best model, read back from its folder, scores on the
// test set what the run's evaluation said it did, and carries that
// evaluation; the last checkpoint carries the run's last one.
func TestLoadScoresAsTheRunSaid(t *testing.T) {
	w := enginetest.Bibtex(t)
	cfg := enginetest.Config("sync", 2, engine.Virtual)
	cfg.Epochs = 0.5
	cfg.Checkpoint = engine.Checkpointing{Dir: t.TempDir(), KeepBest: true}
	res, err := engine.Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, test, _ := data.Bundled("bibtex")
	best := res.Evals[0]
	for _, e := range res.Evals {
		if e.P1 > best.P1 {
			best = e
		}
	}
	for which, want := range map[trained.Which]float64{trained.Best: best.P1, trained.Last: res.Evals[len(res.Evals)-1].P1} {
		m, err := trained.Load(cfg.Checkpoint.Dir, which, trained.Use{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Scored == nil || m.Scored.P1 != want {
			t.Fatalf("%s: scored %+v, want P@1 %v", which, m.Scored, want)
		}
		e, err := m.NewEvaluator(test, 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.Evaluate(context.Background(), e)
		if err != nil || s.P1 != want {
			t.Errorf("%s: P@1 %v (%v), the run's %v", which, s.P1, err, want)
		}
	}
}

// Data the model does not fit, and data without points, are refused before
// any scoring; scores that overflow are refused after, with the loss.
func TestEvaluateRefuses(t *testing.T) {
	mlp, p := newMLP(t)
	m := &trained.Model{MLP: mlp, Params: p}
	read := func(text string) *data.Dataset {
		ds, err := data.Read(strings.NewReader(text), "points", data.XC)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	var shape *trained.ShapeError
	if _, err := m.NewEvaluator(read("1 5 3\n0 1:1\n"), 0); !errors.As(err, &shape) ||
		err.Error() != "points has 5 features and 3 labels; the model takes 6 and gives 3" {
		t.Errorf("other features: %v", err)
	}
	if err := m.Fits(read("1 6 2\n0 1:1\n")); !errors.As(err, &shape) || shape.Labels != 2 || shape.Outputs != 3 {
		t.Errorf("other labels: %v", err)
	}
	if _, err := m.NewEvaluator(read("0 6 3\n"), 0); !errors.Is(err, trained.ErrNoPoints) {
		t.Errorf("no points: %v", err)
	}
	// Points, but no label among those scored: P@k would be 0 whatever
	// the model.
	unlabelled := read("2 6 3\n 1:1\n2 2:1\n")
	if _, err := m.NewEvaluator(unlabelled, 1); !errors.Is(err, data.ErrNoLabels) || !strings.Contains(err.Error(), "first 1 points (of 2)") {
		t.Errorf("no labels among the points scored: %v", err)
	}
	if _, err := m.NewEvaluator(read("1 6 3\n 1:1\n"), 0); !errors.Is(err, data.ErrNoLabels) {
		t.Errorf("no labels: %v", err)
	}
	if _, err := m.NewEvaluator(unlabelled, 0); err != nil {
		t.Errorf("a label among the points: %v", err)
	}
	points := read("2 6 3\n0,1 1:1 5:2\n2 0:1\n")
	e, err := m.NewEvaluator(points, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := m.Evaluate(context.Background(), e); err != nil || s.Points != 2 {
		t.Errorf("scores %+v, %v", s, err)
	}
	for i := range m.Params {
		m.Params[i] = 3e37 // finite, but their products are not
	}
	if s, err := m.Evaluate(context.Background(), e); !errors.Is(err, trained.ErrOverflow) || s.Points != 2 || !strings.Contains(err.Error(), "loss") {
		t.Errorf("overflowing scores: %+v, %v", s, err)
	}
}

// What a command will hold is checked against the memory it may use with
// the model's shape, before its parameters are read: a workspace of many
// rows, or an export's copy, can be refused where the parameters alone fit.
func TestLoadChecksMemory(t *testing.T) {
	mlp, p := newMLP(t)
	var b bytes.Buffer
	if err := (&trained.Model{MLP: mlp, Params: p}).WriteNPZ(&b, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.npz")
	os.WriteFile(path, b.Bytes(), 0o644)
	t.Setenv("HETSGD_MEMORY_LIMIT", "8K")
	if _, err := trained.Load(path, trained.Last, trained.Use{What: "scoring", Rows: 4}); err != nil {
		t.Fatalf("a small use: %v", err)
	}
	for _, use := range []trained.Use{
		{What: "predicting", Rows: 1 << 20, Fix: "score fewer points at once (--rows)"},
		{What: "exporting", Export: true, Fix: "x"},
		{What: "scoring", Held: 1 << 20, Fix: "x"},
	} {
		m, err := trained.Load(path, trained.Last, use)
		if err == nil || !strings.Contains(err.Error(), use.What+" with the model of "+path) || !strings.Contains(err.Error(), "needs an estimated") || !strings.HasSuffix(err.Error(), ": "+use.Fix) {
			t.Errorf("%+v: %v", use, err)
		}
		if m != nil {
			t.Errorf("%+v: a model read", use)
		}
		if use.Need(mlp) <= 8<<10 {
			t.Errorf("%+v needs %d bytes, under the limit", use, use.Need(mlp))
		}
	}
}

// What a checkpoint knows of its run — the test set it scored on, its
// format, the config record — comes with its model, and an archive's card
// carries it on, with the evaluation, to the next reader.
func TestCardCarriesTheRun(t *testing.T) {
	w := enginetest.Bibtex(t)
	cfg := enginetest.Config("sync", 1, engine.Virtual)
	cfg.Epochs = 0.2
	test := filepath.Join(t.TempDir(), "test.txt") // absolute, as train saves it
	settings := `{"flags":[["test",` + strconv.Quote(test) + `],["format","libsvm0"]],"config":{"event":"config","data":"x","data_digest":"abc"}}`
	cfg.Checkpoint = engine.Checkpointing{Dir: t.TempDir(), KeepBest: true, Settings: []byte(settings)}
	if _, err := engine.Run(context.Background(), cfg, w, nil, nil); err != nil {
		t.Fatal(err)
	}
	m, err := trained.Load(cfg.Checkpoint.Dir, trained.Best, trained.Use{})
	if err != nil {
		t.Fatal(err)
	}
	digest := func(run []byte) any {
		var r map[string]any
		json.Unmarshal(run, &r)
		return r["data_digest"]
	}
	if m.TestData != test || m.TestFormat != "libsvm0" || digest(m.Run) != "abc" || m.Scored == nil {
		t.Fatalf("the run of a checkpoint: test %q format %q run %s scored %v", m.TestData, m.TestFormat, m.Run, m.Scored)
	}
	var b bytes.Buffer
	if err := m.WriteNPZ(&b, m.Card("v1.2", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.npz")
	os.WriteFile(path, b.Bytes(), 0o644)
	a, err := trained.Open(path, trained.Last)
	if err != nil {
		t.Fatal(err)
	}
	if a.Params != nil || a.TestData != test || a.TestFormat != "libsvm0" || a.Scored == nil || *a.Scored != *m.Scored || digest(a.Run) != "abc" {
		t.Fatalf("the archive's card: test %q format %q scored %v run %s", a.TestData, a.TestFormat, a.Scored, a.Run)
	}
	card, _ := model.ReadNPZCard(bytes.NewReader(b.Bytes()), int64(b.Len()))
	for _, want := range []string{`"hetsgd": "v1.2"`, `"exported": "2026-01-02T03:04:05Z"`, `"parameters": `, `"p1": `} {
		if !strings.Contains(string(card), want) {
			t.Errorf("the card lacks %s:\n%s", want, card)
		}
	}
}
