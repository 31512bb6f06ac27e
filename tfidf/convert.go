package tfidf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
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

// File is the model's file name in a dataset folder (Convert writes it
// there) and in a checkpoint folder (hetsgd train copies it there).
const File = "tfidf.json"

// Sets fits a Model to train (the vectorizer to its texts, the labels
// its documents carry, sorted) and returns it with train and test as sets
// of its columns and labels; test's labels that train lacks are dropped,
// and counted.
func Sets(o Options, train, test []Document) (m *Model, trainSet, testSet *data.Dataset, dropped int, err error) {
	v, grams, err := fit(o, textsOf(train))
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
	set := func(docs []Document, name string, row func(d int, r *Row)) *data.Dataset {
		x := v.rows(textsOf(docs), row)
		y := sparse.NewBuilder(len(m.Labels), true, len(docs), 0)
		var ids []int32
		for _, d := range docs {
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
		return &data.Dataset{Name: name, X: x, Y: y.Build()}
	}
	trainSet = set(train, "train", func(d int, r *Row) { v.row(gramsOf(grams, d), r) })
	testSet = set(test, "test", func(d int, r *Row) { v.Transform(test[d].Text, r) })
	return m, trainSet, testSet, dropped, nil
}

func textsOf(docs []Document) []string {
	texts := make([]string, len(docs))
	for d := range docs {
		texts[d] = docs[d].Text
	}
	return texts
}

// rows returns the rows of texts, row computing document d's: on every
// core, a part's into a builder of its own, joined in order.
func (v *Vectorizer) rows(texts []string, row func(d int, r *Row)) sparse.CSR {
	parts := make([]sparse.CSR, max(min(runtime.GOMAXPROCS(0), len(texts)), 1))
	parallelParts(len(texts), len(parts), func(p, a, b int) {
		// A row holds fewer terms than its text has n-grams (a repeated
		// one counts once, one outside the vocabulary not at all): start
		// from a word a term, and grow.
		part := sparse.NewBuilder(len(v.Terms), false, b-a, textBytes(texts[a:b])/6)
		var r Row
		for d := a; d < b; d++ {
			row(d, &r)
			appendRow(part, &r)
		}
		parts[p] = part.Build()
	})
	return sparse.Concat(parts)
}

// ReadPath reads the labelled text of path (ReadDocuments): a file, or a
// folder whose files, in the order of their names, are read one after
// another (hidden files, those whose names begin with a dot, left out).
func ReadPath(path string) ([]Document, error) {
	files := []string{path}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("tfidf: %w", err)
		}
		files = files[:0]
		for _, e := range entries { // sorted by name
			if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("tfidf: the folder %s holds no files of labelled text", path)
		}
	}
	var docs []Document
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("tfidf: %w", err)
		}
		d, err := ReadDocuments(f, name)
		f.Close()
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	return docs, nil
}

// Conversion is what Convert did: the model, the test labels dropped (not
// in the training file), and the time each phase took.
type Conversion struct {
	Model                  *Model
	Dropped                int
	Read, Vectorize, Write time.Duration
}

// Convert reads labelled text trainPath and testPath, files or folders of
// them (ReadPath), fits a Model to the training file, and writes into dir
// the two sets in the XC format (train.txt, test.txt, as data.WriteDir) and
// the model (tfidf.json), refusing existing files unless overwrite. It
// stops between phases when ctx is done.
func Convert(ctx context.Context, trainPath, testPath, dir string, o Options, overwrite bool) (*Conversion, error) {
	var c Conversion
	start := time.Now()
	train, err := ReadPath(trainPath)
	if err != nil {
		return nil, err
	}
	test, err := ReadPath(testPath)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.Read = time.Since(start)
	start = time.Now()
	m, trainSet, testSet, dropped, err := Sets(o, train, test)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, trainPath)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.Model, c.Dropped, c.Vectorize = m, dropped, time.Since(start)
	start = time.Now()
	js, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	modelPath := filepath.Join(dir, File)
	if err := atomicfile.CheckTarget(modelPath, overwrite); err != nil {
		return nil, fmt.Errorf("tfidf: %w", err)
	}
	if err := data.WriteDir(dir, trainSet, testSet, overwrite); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(modelPath, append(js, '\n'), overwrite); err != nil {
		return nil, fmt.Errorf("tfidf: %w", err)
	}
	c.Write = time.Since(start)
	return &c, nil
}

// Load reads a Model that Convert wrote.
func Load(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tfidf: %w", err)
	}
	return Parse(b, path)
}

// Parse reads a Model from b, the bytes of a model file; name names them
// in errors.
func Parse(b []byte, name string) (*Model, error) {
	var m Model
	switch err := json.Unmarshal(b, &m); {
	case err != nil:
		return nil, fmt.Errorf("tfidf: %s is no %s model: %w", name, Format, err)
	case m.Format != Format:
		return nil, fmt.Errorf("tfidf: %s is no %s model: its format is %q", name, Format, m.Format)
	case m.Vectorizer == nil || m.Terms == nil:
		return nil, fmt.Errorf("tfidf: %s is no %s model: it holds no vectorizer (terms)", name, Format)
	}
	v := m.Vectorizer
	if err := v.check(); err != nil {
		return nil, fmt.Errorf("tfidf: %s: %w", name, err)
	}
	if len(v.Terms) != len(v.IDF) {
		return nil, fmt.Errorf("tfidf: %s: %d terms but %d idf values", name, len(v.Terms), len(v.IDF))
	}
	if err := v.index(); err != nil {
		return nil, fmt.Errorf("tfidf: %s: %w", name, err)
	}
	return &m, nil
}
