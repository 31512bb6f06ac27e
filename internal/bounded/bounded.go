package bounded

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLong is wrapped by the errors of a file or a line over its limit.
var ErrTooLong = errors.New("too long")

// ReadFile reads the file path whole if it holds at most max bytes, and
// returns an error wrapping ErrTooLong, having read max+1 bytes, if it
// holds more (an endless device too). what says what the file should be,
// for the message: "a config file".
func ReadFile(path string, max int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a folder, not %s", path, what)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s holds more than %s: not %s (%w)", path, size(max), what, ErrTooLong)
	}
	return b, nil
}

// Lines reads lines of at most Max bytes each (line break not counted).
type Lines struct {
	br   *bufio.Reader
	max  int
	line int    // lines returned
	long []byte // a line longer than the buffer, gathered
}

// NewLines reads the lines of r, each at most max bytes long.
func NewLines(r io.Reader, max int) *Lines { return NewLinesSize(r, min(max+1, 1<<16), max) }

// NewLinesSize is NewLines reading through a buffer of buf bytes: lines
// that fit in it are returned without a copy.
func NewLinesSize(r io.Reader, buf, max int) *Lines {
	return &Lines{br: bufio.NewReaderSize(r, buf), max: max}
}

// Line returns the number of lines returned so far: the last one's number.
func (l *Lines) Line() int { return l.line }

// Next returns the next line with its line break, if it has one (the last
// line of a file may lack it), or io.EOF when none is left. A line longer
// than the limit is an error wrapping ErrTooLong, saying which. The slice is
// valid until the next call.
func (l *Lines) Next() ([]byte, error) {
	b, err := l.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		l.long = append(l.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(l.long) > l.max {
				return nil, l.tooLong()
			}
			b, err = l.br.ReadSlice('\n')
			l.long = append(l.long, b...)
		}
		b = l.long
	}
	if len(bytes.TrimSuffix(b, []byte{'\n'})) > l.max {
		return nil, l.tooLong()
	}
	if len(b) == 0 && err != nil {
		return nil, err
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	l.line++
	return b, nil
}

func (l *Lines) tooLong() error {
	return fmt.Errorf("line %d is longer than %s (%w)", l.line+1, size(int64(l.max)), ErrTooLong)
}

func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
