package data

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// streamAll reads path in chunks of n points and returns the rows' features
// and labels as text.
func streamAll(t testing.TB, path string, f Format, d, l, n int) ([]string, error) {
	s, err := OpenStream(context.Background(), path, f, d, l)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var rows []string
	for {
		ds, err := s.Next(n)
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		if ds.Len() > n || ds.Features() != d || ds.Labels() != l {
			t.Fatalf("a chunk of %d points, %d features, %d labels", ds.Len(), ds.Features(), ds.Labels())
		}
		rows = append(rows, rowsOf(ds)...)
	}
}

func rowsOf(ds *Dataset) []string {
	var out []string
	for i := range ds.Len() {
		var b strings.Builder
		for k := ds.Y.Indptr[i]; k < ds.Y.Indptr[i+1]; k++ {
			b.WriteString(" y" + string(rune('0'+ds.Y.Indices[k]%10)))
		}
		for k := ds.X.Indptr[i]; k < ds.X.Indptr[i+1]; k++ {
			b.WriteString(" x" + string(rune('0'+ds.X.Indices[k]%10)) + ":" + string(rune('0'+int(ds.X.Values[k])%10)))
		}
		out = append(out, b.String())
	}
	return out
}

// Streamed in chunks of any size, a file gives the points Read gives, blank
// lines (libSVM's empty points, XC's trailing ones) and gzip included.
func TestStreamEqualsRead(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.xc":     "4 6 3\n0,2 1:1 5:2\n1 0:3\n\n2 4:1\n\n\n",
		"b.libsvm": "0 1:1 6:2\n\n\n1,2 2:3\n2 5:1\n\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(text), 0o644)
		gz := path + ".gz"
		f, _ := os.Create(gz)
		w := gzip.NewWriter(f)
		w.Write([]byte(text))
		w.Close()
		f.Close()
		ds, err := Load(path, Auto)
		if err != nil {
			t.Fatal(err)
		}
		want := rowsOf(ds)
		for _, p := range []string{path, gz} {
			for _, n := range []int{1, 2, 3, 100} {
				got, err := streamAll(t, p, Auto, 6, 3, n)
				if err != nil {
					t.Fatalf("%s in chunks of %d: %v", p, n, err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s in chunks of %d:\n%q\nwant\n%q", p, n, got, want)
				}
			}
		}
	}
}

func TestStreamErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		text, want string
	}{
		{"2 6 3\n0 1:1\n", "header announces 2 points but the file has 1"},
		{"1 6 3\n0 1:1\n1 2:1\n", ":3: more points than the 1"},
		{"1 7 3\n0 1:1\n", ":1: the header announces 7 features and 3 labels; the model has 6 and 3"},
		{"0 9:1\n", ":1:"},
	} {
		path := filepath.Join(dir, "f.txt")
		os.WriteFile(path, []byte(c.text), 0o644)
		_, err := streamAll(t, path, Auto, 6, 3, 10)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}

// FuzzStream: a streamed file never panics, and when Read with the same
// dimensions accepts it, the stream gives the same points.
func FuzzStream(f *testing.F) {
	f.Add("3 6 3\n0,2 1:1 5:2\n1 0:3\n\n", 2)
	f.Add("0 1:1 6:2\n\n\n1,2 2:3\n", 1)
	f.Fuzz(func(t *testing.T, text string, n int) {
		n = 1 + (n&0xff)%7
		path := filepath.Join(t.TempDir(), "f.txt")
		os.WriteFile(path, []byte(text), 0o644)
		got, err := streamAll(t, path, LibSVM, 6, 3, n)
		ds, rerr := ReadLibSVM(strings.NewReader(text), path, LibSVMOptions{Features: 6, Labels: 3})
		if (err == nil) != (rerr == nil) {
			t.Fatalf("stream error %v, Read error %v", err, rerr)
		}
		if err == nil && !slices.Equal(got, rowsOf(ds)) {
			t.Fatalf("stream %q, Read %q", got, rowsOf(ds))
		}
	})
}

// A set held whole, dealt in chunks of any size, gives the points a stream
// of its file gives, and then io.EOF.
func TestChunksEqualStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.xc")
	if err := os.WriteFile(path, []byte("5 6 3\n0,2 1:1 5:2\n1 0:3\n\n2 4:1\n0 2:1 3:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := streamAll(t, path, XC, 6, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Load(path, XC)
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range []int{1, 2, 5, 9} {
		next := Chunks(ds, rows)
		var got []string
		for {
			c, err := next(rows + 1) // more than the chunks hold: capped
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Len() > rows || c.Features() != 6 || c.Labels() != 3 {
				t.Fatalf("chunks of %d: %d points, %d features, %d labels", rows, c.Len(), c.Features(), c.Labels())
			}
			got = append(got, rowsOf(c)...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("chunks of %d: %q, want %q", rows, got, want)
		}
	}
}
