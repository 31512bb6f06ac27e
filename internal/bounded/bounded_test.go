package bounded

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	os.WriteFile(small, []byte("abc"), 0o644)
	if b, err := ReadFile(small, 3, "a config file"); err != nil || string(b) != "abc" {
		t.Fatalf("%q, %v", b, err)
	}
	if _, err := ReadFile(small, 2, "a config file"); !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), "holds more than 2 bytes: not a config file") {
		t.Fatalf("a file over the limit: %v", err)
	}
	if _, err := ReadFile("/dev/zero", 1<<20, "a config file"); !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("an endless device: %v", err)
	}
	if _, err := ReadFile(dir, 10, "a config file"); err == nil || !strings.Contains(err.Error(), "is a folder") {
		t.Fatalf("a folder: %v", err)
	}
}

func TestLines(t *testing.T) {
	in := "a\n" + strings.Repeat("b", 100) + "\nccc"
	l := NewLines(strings.NewReader(in), 100)
	var got []string
	for {
		b, err := l.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	if strings.Join(got, "|") != "a\n|"+strings.Repeat("b", 100)+"\n|ccc" || l.Line() != 3 {
		t.Fatalf("lines %q, %d", got, l.Line())
	}
	l = NewLines(strings.NewReader("ok\n"+strings.Repeat("x", 101)+"\n"), 100)
	l.Next()
	if _, err := l.Next(); !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), "line 2 is longer than 100 bytes") {
		t.Fatalf("a long line: %v", err)
	}
	// An endless line stops at the limit.
	l = NewLines(io.LimitReader(zeros{}, 1<<30), 1<<20)
	if _, err := l.Next(); !errors.Is(err, ErrTooLong) {
		t.Fatalf("an endless line: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func FuzzLines(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), 3)
	f.Add([]byte("\n\n"), 0)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		l := NewLines(strings.NewReader(string(b)), max)
		var all []byte
		for {
			line, err := l.Next()
			if err == io.EOF {
				break
			}
			if errors.Is(err, ErrTooLong) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := len(strings.TrimSuffix(string(line), "\n")); n > max {
				t.Fatalf("a line of %d bytes over the limit %d", n, max)
			}
			all = append(all, line...)
		}
		if string(all) != string(b) {
			t.Fatalf("lines %q do not make up %q", all, b)
		}
	})
}
