package runlog

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/strategy"
)

// A log written through Log reads back record by record; unknown kinds and
// a partial last line are skipped.
func TestReadRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	l := NewLog(&buf)
	pi := 0.5
	cfg := Config{Event: "config", Schema: Schema, Command: "train", Strategy: "adaptive", Devices: 4,
		Settings: Settings{{"strategy", "adaptive"}, {"devices", 4}, {"adaptive", Settings{{"beta", 8.0}}}}}
	records := []any{
		cfg,
		Eval{Event: "eval", Epoch: 1, Samples: 100, Fields: metric.Fields{P1: 0.4}},
		Merge{Event: "merge", Time: 1, MergeRecord: &strategy.MergeRecord{BatchSizes: []int{1, 2}, Weights: []float64{0.5, 0.5}}},
		map[string]any{"event": "later-kind", "x": 1},
		Async{Event: "async", Time: 2, Commits: 3, MedianPi: &pi},
		Fault{Event: "fault", Time: 3, Device: 1, Kind: "crash", Left: true, Live: 3},
		Note{Event: "note", Text: "hi"},
		Resume{Event: "resume", Samples: 100},
		Eval{Event: "eval", Epoch: 2, Samples: 200, Fields: metric.Fields{P1: 0.5}},
		Done{Event: "done", BestP1: 0.5},
	}
	for _, r := range records {
		if err := l.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	buf.WriteString(`{"event":"eval","epo`) // being written
	run, err := Read(&buf, "run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if run.Config == nil || run.Config.Strategy != "adaptive" || len(run.Evals) != 2 || len(run.Merges) != 1 ||
		len(run.Async) != 1 || *run.Async[0].MedianPi != 0.5 || len(run.Faults) != 1 || len(run.Notes) != 1 ||
		len(run.Resumes) != 1 || run.Done == nil || run.Done.BestP1 != 0.5 {
		t.Fatalf("read %+v", run)
	}
	if !reflect.DeepEqual(run.Merges[0].BatchSizes, []int{1, 2}) {
		t.Fatalf("merge %+v", run.Merges[0].MergeRecord)
	}
	want := Settings{{"strategy", "adaptive"}, {"devices", 4.0}, {"adaptive", Settings{{"beta", 8.0}}}}
	if !reflect.DeepEqual(run.Config.Settings, want) {
		t.Fatalf("settings %#v, want %#v", run.Config.Settings, want)
	}
	if got := run.Label(); got != "adaptive ×4" {
		t.Fatalf("label %q", got)
	}
	run.Config.Settings = append(run.Config.Settings, Setting{"output", "lsh"})
	if got := run.Label(); got != "adaptive ×4, lsh" {
		t.Fatalf("label of a sampled run %q", got)
	}
	run.Config.Settings = append(run.Config.Settings, Setting{"lsh-fill", "labels"})
	if got := run.Label(); got != "adaptive ×4, lsh labels fill" {
		t.Fatalf("label of a sampled run %q", got)
	}
}

func TestReadErrors(t *testing.T) {
	for _, c := range []struct{ log, want string }{
		{"{\"event\":\"config\"}\nnot json\n", "run.jsonl:2: not a JSON record"},
		{"{\"x\":1}\n", "run.jsonl:1: a record without an \"event\""},
		{"{\"event\":\"config\",\"schema\":99}\n", "run.jsonl:1: schema 99 is later"},
		{"{\"event\":\"eval\",\"p1\":\"high\"}\n", "run.jsonl:1: eval record"},
	} {
		_, err := Read(strings.NewReader(c.log), "run.jsonl")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.log, err, c.want)
		}
	}
}

// Settings keep their order through JSON, nested ones too.
func TestSettingsOrder(t *testing.T) {
	s := Settings{{"z", 1.0}, {"a", "x"}, {"m", Settings{{"y", true}, {"b", []any{1.0, 2.0}}}}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"z":1,"a":"x","m":{"y":true,"b":[1,2]}}` {
		t.Fatalf("marshal %s", b)
	}
	var back Settings
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("back %#v", back)
	}
	if v, ok := back.Lookup("a"); !ok || v != "x" {
		t.Fatalf("lookup %v %v", v, ok)
	}
	if err := json.Unmarshal([]byte(`[1]`), &back); err == nil {
		t.Fatal("a list read as settings")
	}
}

func TestFileNames(t *testing.T) {
	got := FileNames([]string{"a/run.jsonl", "b/run.jsonl", "c/gem.jsonl"})
	if strings.Join(got, " ") != "a/run.jsonl b/run.jsonl gem.jsonl" {
		t.Fatalf("names %q", got)
	}
}

// ReadFiles reads logs in order, says which one it cannot read, and stops
// between files once its context is done.
func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"a.jsonl", "b.jsonl"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`{"event":"config","strategy":"sync","devices":1}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	runs, err := ReadFiles(context.Background(), paths)
	if err != nil || len(runs) != 2 || runs[1].Name != paths[1] || runs[1].Label() != "sync ×1" {
		t.Fatalf("runs %v, %v", runs, err)
	}
	missing := filepath.Join(dir, "missing.jsonl")
	if _, err := ReadFiles(context.Background(), append(paths, missing)); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("a missing log: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadFiles(ctx, paths); err != context.Canceled {
		t.Fatalf("cancelled: %v, want context.Canceled as is", err)
	}
}
