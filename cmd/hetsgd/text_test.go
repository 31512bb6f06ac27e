package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/tfidf"
)

// Text in, predictions out: a set made by data from-text trains a model
// whose checkpoint folder carries the vectorizer, and predict --text on
// the test texts gives what predict --data gives on their rows, labels by
// name; so does the exported archive, which carries it on.
func TestPredictText(t *testing.T) {
	dir := t.TempDir()
	set, ck, npz := filepath.Join(dir, "set"), filepath.Join(dir, "ck"), filepath.Join(dir, "m.npz")
	texts := filepath.Join("..", "..", "tfidf", "testdata", "corpus_test.tsv")
	for _, args := range [][]string{
		{"data", "from-text", "--train", filepath.Join("..", "..", "tfidf", "testdata", "corpus.tsv"), "--test", texts, "--out", set},
		{"train", "--data", set, "--epochs", "3", "--checkpoint", ck, "--progress", "off"},
		{"export", "--model", ck, "--out", npz},
	} {
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	m, err := tfidf.Load(filepath.Join(ck, tfidf.File))
	if err != nil {
		t.Fatalf("the checkpoint folder's vectorizer: %v", err)
	}
	code, byRow, stderr := runCLI(t, "predict", "--model", ck, "--data", set, "--top", "3")
	if code != 0 {
		t.Fatalf("predict --data: exit %d: %s", code, stderr)
	}
	// The rows' predictions with their labels named.
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(byRow), "\n") {
		fields := strings.Split(line, "\t")
		for i, f := range fields[1:] {
			id, score, _ := strings.Cut(f, ":")
			n := 0
			for _, c := range id {
				n = 10*n + int(c-'0')
			}
			fields[1+i] = m.Labels[n] + ":" + score
		}
		want = append(want, strings.Join(fields, "\t"))
	}
	for _, model := range []string{ck, npz} {
		code, byText, stderr := runCLI(t, "predict", "--model", model, "--text", texts, "--top", "3")
		if code != 0 {
			t.Fatalf("predict --model %s --text: exit %d: %s", model, code, stderr)
		}
		if got := strings.TrimSpace(byText); got != strings.Join(want, "\n") {
			t.Errorf("predict --model %s --text:\n%s\nwant (the rows', named):\n%s", model, got, strings.Join(want, "\n"))
		}
	}
	// A vectorizer that is not the model's is refused, named.
	os.WriteFile(filepath.Join(ck, tfidf.File), []byte(`{"format": "hetsgd-tfidf/1", "min_n": 1, "max_n": 1, "min_df": 1, "terms": ["a"], "idf": [1], "labels": ["x"]}`), 0o644)
	code, _, stderr = runCLI(t, "predict", "--model", ck, "--text", texts)
	if code == 0 || !strings.Contains(stderr, "has 1 terms and 1 labels") || !strings.Contains(stderr, "not its vectorizer") {
		t.Errorf("predict --text with another model's vectorizer: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "predict", "--model", ck, "--text", texts, "--data", set)
	if code == 0 || !strings.Contains(stderr, "give --data or --text, not both") {
		t.Errorf("predict --text --data: exit %d, %s", code, stderr)
	}
}
