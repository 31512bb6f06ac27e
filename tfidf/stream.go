package tfidf

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/sparse"
)

// Rows returns the rows of texts as a set of the model's columns and
// labels (none marked): the points to score.
func (m *Model) Rows(texts []string, name string) *data.Dataset {
	x := m.rows(texts, func(d int, r *Row) { m.Transform(texts[d], r) })
	return &data.Dataset{Name: name, X: x, Y: sparse.CSR{Rows: x.Rows, Cols: len(m.Labels), Indptr: make([]int64, x.Rows+1)}}
}

// Reader deals the documents of r, a line each, as sets of the model's
// rows, at most n a call (data.Stream's Next: io.EOF after the last). A
// line's text is the whole line, or what follows its first tab: a
// labels<TAB>text line of data from-text, its labels dropped. Every line
// is a point, a blank one without terms, so point i is line i+1. An
// error names the file (name) and the line; a read that fails once ctx is
// done (which closes a file of data.OpenFile) is ctx's error.
func (m *Model) Reader(ctx context.Context, r io.Reader, name string) func(n int) (*data.Dataset, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	line := 0
	var texts []string
	return func(n int) (*data.Dataset, error) {
		texts = texts[:0]
		for len(texts) < n && sc.Scan() {
			line++
			b := sc.Bytes()
			if !utf8.Valid(b) {
				return nil, fmt.Errorf("tfidf: %s:%d: not UTF-8 text", name, line)
			}
			if _, text, ok := bytes.Cut(b, []byte{'\t'}); ok {
				b = text
			}
			texts = append(texts, string(b))
		}
		switch err := sc.Err(); {
		case err != nil && ctx.Err() != nil:
			return nil, fmt.Errorf("tfidf: %s: stopped after line %d: %w", name, line, ctx.Err())
		case errors.Is(err, bufio.ErrTooLong):
			return nil, fmt.Errorf("tfidf: %s:%d: a line over %d bytes", name, line+1, maxLine)
		case err != nil:
			return nil, fmt.Errorf("tfidf: %s: after line %d: %w", name, line, err)
		}
		if len(texts) == 0 {
			return nil, io.EOF
		}
		return m.Rows(texts, name), nil
	}
}
