package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/model"
)

// lastEval returns the last eval record of a run log.
func lastEval(t *testing.T, log string) map[string]float64 {
	t.Helper()
	recs := records(t, log, "eval")
	if len(recs) == 0 {
		t.Fatalf("%s has no evaluation", log)
	}
	var raw map[string]any
	json.Unmarshal([]byte(recs[len(recs)-1]), &raw)
	r := map[string]float64{}
	for k, v := range raw {
		if f, ok := v.(float64); ok {
			r[k] = f
		}
	}
	return r
}

// precisionAt1 scores a TSV of predictions against the test set's labels.
func precisionAt1(t *testing.T, path string, test *data.Dataset) float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hits, n := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		point, _ := strconv.Atoi(fields[0])
		if point != n {
			t.Fatalf("line %d is point %d", n+1, point)
		}
		label, _ := strconv.Atoi(strings.SplitN(fields[1], ":", 2)[0])
		for k := test.Y.Indptr[point]; k < test.Y.Indptr[point+1]; k++ {
			if int(test.Y.Indices[k]) == label {
				hits++
			}
		}
		n++
	}
	if n != test.Len() {
		t.Fatalf("%d predictions for %d points", n, test.Len())
	}
	return float64(hits) / float64(n)
}

// The bar: predictions on the test set give the P@1 the training log
// reports for the model, and so do eval and the exported model.
func TestPredictGivesTheLoggedP1(t *testing.T) {
	dir := t.TempDir()
	ck, log := filepath.Join(dir, "ck"), filepath.Join(dir, "run.jsonl")
	if code, _, stderr := runCLI(t, "train", "--time", "virtual", "--strategy", "elastic", "--devices", "2", "--epochs", "2",
		"--checkpoint", ck, "--log", log, "--progress", "off"); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	want := lastEval(t, log)
	_, test, _ := data.Bundled("bibtex")
	preds := filepath.Join(dir, "p.tsv")
	if code, _, stderr := runCLI(t, "predict", "--model", ck, "--data", "bundled:bibtex", "--top", "3", "--out", preds); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	if got := precisionAt1(t, preds, test); got != want["p1"] {
		t.Fatalf("P@1 of the predictions %v, the log's %v", got, want["p1"])
	}
	npz := filepath.Join(dir, "m.npz")
	if code, _, stderr := runCLI(t, "export", "--model", ck, "--out", npz); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	for _, m := range []string{ck, npz} {
		code, stdout, stderr := runCLI(t, "eval", "--model", m, "--data", "bundled:bibtex", "--json")
		if code != 0 {
			t.Fatalf("eval --model %s: exit %d: %s", m, code, stderr)
		}
		var got map[string]float64
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("eval --json: %v: %s", err, stdout)
		}
		if _, ok := got["epoch"]; ok || len(got) != 14 {
			t.Errorf("eval --json printed %s: want the scores alone", stdout)
		}
		for _, k := range []string{"p1", "p3", "p5", "ndcg1", "ndcg3", "ndcg5", "psp1", "psp3", "psp5", "psndcg1", "psndcg3", "psndcg5"} {
			if got[k] != want[k] || want[k] == 0 {
				t.Errorf("eval --model %s: %s %v, the log's %v", m, k, got[k], want[k])
			}
		}
	}
	code, _, stderr := runCLI(t, "export", "--model", ck, "--out", npz)
	if code == 0 || !strings.Contains(stderr, "exists") {
		t.Errorf("export over an existing file without --force: exit %d, %s", code, stderr)
	}
	t.Run("rank-tables", func(t *testing.T) {
		// Tables that rank every label a point's 50 buckets hold: most of
		// Bibtex's 159, so the scores come near the exact ones.
		code, stdout, stderr := runCLI(t, "eval", "--model", ck, "--data", "bundled:bibtex", "--json", "--rank", "tables", "--lsh-active", "1", "--lsh-k", "1", "--lsh-capacity", "200")
		if code != 0 {
			t.Fatalf("eval --rank tables: exit %d: %s", code, stderr)
		}
		var got map[string]float64
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("eval --json: %v: %s", err, stdout)
		}
		if got["loss"] != 0 || got["p1"] < want["p1"]-0.05 || got["p1"] == want["p1"] && got["p5"] == want["p5"] && got["ndcg5"] == want["ndcg5"] {
			t.Errorf("eval --rank tables: %v; exact %v", got, want)
		}
		// What the tables retrieve is all they rank: their recall of the
		// true labels is reported.
		if r := got["recall"]; !(r > 0 && r <= 1) || got["retrieved"] <= 0 {
			t.Errorf("eval --rank tables: recall %v, retrieved %v", r, got["retrieved"])
		}
		// Tables that retrieve a label a point say why P@1 is low.
		_, stdout, _ = runCLI(t, "eval", "--model", ck, "--data", "bundled:bibtex", "--rank", "tables")
		if !strings.Contains(stdout, "the tables retrieved") || !strings.Contains(stdout, "--rank exact scores every label") {
			t.Errorf("eval --rank tables does not say what the tables retrieved:\n%s", stdout)
		}
		code, _, stderr = runCLI(t, "eval", "--model", ck, "--data", "bundled:bibtex", "--lsh-k", "2")
		if code == 0 || !strings.Contains(stderr, "--lsh-k applies with --rank tables only") {
			t.Errorf("--lsh-k without --rank tables: exit %d, %s", code, stderr)
		}
	})
	t.Run("other-data", func(t *testing.T) {
		code, _, stderr := runCLI(t, "eval", "--model", npz, "--data", testdata.Dir(t, "delicious"))
		if code == 0 || !strings.Contains(stderr, "features") {
			t.Errorf("a model on another dataset: exit %d, %s", code, stderr)
		}
	})
}

