package data

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/hetsgd/hetsgd/internal/bounded"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/sparse"
)

// ReadXC reads a dataset in the Extreme Classification Repository format:
// a header line "N D L", then N lines "l1,l2,... f:v f:v ..." with 0-based
// label ids < L and feature ids < D. A point without labels is written with a
// leading space (" f:v ..."); a first token holding a colon is read the same
// way. Blank lines at the end of the file are ignored. name is used in
// errors and as the dataset's name.
//
// The header's point count must match the points that follow: fewer or more
// is an error. A header of 0 points is accepted (an empty set is a
// well-formed file; LoadPair, which cannot train on it, rejects it by name);
// 0 features or 0 labels is not.
func ReadXC(r io.Reader, name string) (*Dataset, error) {
	return readXC(context.Background(), r, name, sizes{})
}

// sizes are upper bounds on a file's lines, feature entries and label
// entries, when a counting pass over the file gave them (zero otherwise): the
// readers then size the CSR buffers once, so that loading takes about the
// CSR's own memory rather than the doubling slack of growing buffers.
type sizes struct {
	lines, features, labels int
}

// streamRows is the row capacity a reader starts with when no counting pass
// bounded the file's lines: the header's point count is a claim, not a
// measurement, so it never sizes an allocation by itself (a 40-byte file
// may announce 10^9 points); the rows then grow as they are read.
const streamRows = 1 << 12

func readXC(ctx context.Context, r io.Reader, name string, hint sizes) (*Dataset, error) {
	tr := newLineReader(ctx, r, name)
	line, ok, err := tr.next()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, tr.errorf("empty file: missing the XC header `points features labels`")
	}
	n, d, l, msg := parseHeader(line)
	if msg != "" {
		return nil, tr.errorf("%s", msg)
	}
	rows := min(n, streamRows)
	if hint.lines > 0 {
		rows = min(n, hint.lines) // the counting pass bounds the rows by the file's size
	}
	p := newPointParser(name, d, l, false, rows, hint)
	for {
		line, ok, err := tr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if p.x.Rows() == n {
			if isBlank(line) {
				continue // trailing blank lines
			}
			return nil, tr.errorf("more points than the %d the header announces", n)
		}
		if msg := p.parse(line); msg != "" {
			return nil, tr.pointError(p, msg)
		}
	}
	if got := p.x.Rows(); got != n {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("header announces %d points but the file has %d", n, got)}
	}
	return p.dataset(d, l), nil
}

// LibSVMOptions describes a multi-label libSVM file: one point per line,
// "l1,l2,... f:v f:v ...", no header.
type LibSVMOptions struct {
	// ZeroBasedFeatures reads feature ids as 0-based. The libSVM convention,
	// and the default, is 1-based ids, shifted down by one on reading.
	ZeroBasedFeatures bool
	// Features and Labels fix the dimensions; 0 means one more than the
	// largest id in the file.
	Features, Labels int
}

// ReadLibSVM reads a multi-label libSVM file. Label ids are 0-based. Blank
// lines are points with neither labels nor features, except at the end of the
// file, where they are ignored.
func ReadLibSVM(r io.Reader, name string, opt LibSVMOptions) (*Dataset, error) {
	return readLibSVM(context.Background(), r, name, opt, sizes{})
}

func readLibSVM(ctx context.Context, r io.Reader, name string, opt LibSVMOptions, hint sizes) (*Dataset, error) {
	tr := newLineReader(ctx, r, name)
	d, l := opt.Features, opt.Labels
	bound := func(n int) int {
		if n == 0 {
			return -1
		}
		return n
	}
	p := newPointParser(name, bound(d), bound(l), !opt.ZeroBasedFeatures, hint.lines, hint)
	blanks := 0
	for {
		line, ok, err := tr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if isBlank(line) {
			blanks++ // kept as empty points only if a non-blank line follows
			continue
		}
		for ; blanks > 0; blanks-- {
			p.parse(nil)
		}
		if msg := p.parse(line); msg != "" {
			return nil, tr.pointError(p, msg)
		}
	}
	if d == 0 {
		d = p.maxFeature + 1
	}
	if l == 0 {
		l = p.maxLabel + 1
	}
	return p.dataset(d, l), nil
}

func isBlank(line []byte) bool {
	return len(bytes.TrimSpace(line)) == 0
}

