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
func Read(r io.Reader, name string, f Format) (*Dataset, error) { return read(r, name, f, sizes{}) }

func read(r io.Reader, name string, f Format, hint sizes) (*Dataset, error) {
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
		return readXC(r, name, hint)
	case LibSVM:
		return readLibSVM(r, name, LibSVMOptions{}, hint)
	}
	return nil, fmt.Errorf("data: %s: unknown format %q", name, f)
}

// Load reads a dataset file; see Read. It is Loader{Format: f}.Load.
func Load(path string, f Format) (*Dataset, error) { return Loader{Format: f}.Load(path) }

// LoadPair is Loader{Format: f}.LoadPair.
func LoadPair(trainPath, testPath string, f Format) (train, test *Dataset, err error) {
	return Loader{Format: f}.LoadPair(trainPath, testPath)
}

// Loader loads dataset files. The zero value reads every file in full with
// format detection and no cache.
type Loader struct {
	Format Format
	// Cache keeps a binary copy of each parsed text file of at least
	// CacheMinBytes in CacheDir and loads that instead while the source is
	// unchanged (see cache.go for the format and its checks).
	Cache    CacheMode
	CacheDir string // DefaultCacheDir() when empty
	// Log, when set, receives a line per cache decision (hit, written,
	// rebuilt and why).
	Log io.Writer
}

// CacheMode says what a Loader does with binary caches.
type CacheMode string

const (
	CacheOff     CacheMode = ""        // parse every time
	CacheAuto    CacheMode = "auto"    // use a valid cache, else parse and write one
	CacheRefresh CacheMode = "refresh" // parse, and write the cache anew
)

// ParseCacheMode checks a cache mode given by a user.
func ParseCacheMode(s string) (CacheMode, error) {
	switch m := CacheMode(strings.ToLower(s)); m {
	case "off", CacheOff:
		return CacheOff, nil
	case CacheAuto, CacheRefresh:
		return m, nil
	}
	return "", fmt.Errorf("data: unknown cache mode %q (want auto, off or refresh)", s)
}

// CacheMinBytes is the size below which a text file is parsed every time:
// small sets load in milliseconds anyway.
const CacheMinBytes = 8 << 20

// Load reads one dataset file.
func (l Loader) Load(path string) (*Dataset, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	var cache string
	if l.Cache != CacheOff && fi.Mode().IsRegular() && fi.Size() >= CacheMinBytes && littleEndian {
		dir := l.CacheDir
		if dir == "" {
			if dir, err = DefaultCacheDir(); err != nil {
				l.logf("data: %s: no cache: %v", path, err)
			}
		}
		if dir != "" {
			cache, _ = cachePath(dir, path, l.Format)
		}
	}
	if cache != "" && l.Cache == CacheAuto {
		ds, err := openCache(cache, path, sourceOf(fi))
		if err == nil {
			l.logf("data: %s: loaded from the cache %s", path, cache)
			return ds, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			l.logf("data: %s: cache %s unusable (%v): parsing the source again", path, cache, err)
		}
	}
	ds, err := readSized(file, fi, path, l.Format)
	if err != nil || cache == "" {
		return ds, err
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
		l.logf("data: %s: no cache: %v", path, err)
		return ds, nil
	}
	if err := writeCache(cache, ds, sourceOf(fi)); err != nil {
		l.logf("data: %s: could not write the cache %s: %v", path, cache, err)
		return ds, nil
	}
	l.logf("data: %s: wrote the cache %s", path, cache)
	return ds, nil
}

func (l Loader) logf(format string, args ...any) {
	if l.Log != nil {
		fmt.Fprintf(l.Log, format+"\n", args...)
	}
}

// readSized parses an open file, first counting its lines, ':' and ','
// bytes when it is an uncompressed regular file: upper bounds on its points,
// feature entries and label entries, so the CSR buffers are allocated once.
func readSized(file *os.File, fi os.FileInfo, name string, f Format) (*Dataset, error) {
	var hint sizes
	if fi.Mode().IsRegular() {
		var err error
		if hint, err = countSizes(file); err != nil {
			return nil, &ParseError{File: name, Msg: fmt.Sprintf("read error: %v", err)}
		}
		if _, err := file.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
	}
	return read(file, name, f, hint)
}

// countSizes scans an uncompressed file for sizes (zero for gzip).
func countSizes(r io.Reader) (sizes, error) {
	var s sizes
	buf := make([]byte, 1<<20)
	first := true
	for {
		n, err := r.Read(buf)
		b := buf[:n]
		if first && n >= 2 {
			if bytes.Equal(b[:2], gzipMagic) {
				return sizes{}, nil
			}
			first = false
		}
		s.lines += bytes.Count(b, []byte{'\n'})
		s.features += bytes.Count(b, []byte{':'})
		s.labels += bytes.Count(b, []byte{','})
		if err == io.EOF {
			break
		}
		if err != nil {
			return sizes{}, err
		}
	}
	// A line's labels number its commas plus one; a last line may lack its
	// newline.
	s.lines++
	s.labels += s.lines
	return s, nil
}

// LoadPair loads a training and a test file and checks that they share their
// feature and label spaces. libSVM files, which carry no dimensions, get the
// larger of the two files' dimensions.
func (l Loader) LoadPair(trainPath, testPath string) (train, test *Dataset, err error) {
	if train, err = l.Load(trainPath); err != nil {
		return nil, nil, err
	}
	if test, err = l.Load(testPath); err != nil {
		return nil, nil, err
	}
	// Nothing can be trained on, or scored against, an empty set.
	for _, s := range []struct {
		path string
		d    *Dataset
	}{{trainPath, train}, {testPath, test}} {
		if s.d.Len() == 0 {
			return nil, nil, fmt.Errorf("data: %s: no points", s.path)
		}
	}
	if l.Format == LibSVM || (l.Format == Auto && !isXC(trainPath)) {
		d := max(train.Features(), test.Features())
		lb := max(train.Labels(), test.Labels())
		train.X.Cols, test.X.Cols, train.Y.Cols, test.Y.Cols = d, d, lb, lb
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
func LoadDir(dir string) (train, test *Dataset, err error) { return Loader{}.LoadDir(dir) }

// LoadDir is the package-level LoadDir with l's cache settings.
func (l Loader) LoadDir(dir string) (train, test *Dataset, err error) {
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
	l.Format = Auto
	return l.LoadPair(tr, te)
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