// predict streams a text file, in chunks of any size, to the same
// predictions as a set held whole.
func TestPredictStreamsFiles(t *testing.T) {
	bib := testdata.Dir(t, "bibtex")
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	if code, _, stderr := runCLI(t, "train", "--time", "virtual", "--epochs", "0.5", "--checkpoint", ck, "--progress", "off"); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	whole := filepath.Join(dir, "whole.jsonl")
	if code, _, stderr := runCLI(t, "predict", "--model", ck, "--data", "bundled:bibtex", "--as", "jsonl", "--out", whole); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want, _ := os.ReadFile(whole)
	for _, rows := range []string{"1", "7", "1000"} {
		out := filepath.Join(dir, "s"+rows+".jsonl")
		if code, _, stderr := runCLI(t, "predict", "--model", ck, "--data", bib, "--as", "jsonl", "--rows", rows, "--out", out); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if got, _ := os.ReadFile(out); string(got) != string(want) {
			t.Fatalf("streamed in chunks of %s points, the predictions differ from the whole set's", rows)
		}
	}
}

// The refusals of the model, of the data and of the scores, which the
// library returns as errors of its own, reach the user in the flags' words.
func TestScoringRefusalsNameFlags(t *testing.T) {
	dir := t.TempDir()
	archive := func(name string, cfg model.Config, value float32) string {
		m, err := model.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float32, m.NumParams())
		for i := range p {
			p[i] = value
		}
		var b bytes.Buffer
		if err := model.WriteNPZ(&b, cfg, p); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		write(t, path, b.String())
		return path
	}
	// Finite weights whose products are not.
	big := archive("big.npz", model.Config{Inputs: 1836, Hidden: []int{4}, Outputs: 159}, 3e37)
	small := archive("small.npz", model.Config{Inputs: 10, Outputs: 3}, 0.5)
	junk := filepath.Join(dir, "junk.npz")
	write(t, junk, "PK but no archive")
	notes := filepath.Join(dir, "notes.txt")
	write(t, notes, "no model")
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--model", big, "--data", "bundled:bibtex"},
			"hetsgd eval: --model " + big + ": its scores overflow on --data bundled:bibtex (loss "},
		{[]string{"predict", "--model", big, "--data", "bundled:bibtex"},
			"hetsgd predict: --model " + big + ": point 0's scores overflow ("},
		{[]string{"eval", "--model", small, "--data", "bundled:bibtex"},
			"hetsgd eval: --data bibtex/test has 1836 features and 159 labels; the model takes 10 and gives 3\n"},
		{[]string{"predict", "--model", small, "--data", "bundled:bibtex"},
			"hetsgd predict: --data bibtex/test has 1836 features and 159 labels; the model takes 10 and gives 3\n"},
		{[]string{"eval", "--model", small, "--data", "bundled:bibtex", "--which", "newest"},
			"hetsgd eval: --which \"newest\": want last or best\n"},
		{[]string{"export", "--model", empty, "--out", filepath.Join(dir, "m.npz"), "--which", "best"},
			"hetsgd export: --which best: " + empty + " holds no best model (best.hck: written at a run's evaluations with --checkpoint, unless --keep-best=false)\n"},
		{[]string{"eval", "--model", junk, "--data", "bundled:bibtex"},
			"hetsgd eval: --model " + junk + ": not an .npz archive: "},
		{[]string{"predict", "--model", notes, "--data", "bundled:bibtex"},
			"hetsgd predict: --model: "},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != 1 || !strings.HasPrefix(stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
	if _, _, stderr := runCLI(t, "eval", "--model", notes, "--data", "bundled:bibtex"); !strings.HasSuffix(stderr, " (want a checkpoint or an .npz of hetsgd export)\n") {
		t.Errorf("a file of neither format: %q", stderr)
	}
}