// headerLike reports whether the first line of a file of unknown format is
// meant as an XC header: it holds no ':' (a libSVM point with features
// does) and at least two tokens (a libSVM point without features has one,
// its labels). Such a line is read as a header, and reported as a bad one
// if it is, rather than as a libSVM point whose second token is not id:value.
func headerLike(line []byte) bool {
	return bytes.IndexByte(line, ':') < 0 && len(bytes.Fields(line)) >= 2
}

// parseHeader parses an XC header "points features labels" and returns what
// is wrong with it, naming the field, or "".
func parseHeader(line []byte) (n, d, l int, msg string) {
	const want = "want `points features labels`"
	f := bytes.Fields(line)
	if len(f) != 3 {
		msg := fmt.Sprintf("XC header: %s (three integers), got %q (%d tokens)", want, clip(line), len(f))
		if bytes.IndexByte(line, ':') >= 0 {
			msg += "; it reads as a libSVM point: a libSVM file has no header (read it as libsvm)"
		}
		return 0, 0, 0, msg
	}
	var v [3]int
	for i, what := range []string{"points", "features", "labels"} {
		tok := f[i]
		x, ok := parseID(tok)
		switch {
		case !ok && len(tok) > 1 && tok[0] == '-' && allDigits(tok[1:]):
			return 0, 0, 0, fmt.Sprintf("XC header: %s %q is negative (%s, got %q)", what, clip(tok), want, clip(line))
		case !ok && allDigits(tok):
			return 0, 0, 0, fmt.Sprintf("XC header: %s %q is too large (%s, got %q)", what, clip(tok), want, clip(line))
		case !ok:
			return 0, 0, 0, fmt.Sprintf("XC header: %s %q is not a non-negative integer (%s, got %q)", what, clip(tok), want, clip(line))
		case i > 0 && x == 0:
			return 0, 0, 0, fmt.Sprintf("XC header: 0 %s: a dataset has at least one (%s, got %q)", what, want, clip(line))
		case x > maxID+1:
			// Points, features and labels are all counted by int32 ids (rows
			// by the sampler's).
			return 0, 0, 0, fmt.Sprintf("XC header: %d %s is more than ids can address (%d)", x, what, maxID+1)
		}
		v[i] = int(x)
	}
	return v[0], v[1], v[2], ""
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// clip shortens a token quoted in an error message.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// maxLineBytes bounds the length of a line of a text dataset. The longest
// lines of the Extreme Classification sets are some hundreds of KB (a point
// with thousands of features); the bound is far above any real line, and is
// there so that input with no line ending — /dev/zero, a binary file, a
// gzip bomb — fails once it is passed, with a message, instead of growing a
// buffer until the process runs out of memory.
const maxLineBytes = 64 << 20

// A load checks its context every checkLines lines and every checkBytes
// bytes, whichever comes first: a few milliseconds of parsing, so that a
// cancelled load stops at once while the check costs nothing measurable.
const (
	checkLines = 4096
	checkBytes = 4 << 20
)

// lineReader yields the lines of a text file without their line ending and
// keeps the line number for errors: bounded.Lines, with the file's name in
// its errors and its context checked as it goes.
type lineReader struct {
	ctx   context.Context
	name  string
	lines *bounded.Lines
	line  int
	max   int // longest line accepted, without its line ending
	bytes int // read since the context was last checked
}

func newLineReader(ctx context.Context, r io.Reader, name string) *lineReader {
	return newLineReaderSize(ctx, r, name, 1<<20, maxLineBytes)
}

func newLineReaderSize(ctx context.Context, r io.Reader, name string, buf, max int) *lineReader {
	return &lineReader{ctx: ctx, name: name, lines: bounded.NewLinesSize(r, buf, max), max: max}
}

// next returns the next line. The slice is valid until the following call.
func (t *lineReader) next() ([]byte, bool, error) {
	if t.line%checkLines == 0 || t.bytes >= checkBytes {
		if err := t.ctx.Err(); err != nil {
			return nil, false, stopped(t.name, t.line, err)
		}
		t.bytes = 0
	}
	b, err := t.lines.Next()
	switch {
	case err == io.EOF:
		return nil, false, nil
	case errors.Is(err, bounded.ErrTooLong):
		return nil, false, &ParseError{File: t.name, Line: t.line + 1,
			Msg: fmt.Sprintf("line longer than %d bytes: not a text dataset, or its lines lack their line endings", t.max)}
	case err != nil:
		if cerr := t.ctx.Err(); cerr != nil {
			return nil, false, stopped(t.name, t.line, cerr) // the file was closed to stop a blocked read
		}
		return nil, false, &ParseError{File: t.name, Line: t.line + 1, Msg: fmt.Sprintf("read error: %v", err)}
	}
	t.bytes += len(b)
	t.line++
	b = bytes.TrimSuffix(b, []byte{'\n'})
	b = bytes.TrimSuffix(b, []byte{'\r'})
	return b, true, nil
}

func (t *lineReader) errorf(format string, args ...any) error {
	return &ParseError{File: t.name, Line: max(t.line, 1), Msg: fmt.Sprintf(format, args...)}
}

// pointError is the error of a line p refused with msg, with p's hint.
func (t *lineReader) pointError(p *pointParser, msg string) error {
	return &ParseError{File: t.name, Line: max(t.line, 1), Msg: msg, Hint: p.hint}
}

// zeroBased is the hint of a feature id 0 in a file read with 1-based ids.
var zeroBased = setting.Errorf("data", "read a libSVM file whose feature ids start at 0 with {Loader.Format} %s", LibSVM0)

// stopped is the error of a load whose context ended after line lines of
// the file name; it wraps the context's error.
func stopped(name string, line int, err error) error {
	if line > 0 {
		return fmt.Errorf("data: %s: loading stopped after line %d: %w", name, line, err)
	}
	return fmt.Errorf("data: %s: loading stopped: %w", name, err)
}

// pointParser turns "labels features" lines into rows of two CSR builders.
type pointParser struct {
	name                 string
	d, l                 int // bounds; -1 means unbounded
	oneBased             bool
	hint                 error // what to do about the line refused last, if anything
	x, y                 *sparse.Builder
	feats, labels        idSet // ids of the current row, for duplicates
	maxFeature, maxLabel int
}

// idSet is a set of non-negative ids with open addressing, reset per row. Its
// memory follows the longest row, not the largest id, so an absurd id in a
// file cannot make the reader allocate without bound.
type idSet struct {
	slots []int32 // id+1, or 0 for empty
	n     int
}

func (s *idSet) reset() {
	if s.n > 0 {
		clear(s.slots)
		s.n = 0
	}
}

// add inserts id and reports whether it was absent.
func (s *idSet) add(id int32) bool {
	if 2*(s.n+1) > len(s.slots) {
		s.grow()
	}
	mask := uint32(len(s.slots) - 1)
	for h := (uint32(id) * 0x9e3779b1) & mask; ; h = (h + 1) & mask {
		switch s.slots[h] {
		case 0:
			s.slots[h] = id + 1
			s.n++
			return true
		case id + 1:
			return false
		}
	}
}

func (s *idSet) grow() {
	old := s.slots
	s.slots = make([]int32, max(64, 2*len(old)))
	s.n = 0
	for _, v := range old {
		if v != 0 {
			s.add(v - 1)
		}
	}
}

// maxID bounds ids when the dimension is not fixed, so a corrupt file cannot
// make the parser allocate without limit.
const maxID = 1<<31 - 2

func newPointParser(name string, d, l int, oneBased bool, rows int, hint sizes) *pointParser {
	return &pointParser{
		name: name, d: d, l: l, oneBased: oneBased,
		x:          sparse.NewBuilder(max(d, 0), false, rows, hint.features),
		y:          sparse.NewBuilder(max(l, 0), true, rows, hint.labels),
		maxFeature: -1, maxLabel: -1,
	}
}

func (p *pointParser) dataset(d, l int) *Dataset {
	x, y := p.x.Build(), p.y.Build()
	x.Cols, y.Cols = d, l
	return &Dataset{Name: p.name, X: x, Y: y}
}

// parse reads one line into a new row and returns "" or what is wrong.
func (p *pointParser) parse(line []byte) string {
	p.feats.reset()
	p.labels.reset()
	i := 0
	// Labels: the first token, unless the line starts with blank space or
	// the first token is a feature (holds a colon).
	if len(line) > 0 && line[0] != ' ' && line[0] != '\t' {
		end := tokenEnd(line, 0)
		if tok := line[:end]; bytes.IndexByte(tok, ':') < 0 {
			for len(tok) > 0 {
				c := bytes.IndexByte(tok, ',')
				if c < 0 {
					c = len(tok)
				}
				id, ok := parseID(tok[:c])
				switch {
				case !ok:
					return fmt.Sprintf("label %q is not a non-negative integer", clip(tok[:c]))
				case p.l >= 0 && id >= int64(p.l):
					return fmt.Sprintf("label %d out of range: the data has %d labels (ids 0..%d)", id, p.l, p.l-1)
				case id > maxID:
					return fmt.Sprintf("label %d too large", id)
				}
				if !p.labels.add(int32(id)) {
					return fmt.Sprintf("duplicate label %d", id)
				}
				p.maxLabel = max(p.maxLabel, int(id))
				p.y.Append(int32(id), 0)
				if c < len(tok) && c == len(tok)-1 {
					return "label list ends with a comma"
				}
				tok = tok[min(c+1, len(tok)):]
			}
			i = end
		}
	}
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		end := tokenEnd(line, i)
		tok := line[i:end]
		i = end
		c := bytes.IndexByte(tok, ':')
		if c < 0 {
			return fmt.Sprintf("feature %q is not of the form id:value", clip(tok))
		}
		id, ok := parseID(tok[:c])
		if !ok {
			return fmt.Sprintf("feature id %q is not a non-negative integer", clip(tok[:c]))
		}
		if p.oneBased {
			if id == 0 {
				p.hint = zeroBased
				return "feature id 0, but a libSVM file's feature ids start at 1"
			}
			id--
		}
		switch {
		case p.d >= 0 && id >= int64(p.d):
			if p.oneBased {
				return fmt.Sprintf("feature %d out of range: the data has %d features (ids 1..%d)", id+1, p.d, p.d)
			}
			return fmt.Sprintf("feature %d out of range: the data has %d features (ids 0..%d)", id, p.d, p.d-1)
		case id > maxID:
			return fmt.Sprintf("feature %d too large", id)
		}
		v, ok := parseFloat(tok[c+1:])
		if !ok {
			return fmt.Sprintf("feature %d: value %q is not a number", id, clip(tok[c+1:]))
		}
		if f := float32(v); math.IsInf(float64(f), 0) || f != f {
			return fmt.Sprintf("feature %d: value %q is not finite in float32", id, clip(tok[c+1:]))
		}
		if !p.feats.add(int32(id)) {
			return fmt.Sprintf("duplicate feature %d", id)
		}
		p.maxFeature = max(p.maxFeature, int(id))
		p.x.Append(int32(id), float32(v))
	}
	p.x.EndRow()
	p.y.EndRow()
	return ""
}

