package tfidf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/sparse"
)

// Document is a line of a labelled text file: its labels' names and its
// text.
type Document struct {
	Labels []string
	Text   string
}

// maxLine bounds a line of a labelled text file: a binary file is refused
// rather than read whole.
const maxLine = 16 << 20

// ReadDocuments reads labelled text: a line "labels<TAB>text" per
// document, the labels comma-separated (none: a document without labels),
// the text UTF-8. Blank lines are skipped. An error names the file (name)
// and the line.
func ReadDocuments(r io.Reader, name string) ([]Document, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var docs []Document
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !utf8.Valid(line) {
			return nil, fmt.Errorf("tfidf: %s:%d: not UTF-8 text", name, n)
		}
		labels, text, ok := bytes.Cut(line, []byte{'\t'})
		if !ok {
			return nil, fmt.Errorf("tfidf: %s:%d: no tab: want labels<TAB>text (labels comma-separated, or none)", name, n)
		}
		d := Document{Text: string(text)}
		for l := range strings.SplitSeq(string(labels), ",") {
			if l = strings.TrimSpace(l); l != "" {
				d.Labels = append(d.Labels, l)
			}
		}
		docs = append(docs, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tfidf: %s: %w (a line holds at most %d bytes)", name, err, maxLine)
	}
	return docs, nil
}

// Model is what turns labelled text into a set's rows: the vectorizer and
// the label names, a label's id its place.
type Model struct {
	Format string `json:"format"`
	*Vectorizer
	Labels []string `json:"labels"`
}

// Format names the model's file format.
const Format = "hetsgd-tfidf/1"

// Sets fits a Model to train (the vectorizer to its texts, the labels
// its documents carry, sorted) and returns it with train and test as sets
// of its columns and labels; test's labels that train lacks are dropped,
// and counted.
func Sets(o Options, train, test []Document) (m *Model, trainSet, testSet *data.Dataset, dropped int, err error) {
	i := 0
	v, err := Fit(o, func() (string, bool) {
		if i == len(train) {
			return "", false
		}
		i++
		return train[i-1].Text, true
	})
	if err != nil {
		return nil, nil, nil, 0, err
	}
	names := map[string]int32{}
	for _, d := range train {
		for _, l := range d.Labels {
			names[l] = 0
		}
	}
	m = &Model{Format: Format, Vectorizer: v}
	for l := range names {
		m.Labels = append(m.Labels, l)
	}
	slices.Sort(m.Labels)
	for j, l := range m.Labels {
		names[l] = int32(j)
	}
	set := func(docs []Document, name string) *data.Dataset {
		x := sparse.NewBuilder(len(v.Terms), false, len(docs), 0)
		y := sparse.NewBuilder(len(m.Labels), true, len(docs), 0)
		var r Row
		var ids []int32
		for _, d := range docs {
			v.Append(x, d.Text, &r)
			ids = ids[:0]
			for _, l := range d.Labels {
				if j, ok := names[l]; ok {
					ids = append(ids, j)
				} else {
					dropped++
				}
			}
			slices.Sort(ids)
			for _, j := range slices.Compact(ids) {
				y.Append(j, 1)
			}
			y.EndRow()
		}
		return &data.Dataset{Name: name, X: x.Build(), Y: y.Build()}
	}
	return m, set(train, "train"), set(test, "test"), dropped, nil
}

// Convert reads labelled text files trainPath and testPath (see
// ReadDocuments), fits a Model to the training file, and writes into dir
// the two sets in the XC format (train.txt, test.txt, as data.WriteDir) and
// the model (tfidf.json), refusing existing files unless overwrite. It
// returns the model and the test labels dropped (not in the training
// file).
func Convert(trainPath, testPath, dir string, o Options, overwrite bool) (*Model, int, error) {
	read := func(path string) ([]Document, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("tfidf: %w", err)
		}
		defer f.Close()
		return ReadDocuments(f, path)
	}
	train, err := read(trainPath)
	if err != nil {
		return nil, 0, err
	}
	test, err := read(testPath)
	if err != nil {
		return nil, 0, err
	}
	m, trainSet, testSet, dropped, err := Sets(o, train, test)
	if err != nil {
		return nil, 0, fmt.Errorf("%w (%s)", err, trainPath)
	}
	js, err := json.Marshal(m)
	if err != nil {
		return nil, 0, err
	}
	modelPath := filepath.Join(dir, "tfidf.json")
	if err := atomicfile.CheckTarget(modelPath, overwrite); err != nil {
		return nil, 0, fmt.Errorf("tfidf: %w", err)
	}
	if err := data.WriteDir(dir, trainSet, testSet, overwrite); err != nil {
		return nil, 0, err
	}
	if err := atomicfile.WriteFile(modelPath, append(js, '\n'), overwrite); err != nil {
		return nil, 0, fmt.Errorf("tfidf: %w", err)
	}
	return m, dropped, nil
}

// Load reads a Model that Convert wrote.
func Load(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tfidf: %w", err)
	}
	var m Model
	if err := json.Unmarshal(b, &m); err != nil || m.Format != Format || m.Vectorizer == nil {
		return nil, fmt.Errorf("tfidf: %s is no %s model: %v", path, Format, err)
	}
	v := m.Vectorizer
	if err := v.check(); err != nil || len(v.Terms) != len(v.IDF) || !slices.IsSorted(v.Terms) {
		return nil, fmt.Errorf("tfidf: %s: its settings, terms (%d, sorted %v) or idf (%d) are inconsistent: %v", path, len(v.Terms), slices.IsSorted(v.Terms), len(v.IDF), err)
	}
	v.indexTerms()
	return &m, nil
}
