package data

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// zeros is an endless stream of NUL bytes, like /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// wantParseError checks that err is a ParseError naming file and line with
// a message holding msg.
func wantParseError(t *testing.T, what string, err error, file string, line int, msg string) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("%s: error %v, want a ParseError", what, err)
	}
	if pe.File != file || pe.Line != line || !strings.Contains(pe.Msg, msg) {
		t.Fatalf("%s: got %q, want %s:%d and %q", what, err, file, line, msg)
	}
}

// Input with no line ending fails at the line bound, whatever the format
// and the source, rather than growing a buffer without end.
func TestOverlongLines(t *testing.T) {
	want := fmt.Sprintf("line longer than %d bytes", maxLineBytes)
	_, err := Read(zeros{}, "zeros", Auto)
	wantParseError(t, "zeros, auto", err, "zeros", 1, want)
	_, err = Read(io.MultiReader(strings.NewReader("1 5 3\n0 1:1 "), zeros{}), "xc", XC)
	wantParseError(t, "XC second line", err, "xc", 2, want)
	_, err = Read(io.MultiReader(strings.NewReader("0 1:1\n1 2:1\n0 "), zeros{}), "svm", LibSVM)
	wantParseError(t, "libSVM third line", err, "svm", 3, want)

	// A gzip stream that inflates to an endless line (a gzip bomb, in
	// short).
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	io.CopyN(zw, zeros{}, maxLineBytes+1<<20)
	zw.Close()
	_, err = Read(&gz, "bomb.gz", Auto)
	wantParseError(t, "gzip", err, "bomb.gz", 1, want)

	// A regular file of one long line (sparse: no disk used), through the
	// counting pass and the parse.
	path := filepath.Join(t.TempDir(), "long.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxLineBytes + 1<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Load(path, Auto)
	wantParseError(t, "regular file", err, path, 1, want)

	// A device that never ends a line.
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err = Load("/dev/zero", Auto)
		wantParseError(t, "/dev/zero", err, "/dev/zero", 1, want)
	}
}

