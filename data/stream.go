package data

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
)

// Stream reads the points of a text dataset (XC or libSVM, optionally
// gzipped) a chunk at a time, for files larger than memory: scoring a model
// on them needs only a chunk at once. The dimensions are the model's: an XC
// header must announce them, and libSVM ids beyond them are errors naming
// the line.
type Stream struct {
	name         string
	f            *os.File
	tr           *lineReader
	format       Format
	features     int
	labels       int
	announced    int // XC: the points the header announces
	read         int // points read so far
	pending      []byte
	havePending  bool
	pendingBlank int
}

// OpenStream opens path (Stdin: the standard input), of format f (Auto as
// Read decides it), for points of features features and labels labels.
func OpenStream(ctx context.Context, path string, f Format, features, labels int) (*Stream, error) {
	file, err := openPath(path)
	if err != nil {
		return nil, err
	}
	s := &Stream{name: file.Name(), f: file, features: features, labels: labels}
	if err := s.start(ctx, f); err != nil {
		file.Close()
		return nil, err
	}
	return s, nil
}

func (s *Stream) start(ctx context.Context, f Format) error {
	r, _, err := decompress(s.f, s.name)
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(r, 1<<20)
	if f == Auto {
		first, _ := br.Peek(1 << 12)
		f = LibSVM
		if nl := bytes.IndexByte(first, '\n'); nl >= 0 && headerLike(first[:nl]) || nl < 0 && len(first) < 1<<12 && headerLike(first) {
			f = XC
		}
	}
	s.format = f
	s.tr = newLineReader(ctx, br, s.name)
	switch f {
	case XC:
		line, ok, err := s.tr.next()
		if err != nil {
			return err
		}
		if !ok {
			return s.tr.errorf("empty file: missing the XC header `points features labels`")
		}
		n, d, l, msg := parseHeader(line)
		if msg != "" {
			return s.tr.errorf("%s", msg)
		}
		if d != s.features || l != s.labels {
			return s.tr.errorf("the header announces %d features and %d labels; the model has %d and %d", d, l, s.features, s.labels)
		}
		s.announced = n
	case LibSVM, LibSVM0:
	default:
		return fmt.Errorf("data: %s: unknown format %q", s.name, f)
	}
	return nil
}

// Next returns the next points, at most n of them, and io.EOF once none is
// left.
func (s *Stream) Next(n int) (*Dataset, error) {
	p := newPointParser(s.name, s.features, s.labels, s.format == LibSVM, min(n, streamRows), sizes{})
	if s.format == LibSVM0 {
		p.oneBased = false
	}
	for p.x.Rows() < n {
		var line []byte
		if s.havePending {
			line, s.havePending = s.pending, false
		} else {
			l, ok, err := s.tr.next()
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			line = l
			if isBlank(line) {
				switch {
				case s.format.isLibSVM():
					// An empty point, unless only blank lines follow it:
					// kept back until a point comes.
					s.pendingBlank++
					continue
				case s.read == s.announced:
					continue // XC: trailing blank lines
				}
			}
		}
		if s.pendingBlank > 0 {
			// The empty points before this line's, one per turn; the line
			// waits (for the next chunk if this one fills up).
			p.parse(nil)
			s.pendingBlank--
			s.read++
			s.pending, s.havePending = append(s.pending[:0], line...), true
			continue
		}
		if s.format == XC && s.read == s.announced {
			return nil, s.tr.errorf("more points than the %d the header announces", s.announced)
		}
		if msg := p.parse(line); msg != "" {
			return nil, s.tr.pointError(p, msg)
		}
		s.read++
	}
	if p.x.Rows() == 0 {
		if s.format == XC && s.read != s.announced {
			return nil, &ParseError{File: s.name, Msg: fmt.Sprintf("header announces %d points but the file has %d", s.announced, s.read)}
		}
		return nil, io.EOF
	}
	return p.dataset(s.features, s.labels), nil
}

// Close closes the file.
func (s *Stream) Close() error { return s.f.Close() }

// Chunks deals the points of ds, a set held whole, as a Stream deals a
// file's: each call returns the next points in order, at most n of them
// (and at most maxRows), and io.EOF once none is left, so that a reader of
// chunks (metric.Predict) takes either. A chunk's matrices are reused by
// the next call: it gathers into one batch, allocated here.
func Chunks(ds *Dataset, maxRows int) func(n int) (*Dataset, error) {
	b := NewBatch(ds, maxRows)
	lo := 0
	return func(n int) (*Dataset, error) {
		if lo == ds.Len() {
			return nil, io.EOF
		}
		hi := min(lo+min(n, maxRows), ds.Len())
		b.Range(ds, lo, hi)
		lo = hi
		return &Dataset{Name: ds.Name, X: b.X, Y: b.Y}, nil
	}
}
