package tfidf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/testdata"
)

// Tokens finds the words scikit-learn's default analyzer finds: runs of
// two or more letters, digits or underscores, lowercased.
func TestTokens(t *testing.T) {
	for in, want := range map[string]string{
		"The editor's editor: A, b2 and C++!": "the editor editor b2 and",
		"Übersetzer für Wörterbücher":         "übersetzer für wörterbücher",
		"snake_case x HTTP/2 TLS1.3 ゲーム エンジン": "snake_case http tls1 ゲーム エンジン",
		"": "",
	} {
		if got := strings.Join(Tokens(in, nil), " "); got != want {
			t.Errorf("Tokens(%q) = %q, want %q", in, got, want)
		}
	}
}

// untiedCut returns the largest number of terms, at most 40, that
// max_features can keep from docs' n-grams without a tie at the cut:
// scikit-learn breaks ties by NumPy's unstable sort, which this package
// does not copy (see the package documentation).
func untiedCut(docs []Document, minN, maxN int) int {
	tf := map[string]int{}
	o := Options{MinN: minN, MaxN: maxN}
	for _, d := range docs {
		refGrams(o, Tokens(d.Text, nil), func(term string) { tf[term]++ })
	}
	var counts []int
	for _, c := range tf {
		counts = append(counts, c)
	}
	slices.Sort(counts)
	slices.Reverse(counts)
	for k := min(40, len(counts)-1); k > 0; k-- {
		if counts[k-1] > counts[k] {
			return k
		}
	}
	return 0
}

// A vocabulary and rows by hand: two documents, unigrams, no min_df.
func TestKnownAnswer(t *testing.T) {
	docs := []string{"apple banana apple", "banana cherry"}
	v, err := Fit(Options{MinN: 1, MaxN: 1, MinDF: 1}, docs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.Terms, []string{"apple", "banana", "cherry"}) {
		t.Fatalf("terms %v", v.Terms)
	}
	idf1 := math.Log(3.0/2) + 1 // on one document of two
	if math.Abs(v.IDF[0]-idf1) > 1e-15 || math.Abs(v.IDF[1]-1) > 1e-15 {
		t.Errorf("idf %v, want %v and 1", v.IDF, idf1)
	}
	var r Row
	v.Transform(docs[0], &r)
	a, b := 2*idf1, 1.0 // apple twice, banana once
	n := math.Hypot(a, b)
	if !slices.Equal(r.IDs, []int32{0, 1}) || math.Abs(float64(r.Values[0])-a/n) > 1e-7 || math.Abs(float64(r.Values[1])-b/n) > 1e-7 {
		t.Errorf("row %v %v, want [0 1] [%v %v]", r.IDs, r.Values, a/n, b/n)
	}
}

// The vocabulary, idf and rows equal scikit-learn's TfidfVectorizer's on
// a small corpus of several scripts and punctuation, in several settings.
func TestMatchesScikitLearn(t *testing.T) {
	py := testdata.Python(t, "sklearn", "python3-sklearn")
	trainPath, testPath := filepath.Join("testdata", "corpus.tsv"), filepath.Join("testdata", "corpus_test.tsv")
	read := func(path string) []Document {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		docs, err := ReadDocuments(f, path)
		if err != nil {
			t.Fatal(err)
		}
		return docs
	}
	train, test := read(trainPath), read(testPath)
	cut := untiedCut(train, 1, 2)
	if cut < 10 {
		t.Fatalf("no untied cut of 10 terms or more (%d): the corpus does not test max_features", cut)
	}
	for _, o := range []Options{
		Defaults, {MinN: 1, MaxN: 2, MinDF: 1, MaxFeatures: cut, Sublinear: true},
		{MinN: 1, MaxN: 1, MinDF: 1},
		{MinN: 1, MaxN: 3, MinDF: 2, Sublinear: true},
		{MinN: 2, MaxN: 2, MinDF: 1, Sublinear: false},
	} {
		m, trainSet, testSet, _, err := Sets(o, train, test)
		if err != nil {
			t.Fatal(err)
		}
		sub := 0
		if o.Sublinear {
			sub = 1
		}
		out, err := exec.Command(py, filepath.Join("testdata", "sklearn_reference.py"), trainPath, testPath,
			fmt.Sprint(o.MinN), fmt.Sprint(o.MaxN), fmt.Sprint(o.MinDF), fmt.Sprint(o.MaxFeatures), fmt.Sprint(sub)).Output()
		if err != nil {
			t.Fatalf("%+v: the reference: %v", o, err)
		}
		var want struct {
			Terms       []string
			IDF         []float64
			Train, Test [][][2]float64
		}
		if err := json.Unmarshal(out, &want); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.Terms, want.Terms) {
			t.Fatalf("%+v: %d terms, scikit-learn's %d:\n%v\n%v", o, len(m.Terms), len(want.Terms), m.Terms, want.Terms)
		}
		for j := range want.IDF {
			if math.Abs(m.IDF[j]-want.IDF[j]) > 1e-12 {
				t.Errorf("%+v: idf of %q %v, scikit-learn's %v", o, m.Terms[j], m.IDF[j], want.IDF[j])
			}
		}
		for _, c := range []struct {
			set  *data.Dataset
			rows [][][2]float64
		}{{trainSet, want.Train}, {testSet, want.Test}} {
			for i, row := range c.rows {
				ids, vals := c.set.X.Row(i)
				if len(ids) != len(row) {
					t.Fatalf("%+v: %s row %d: %d terms, scikit-learn's %d", o, c.set.Name, i, len(ids), len(row))
				}
				for n, e := range row {
					if ids[n] != int32(e[0]) || math.Abs(float64(vals[n])-e[1]) > 1e-6 {
						t.Errorf("%+v: %s row %d: %d:%v, scikit-learn's %v:%v", o, c.set.Name, i, ids[n], vals[n], e[0], e[1])
					}
				}
			}
		}
	}
}