// The bound itself: a line of exactly max bytes passes, one more fails,
// whether it ends with a newline, a CRLF or the end of the input, and
// whether or not it spans the reader's buffer.
func TestLineReaderBound(t *testing.T) {
	for _, c := range []struct {
		in      string
		max     int
		lines   []string
		errLine int
	}{
		{"abcd\nef\n", 4, []string{"abcd", "ef"}, 0},
		{"abcd\nefghi\n", 4, []string{"abcd"}, 2},
		{"abcd", 4, []string{"abcd"}, 0},
		{"abcde", 4, nil, 1},
		{"abc\r\n", 4, []string{"abc"}, 0},
		{"abcd\r\n", 4, nil, 1}, // the CR counts: it is not a line ending alone
		{strings.Repeat("x", 40) + "\n", 40, []string{strings.Repeat("x", 40)}, 0},
		{strings.Repeat("x", 41) + "\n", 40, nil, 1},
		{"\n\n", 0, []string{"", ""}, 0},
	} {
		tr := newLineReaderSize(context.Background(), strings.NewReader(c.in), "f", 16, c.max)
		var got []string
		var err error
		for {
			var line []byte
			var ok bool
			if line, ok, err = tr.next(); err != nil || !ok {
				break
			}
			got = append(got, string(line))
		}
		if strings.Join(got, "|") != strings.Join(c.lines, "|") {
			t.Errorf("%q, max %d: lines %q, want %q", c.in, c.max, got, c.lines)
		}
		if c.errLine == 0 && err != nil {
			t.Errorf("%q, max %d: %v", c.in, c.max, err)
		}
		if c.errLine > 0 {
			wantParseError(t, fmt.Sprintf("%q, max %d", c.in, c.max), err, "f", c.errLine, fmt.Sprintf("line longer than %d bytes", c.max))
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A count in a header is a claim: a few bytes announcing 5·10^7 points, or
// 60000 images of 28×28 pixels, allocate for what they hold, not for what
// they announce, and fail with a message naming the claim.
func TestHeaderCountsDoNotSizeAllocations(t *testing.T) {
	const limit = 4 << 20 // the readers' own buffers, a couple of MB
	var err error
	n := allocated(func() { _, err = Read(strings.NewReader("50000000 5 3\n0 1:1\n"), "claims.txt", Auto) })
	wantParseError(t, "XC", err, "claims.txt", 0, "announces 50000000 points but the file has 1")
	if n > limit {
		t.Errorf("XC header of 5·10^7 points over 20 bytes: %d bytes allocated", n)
	}

	// idx headers whose dimensions the file cannot hold are an error before
	// anything is sized from them.
	images := idx(0x803, []uint32{60000, 28, 28}, make([]byte, 24))
	labels := idx(0x801, []uint32{60000}, make([]byte, 24))
	n = allocated(func() {
		_, err = ReadMNIST(bytes.NewReader(images), "img", bytes.NewReader(labels), "lab", "m")
	})
	wantParseError(t, "idx images", err, "img", 0, "announces 60000 images of 28×28 pixels (47040000 bytes) but the file holds 24 bytes")
	if n > limit {
		t.Errorf("idx header of 60000 images over 40 bytes: %d bytes allocated", n)
	}
	images = idx(0x803, []uint32{2, 1, 1}, []byte{1, 2})
	_, err = ReadMNIST(bytes.NewReader(images), "img", bytes.NewReader(labels), "lab", "m")
	wantParseError(t, "idx label count", err, "lab", 0, "60000 labels for the 2 images of img")
	labels = idx(0x801, []uint32{2}, []byte{1})
	_, err = ReadMNIST(bytes.NewReader(images), "img", bytes.NewReader(labels), "lab", "m")
	wantParseError(t, "idx labels", err, "lab", 0, "announces 2 labels but the file holds 1 bytes")

	// Compressed, the size is unknown: the buffers grow with what is read.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(idx(0x803, []uint32{1, 4096, 4096}, make([]byte, 10)))
	zw.Close()
	labels = idx(0x801, []uint32{1}, []byte{3})
	n = allocated(func() {
		_, err = ReadMNIST(&gz, "img.gz", bytes.NewReader(labels), "lab", "m")
	})
	wantParseError(t, "gzip idx", err, "img.gz", 0, "truncated at image 0 of 1")
	if n > 2*limit {
		t.Errorf("gzip idx header of a 4096×4096 image over 10 bytes: %d bytes allocated", n)
	}

	// The statistics do not allocate a slot per feature or label the
	// header announces.
	d, err := Read(strings.NewReader("1 2147483647 2147483647\n0 1:1\n"), "wide", XC)
	if err != nil {
		t.Fatal(err)
	}
	var s Stats
	if n = allocated(func() { s = Describe(d, 3) }); n > limit {
		t.Errorf("Describe of a 1-point set of 2^31-1 features and labels: %d bytes allocated", n)
	}
	if s.UsedFeatures != 1 || s.UsedLabels != 1 || len(s.Head) != 1 || s.Head[0] != (LabelCount{0, 1}) {
		t.Errorf("Describe: %+v", s)
	}
}

// Both ways of counting columns agree.
func TestColumnCounts(t *testing.T) {
	d, err := Read(strings.NewReader("3 2000000 5000000\n0,4999999 1:1 1999999:2\n4999999 1:1\n 3:1\n"), "c", XC)
	if err != nil {
		t.Fatal(err)
	}
	sparseWay := columnCounts(&d.Y) // more columns than the dense bound
	want := []LabelCount{{0, 1}, {4999999, 2}}
	if fmt.Sprint(sparseWay) != fmt.Sprint(want) {
		t.Fatalf("labels: %v, want %v", sparseWay, want)
	}
	denseWay := columnCounts(&d.X)
	if want := []LabelCount{{1, 2}, {3, 1}, {1999999, 1}}; fmt.Sprint(denseWay) != fmt.Sprint(want) {
		t.Fatalf("features: %v, want %v", denseWay, want)
	}
}

// idx builds an idx file.
func idx(magic uint32, dims []uint32, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, magic)
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, data...)
}

// Under format detection, a first line meant as an XC header and malformed
// is reported as a bad header at line 1, not as a libSVM point; libSVM files
// are still recognised.
func TestAutoHeader(t *testing.T) {
	for _, c := range []struct{ in, msg string }{
		{"4880 1836\n0 1:1\n", "XC header: want `points features labels` (three integers), got \"4880 1836\" (2 tokens)"},
		{"4880 1836 159 7\n", "(4 tokens)"},
		{"4880 1836 x\n", `labels "x" is not a non-negative integer`},
		{"4880 -3 159\n", `features "-3" is negative`},
		{"4880 1836 0\n", "0 labels: a dataset has at least one"},
		{"4880 0 159\n", "0 features"},
		{"4880 1836 99999999999999999999\n", `labels "99999999999999999999" is too large`},
		{"1 4294967296 3\n", "4294967296 features is more than ids can address"},
		{"3000000000 5 3\n", "3000000000 points is more than ids can address"},
		{"1,2 3\n", "XC header: want `points features labels`"},
	} {
		_, err := Read(strings.NewReader(c.in), "f.txt", Auto)
		wantParseError(t, c.in, err, "f.txt", 1, c.msg)
		path := filepath.Join(t.TempDir(), "f.txt")
		os.WriteFile(path, []byte(c.in), 0o644)
		_, err = Load(path, Auto)
		wantParseError(t, "Load "+c.in, err, path, 1, c.msg)
	}
	for _, c := range []struct {
		in      string
		f       Format
		rows, d int
	}{
		{"2 5 3\n0 1:1\n 4:1\n", XC, 2, 5},
		{"1,2 3:1\n", LibSVM, 1, 3},
		{"3\n1 2:1\n", LibSVM, 2, 2},     // labels without features first
		{"\n1 2:1\n", LibSVM, 2, 2},      // a blank first line is an empty point
		{"  1:1\n0 2:1\n", LibSVM, 2, 2}, // a point without labels
		{"4880 1836 159 # c\n1:1\n", "", 0, 0},
	} {
		d, f, err := read(context.Background(), strings.NewReader(c.in), "f", Auto, sizes{})
		if c.f == "" {
			if err == nil {
				t.Errorf("%q: accepted", c.in)
			}
			continue
		}
		if err != nil || f != c.f || d.Len() != c.rows || d.Features() != c.d {
			t.Errorf("%q: format %q, %v, want %q with %d rows of %d features", c.in, f, err, c.f, c.rows, c.d)
		}
	}
}

// The formats LoadPair reconciles are those the files were read in: a
// libSVM test set takes the XC training set's dimensions, an XC set keeps
// its own.
func TestLoadPairDimensions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	xc := write("xc.txt", "1 10 6\n5 9:1\n")
	svm := write("svm.txt", "0 1:1\n")
	svm2 := write("svm2.txt", "3 7:1\n")
	train, test, err := LoadPair(xc, svm, Auto)
	if err != nil || test.Features() != 10 || test.Labels() != 6 {
		t.Fatalf("XC with libSVM: %v, test %d×%d", err, test.Features(), test.Labels())
	}
	if train, test, err = LoadPair(svm, svm2, Auto); err != nil || train.Features() != 7 || test.Features() != 7 || train.Labels() != 4 {
		t.Fatalf("libSVM pair: %v", err)
	}
	small := write("small.txt", "1 5 6\n5 4:1\n")
	if _, _, err := LoadPair(small, xc, Auto); err == nil || !strings.Contains(err.Error(), "must share") {
		t.Fatalf("XC pair of different dimensions: %v", err)
	}
}

