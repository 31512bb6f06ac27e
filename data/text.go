package data

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/hetsgd/hetsgd/sparse"
)

// ReadXC reads a dataset in the Extreme Classification Repository format:
// a header line "N D L", then N lines "l1,l2,... f:v f:v ..." with 0-based
// label ids < L and feature ids < D. A point without labels is written with a
// leading space (" f:v ..."); a first token holding a colon is read the same
// way. Blank lines at the end of the file are ignored. name is used in
// errors and as the dataset's name.
func ReadXC(r io.Reader, name string) (*Dataset, error) {
	return readXC(r, name, sizes{})
}

// sizes are upper bounds on a file's lines, feature entries and label
// entries, when a counting pass over the file gave them (zero otherwise): the
// readers then size the CSR buffers once, so that loading takes about the
// CSR's own memory rather than the doubling slack of growing buffers.
type sizes struct {
	lines, features, labels int
}

func readXC(r io.Reader, name string, hint sizes) (*Dataset, error) {
	tr := newLineReader(r, name)
	line, ok, err := tr.next()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, tr.errorf("empty file: missing header \"N D L\"")
	}
	n, d, l, msg := parseHeader(line)
	if msg != "" {
		return nil, tr.errorf("%s", msg)
	}
	rows := min(n, 1<<20) // a header cannot make the reader allocate without bound
	if hint.lines > 0 {
		rows = min(n, hint.lines)
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
			return nil, tr.errorf("%s", msg)
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
	return readLibSVM(r, name, opt, sizes{})
}

func readLibSVM(r io.Reader, name string, opt LibSVMOptions, hint sizes) (*Dataset, error) {
	tr := newLineReader(r, name)
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
			return nil, tr.errorf("%s", msg)
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

func parseHeader(line []byte) (n, d, l int, msg string) {
	f := bytes.Fields(line)
	if len(f) != 3 {
		return 0, 0, 0, fmt.Sprintf("missing header \"N D L\" (points, features, labels): found %q", clip(line))
	}
	var v [3]int
	for i, tok := range f {
		x, ok := parseID(tok)
		if !ok {
			return 0, 0, 0, fmt.Sprintf("header \"N D L\": %q is not a non-negative integer", clip(tok))
		}
		v[i] = int(x)
	}
	// Features and labels are int32 ids; the point count only sizes hints.
	for i, what := range []string{"", "features", "labels"} {
		if i > 0 && v[i] > maxID+1 {
			return 0, 0, 0, fmt.Sprintf("header \"N D L\": %d %s is more than ids can address (%d)", v[i], what, maxID+1)
		}
	}
	return v[0], v[1], v[2], ""
}

// clip shortens a token quoted in an error message.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// lineReader yields the lines of a text file without their line ending and
// keeps the line number for errors.
type lineReader struct {
	name string
	br   *bufio.Reader
	line int
	long []byte
}

func newLineReader(r io.Reader, name string) *lineReader {
	return &lineReader{name: name, br: bufio.NewReaderSize(r, 1<<20)}
}

// next returns the next line. The slice is valid until the following call.
func (t *lineReader) next() ([]byte, bool, error) {
	b, err := t.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		t.long = append(t.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = t.br.ReadSlice('\n')
			t.long = append(t.long, b...)
		}
		b = t.long
	}
	if err != nil && err != io.EOF {
		return nil, false, &ParseError{File: t.name, Line: t.line + 1, Msg: fmt.Sprintf("read error: %v", err)}
	}
	if len(b) == 0 && err == io.EOF {
		return nil, false, nil
	}
	t.line++
	b = bytes.TrimSuffix(b, []byte{'\n'})
	b = bytes.TrimSuffix(b, []byte{'\r'})
	return b, true, nil
}

func (t *lineReader) errorf(format string, args ...any) error {
	return &ParseError{File: t.name, Line: max(t.line, 1), Msg: fmt.Sprintf(format, args...)}
}

// pointParser turns "labels features" lines into rows of two CSR builders.
type pointParser struct {
	name                 string
	d, l                 int // bounds; -1 means unbounded
	oneBased             bool
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
				return "feature id 0 in a 1-based libSVM file (read it with 0-based feature ids)"
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