// Convert writes the sets and the model; the model read back turns a
// training text into its row of train.txt; a second Convert into the same
// folder is refused before it writes anything.
func TestConvertAndLoad(t *testing.T) {
	dir := t.TempDir()
	trainPath, testPath := filepath.Join("testdata", "corpus.tsv"), filepath.Join("testdata", "corpus_test.tsv")
	c, err := Convert(t.Context(), trainPath, testPath, dir, Defaults, false)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Model; c.Dropped != 1 || len(m.Labels) != 4 {
		t.Errorf("%d test labels dropped, %d labels: want 1 (robots) and 4", c.Dropped, len(m.Labels))
	}
	back, err := Load(filepath.Join(dir, "tfidf.json"))
	if err != nil {
		t.Fatal(err)
	}
	sets, err := data.Loader{}.LoadAny(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(trainPath)
	docs, _ := ReadDocuments(f, trainPath)
	f.Close()
	var r Row
	for i, d := range docs {
		back.Transform(d.Text, &r)
		ids, vals := sets[0].X.Row(i)
		if !slices.Equal(ids, r.IDs) || !slices.Equal(vals, r.Values) {
			t.Fatalf("document %d: the loaded model's row %v %v, train.txt's %v %v", i, r.IDs, r.Values, ids, vals)
		}
	}
	before, _ := os.ReadFile(filepath.Join(dir, "train.txt"))
	if _, err := Convert(t.Context(), testPath, trainPath, dir, Defaults, false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a second conversion into the folder: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "train.txt")); string(after) != string(before) {
		t.Error("a refused conversion changed train.txt")
	}
	if _, err := Load(trainPath); err == nil {
		t.Error("a text file loaded as a model")
	}
}

// Reader deals a line a point, a blank line a point without terms, the
// text after a line's first tab, in chunks of at most n; a line that is
// not UTF-8 is refused with its number.
func TestReader(t *testing.T) {
	m, _, _, _, err := Sets(Defaults, []Document{{Text: "apple banana", Labels: []string{"a"}}, {Text: "banana cherry", Labels: []string{"b"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{"apple", "", "x,y\tbanana cherry", "cherry\tapple banana"}
	next := m.Reader(t.Context(), strings.NewReader(strings.Join(lines, "\n")+"\n"), "in.txt")
	var r Row
	point := 0
	for _, want := range []int{3, 1} {
		ds, err := next(3)
		if err != nil || ds.Len() != want || ds.Features() != len(m.Terms) || ds.Y.Cols != 2 {
			t.Fatalf("chunk of %v points: %v", ds, err)
		}
		for i := range ds.Len() {
			text := lines[point]
			if _, after, ok := strings.Cut(text, "\t"); ok {
				text = after
			}
			m.Transform(text, &r)
			if ids, vals := ds.X.Row(i); !slices.Equal(ids, r.IDs) || !slices.Equal(vals, r.Values) {
				t.Errorf("point %d (%q): row %v %v, want %v %v", point, lines[point], ids, vals, r.IDs, r.Values)
			}
			point++
		}
	}
	if _, err := next(3); err != io.EOF {
		t.Errorf("after the last line: %v, want io.EOF", err)
	}
	next = m.Reader(t.Context(), strings.NewReader("fine\nbad \xff\n"), "in.txt")
	if _, err := next(5); err == nil || !strings.Contains(err.Error(), "in.txt:2: not UTF-8") {
		t.Errorf("a line not UTF-8: %v", err)
	}
	// A read that fails once the context is done is the context's error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	next = m.Reader(ctx, iotest.ErrReader(errors.New("file already closed")), "-")
	if _, err := next(5); !errors.Is(err, context.Canceled) {
		t.Errorf("a read failing after Ctrl-C: %v, want context.Canceled", err)
	}
	next = m.Reader(t.Context(), strings.NewReader(strings.Repeat("x", maxLine+1)), "in.txt")
	if _, err := next(5); err == nil || !strings.Contains(err.Error(), "in.txt:1: a line over") {
		t.Errorf("a line too long: %v", err)
	}
}

// A folder of labelled text files reads as its files, in the order of
// their names, hidden ones left out; an empty folder is refused.
func TestReadPathFolder(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"b.tsv": "y\tsecond\n", "a.tsv": "x\tfirst\n", ".hidden": "z\tnever\n"} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	docs, err := ReadPath(dir)
	if err != nil || len(docs) != 2 || docs[0].Text != "first" || docs[1].Text != "second" {
		t.Fatalf("ReadPath(folder) = %+v, %v", docs, err)
	}
	empty := t.TempDir()
	if _, err := ReadPath(empty); err == nil || !strings.Contains(err.Error(), "holds no files") {
		t.Errorf("an empty folder: %v", err)
	}
}