// stopAfter is a context whose Err reports cancellation from its n+1th
// call on: a load stopped at a chosen check, with no timing involved.
type stopAfter struct {
	context.Context
	n     atomic.Int64
	calls atomic.Int64
}

func newStopAfter(n int64) *stopAfter {
	c := &stopAfter{Context: context.Background()}
	c.n.Store(n)
	return c
}

func (c *stopAfter) Err() error {
	c.calls.Add(1)
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// A load stops at any of its checks with an error wrapping the context's:
// before it starts, in the counting pass, in the parse, while writing the
// cache, and between the files of a pair.
func TestLoadCancelled(t *testing.T) {
	dir := t.TempDir()
	src, want := bigXC(t, dir)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, mode := range []CacheMode{CacheOff, CacheAuto} {
		l := Loader{Cache: mode, CacheDir: filepath.Join(dir, "cache"), Context: canceled}
		if _, err := l.Load(src); !errors.Is(err, context.Canceled) {
			t.Fatalf("cache %q, cancelled before: %v", mode, err)
		}
		if _, _, err := l.LoadPair(src, src); !errors.Is(err, context.Canceled) {
			t.Fatalf("cache %q, pair cancelled before: %v", mode, err)
		}
	}
	// Count the checks of a whole load with its cache written, then stop
	// at a sample of them.
	counter := newStopAfter(1 << 40)
	l := Loader{Cache: CacheRefresh, CacheDir: filepath.Join(dir, "cache"), Context: counter}
	ds, err := l.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	sameDataset(t, "counted load", ds, want)
	total := counter.calls.Load()
	if total < 5 {
		t.Fatalf("a load of %d lines checked its context %d times", want.Len(), total)
	}
	for _, n := range []int64{1, total / 2, total - 1} {
		l.Context = newStopAfter(n)
		if _, err := l.Load(src); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), src) {
			t.Fatalf("stopped at check %d of %d: %v", n, total, err)
		}
	}
	// The cache written by the counted load is whole; a stopped writer
	// left nothing beside it.
	entries, _ := os.ReadDir(filepath.Join(dir, "cache"))
	if len(entries) != 1 {
		t.Fatalf("cache folder holds %v, want one cache", entries)
	}
	// Between the files of a pair: the training file loads, the test file
	// does not.
	counter = newStopAfter(1 << 40)
	Loader{Context: counter}.Load(src)
	one := counter.calls.Load()
	if _, _, err := (Loader{Context: newStopAfter(one)}).LoadPair(src, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("pair stopped at its second file: %v", err)
	}
}

