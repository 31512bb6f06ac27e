package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Format names a file format. The zero value, Auto, detects it.
type Format string

const (
	Auto   Format = ""
	XC     Format = "xc"
	LibSVM Format = "libsvm"
)

// ParseFormat checks a format name given by a user.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case Auto, "auto":
		return Auto, nil
	case XC, LibSVM:
		return f, nil
	}
	return "", fmt.Errorf("data: unknown format %q (want xc, libsvm or auto)", s)
}

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// decompress returns r, or a gzip reader over it when its content starts with
// the gzip magic bytes.
func decompress(r io.Reader, name string) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	head, _ := br.Peek(2)
	if !bytes.Equal(head, gzipMagic) {
		return br, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("bad gzip stream: %v", err)}
	}
	return zr, nil
}

// Read parses a dataset from r in the given format (Auto: XC when the first
// line is an "N D L" header, libSVM otherwise). gzip input is detected and
// decompressed.
func Read(r io.Reader, name string, f Format) (*Dataset, error) {
	r, err := decompress(r, name)
	if err != nil {
		return nil, err
	}
	if f == Auto {
		br := bufio.NewReaderSize(r, 1<<16)
		first, _ := br.Peek(1 << 12)
		if nl := bytes.IndexByte(first, '\n'); nl >= 0 {
			first = first[:nl]
		}
		f = LibSVM
		if _, _, _, msg := parseHeader(bytes.TrimSuffix(first, []byte{'\r'})); msg == "" {
			f = XC
		}
		r = br
	}
	switch f {
	case XC:
		return ReadXC(r, name)
	case LibSVM:
		return ReadLibSVM(r, name, LibSVMOptions{})
	}
	return nil, fmt.Errorf("data: %s: unknown format %q", name, f)
}

// Load reads a dataset file; see Read.
func Load(path string, f Format) (*Dataset, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer file.Close()
	return Read(file, path, f)
}

// LoadPair loads a training and a test file and checks that they share their
// feature and label spaces. libSVM files, which carry no dimensions, get the
// larger of the two files' dimensions.
func LoadPair(trainPath, testPath string, f Format) (train, test *Dataset, err error) {
	if train, err = Load(trainPath, f); err != nil {
		return nil, nil, err
	}
	if test, err = Load(testPath, f); err != nil {
		return nil, nil, err
	}
	if f == LibSVM || (f == Auto && !isXC(trainPath)) {
		d := max(train.Features(), test.Features())
		l := max(train.Labels(), test.Labels())
		train.X.Cols, test.X.Cols, train.Y.Cols, test.Y.Cols = d, d, l, l
	}
	return train, test, CheckPair(train, test)
}

func isXC(path string) bool {
	file, err := os.Open(path)
	if err != nil {
		return false
	}
	defer file.Close()
	r, err := decompress(file, path)
	if err != nil {
		return false
	}
	line, _ := bufio.NewReader(r).ReadSlice('\n')
	_, _, _, msg := parseHeader(bytes.TrimSpace(line))
	return msg == ""
}

// LoadDir loads the train/test pair of a dataset folder: train.txt and
// test.txt (each possibly gzipped, or named .txt.gz), or the four MNIST idx
// files.
func LoadDir(dir string) (train, test *Dataset, err error) {
	if _, err := findFile(dir, mnistFiles[0]); err == nil {
		return LoadMNIST(dir)
	}
	tr, err := findFile(dir, "train.txt")
	if err != nil {
		return nil, nil, err
	}
	te, err := findFile(dir, "test.txt")
	if err != nil {
		return nil, nil, err
	}
	return LoadPair(tr, te, Auto)
}

// findFile returns dir/name or dir/name.gz, whichever exists.
func findFile(dir, name string) (string, error) {
	for _, n := range []string{name, name + ".gz"} {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("data: %s has neither %s nor %s.gz: %w", dir, name, name, os.ErrNotExist)
}

// errNotMNIST is returned internally when an idx file has the wrong magic.
var errNotMNIST = errors.New("not an idx file")