func tokenEnd(line []byte, i int) int {
	for i < len(line) && line[i] != ' ' && line[i] != '\t' {
		i++
	}
	return i
}

// parseID parses a non-negative decimal integer of at most 18 digits.
func parseID(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat parses a decimal number as float64, exactly as strconv.ParseFloat
// would. Plain decimals of up to 19 significant digits whose value is exact
// in float64 times an exact power of ten take a fast path (Clinger's); the
// rest, hexadecimal and special values included, go to strconv.
func parseFloat(b []byte) (float64, bool) {
	i, neg := 0, false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	var mant uint64
	digits, exp, sawDigit := 0, 0, false
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		sawDigit = true
		if mant == 0 && b[i] == '0' {
			continue
		}
		mant = mant*10 + uint64(b[i]-'0')
		digits++
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			sawDigit = true
			exp--
			if mant == 0 && b[i] == '0' {
				continue
			}
			mant = mant*10 + uint64(b[i]-'0')
			digits++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') && sawDigit {
		j, eneg, e := i+1, false, 0
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			eneg = b[j] == '-'
			j++
		}
		start := j
		for ; j < len(b) && b[j] >= '0' && b[j] <= '9' && e < 10000; j++ {
			e = e*10 + int(b[j]-'0')
		}
		if j > start {
			if eneg {
				e = -e
			}
			exp += e
			i = j
		}
	}
	if i == len(b) && sawDigit && digits <= 19 && mant <= 1<<53 && exp >= -22 && exp <= 22 {
		f := float64(mant)
		if exp > 0 {
			f *= pow10[exp]
		} else if exp < 0 {
			f /= pow10[-exp]
		}
		if neg {
			f = -f
		}
		return f, true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return f, true // ±Inf or 0: the caller's finiteness check reports it
		}
		return 0, false
	}
	return f, true
}