// Reading from an io.Reader, a cancelled load still names the file.
func TestReadCancelled(t *testing.T) {
	ctx := newStopAfter(1)
	in := strings.Repeat("0 1:1\n", 3*checkLines)
	_, _, err := read(ctx, strings.NewReader(in), "lines.txt", Auto, sizes{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "lines.txt: loading stopped after line 4096") {
		t.Fatalf("%v", err)
	}
}

// MNIST folders stop too.
func TestLoadMNISTCancelled(t *testing.T) {
	dir := t.TempDir()
	const n = 5000
	pixels := make([]byte, 4*n)
	labs := make([]byte, n)
	for i := range labs {
		pixels[4*i] = byte(i)
		labs[i] = byte(i % 10)
	}
	for i, name := range mnistFiles {
		b := idx(0x803, []uint32{n, 2, 2}, pixels)
		if i%2 == 1 {
			b = idx(0x801, []uint32{n}, labs)
		}
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	train, _, err := LoadDir(dir)
	if err != nil || train.Len() != n || train.Features() != 4 {
		t.Fatalf("MNIST-like folder: %v", err)
	}
	// Stopped at opening the training images, at the 4096th of them, at
	// the first test image.
	for _, stop := range []int64{0, 3, 6} {
		if _, _, err := (Loader{Context: newStopAfter(stop)}).LoadDir(dir); !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped at check %d: %v", stop, err)
		}
	}
}
