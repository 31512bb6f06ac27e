package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/metric"
)

func TestLogNeverClobbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	l, err := CreateLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(NewEval(1, 100, 0.5, metric.Scores{P1: 0.5}, 2)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateLog(path, false); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second CreateLog: %v, want an 'already exists' error", err)
	}
	b, _ := os.ReadFile(path)
	var rec map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(b), &rec); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"event", "epoch", "samples", "train_seconds", "p1", "p3", "p5", "loss"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("eval record lacks %q: %s", k, b)
		}
	}
	if rec["event"] != "eval" {
		t.Errorf("event %v", rec["event"])
	}
}

func TestBestAndTimeTo(t *testing.T) {
	evals := []Eval{{Fields: metric.Fields{P1: 0.3}, TrainSeconds: 1}, {Fields: metric.Fields{P1: 0.6}, TrainSeconds: 2}, {Fields: metric.Fields{P1: 0.6}, TrainSeconds: 3}, {Fields: metric.Fields{P1: 0.5}, TrainSeconds: 4}}
	if b, _ := Best(evals); b.TrainSeconds != 2 {
		t.Fatalf("Best picks %v, want the earliest 0.6", b)
	}
	if s, ok := TimeTo(evals, 0.55); !ok || s != 2 {
		t.Fatalf("TimeTo 0.55 = %v %v", s, ok)
	}
	if _, ok := TimeTo(evals, 0.7); ok {
		t.Fatal("TimeTo an unreached target")
	}
	var buf bytes.Buffer
	l := NewLog(&buf)
	l.Write(map[string]any{"event": "x"})
	if sc := bufio.NewScanner(&buf); !sc.Scan() || sc.Text() != `{"event":"x"}` {
		t.Fatalf("log line %q", buf.String())
	}
}
