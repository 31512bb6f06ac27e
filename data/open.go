package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Format names a file format. The zero value, Auto, detects it.
type Format string

const (
	Auto   Format = ""
	XC     Format = "xc"
	LibSVM Format = "libsvm" // feature ids from 1, the libSVM convention
	// LibSVM0 is libSVM with feature ids from 0 (as XC files number
	// them); Auto never takes a file for it.
	LibSVM0 Format = "libsvm0"
)

// isLibSVM reports a libSVM format: no header, dimensions from the ids.
func (f Format) isLibSVM() bool { return f == LibSVM || f == LibSVM0 }

// ParseFormat checks a format name given by a user.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case Auto, "auto":
		return Auto, nil
	case XC, LibSVM, LibSVM0:
		return f, nil
	}
	return "", fmt.Errorf("data: unknown format %q (want xc, libsvm, libsvm0 or auto)", s)
}

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// decompress returns r, or a gzip reader over it when its content starts with
// the gzip magic bytes, and whether it was gzip.
func decompress(r io.Reader, name string) (io.Reader, bool, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	head, _ := br.Peek(2)
	if !bytes.Equal(head, gzipMagic) {
		return br, false, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, true, &ParseError{File: name, Msg: fmt.Sprintf("bad gzip stream: %v", err)}
	}
	return zr, true, nil
}

// Read parses a dataset from r in the given format (Auto: XC when the first
// line is meant as an "N D L" header — no ':' and at least two tokens —
// libSVM otherwise). gzip input is detected and decompressed.
func Read(r io.Reader, name string, f Format) (*Dataset, error) {
	ds, _, err := read(context.Background(), r, name, f, sizes{})
	return ds, err
}

// read is Read under a context, returning the format it read.
func read(ctx context.Context, r io.Reader, name string, f Format, hint sizes) (*Dataset, Format, error) {
	r, _, err := decompress(r, name)
	if err != nil {
		return nil, "", err
	}
	if f == Auto {
		// The same buffer size as the line reader's, which then reads
		// through this reader rather than stacking another buffer on it.
		br := bufio.NewReaderSize(r, 1<<20)
		first, _ := br.Peek(1 << 12)
		f = LibSVM
		// A header is a few dozen bytes: a first line longer than the peek
		// is data.
		if nl := bytes.IndexByte(first, '\n'); nl >= 0 && headerLike(first[:nl]) || nl < 0 && len(first) < 1<<12 && headerLike(first) {
			f = XC
		}
		r = br
	}
	var ds *Dataset
	switch f {
	case XC:
		ds, err = readXC(ctx, r, name, hint)
	case LibSVM, LibSVM0:
		ds, err = readLibSVM(ctx, r, name, LibSVMOptions{ZeroBasedFeatures: f == LibSVM0}, hint)
	default:
		return nil, "", fmt.Errorf("data: %s: unknown format %q", name, f)
	}
	return ds, f, err
}

// Load reads a dataset file; see Read. It is Loader{Format: f}.Load.
func Load(path string, f Format) (*Dataset, error) { return Loader{Format: f}.Load(path) }

// LoadPair is Loader{Format: f}.LoadPair.
func LoadPair(trainPath, testPath string, f Format) (train, test *Dataset, err error) {
	return Loader{Format: f}.LoadPair(trainPath, testPath)
}

// Loader loads dataset files. The zero value reads every file in full with
// format detection and no cache.
//
// Each input is opened once. A regular file is read twice through that one
// descriptor (a counting pass sizes the buffers, then the parse); anything
// else — a FIFO, /dev/stdin, a process substitution — is read once, as a
// stream, and never cached.
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
	// Context, when set, stops a load when it ends (an interrupt, say):
	// the load returns an error wrapping Context.Err() after at most a few
	// MB more of reading, a read blocked on a pipe included. nil means
	// context.Background().
	Context context.Context
	// Opened, when set, is called with each file a load reads — a dataset
	// file, and the cache it loads from or writes (cache true) — so that a
	// caller can keep its outputs off them.
	Opened func(path string, cache bool)
}

func (l Loader) opened(path string, cache bool) {
	if l.Opened != nil {
		l.Opened(path, cache)
	}
}

func (l Loader) context() context.Context {
	if l.Context == nil {
		return context.Background()
	}
	return l.Context
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
	ds, _, err := l.load(path)
	return ds, err
}

// openInput opens path for one pass under ctx. The returned stop must be
// called when done: until then the end of ctx closes the file, so that a
// read blocked on a pipe or a terminal returns.
func openInput(ctx context.Context, path string) (*os.File, os.FileInfo, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, stopped(path, 0, err)
	}
	file, err := openPath(path)
	if err != nil {
		return nil, nil, nil, err
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, nil, fmt.Errorf("data: %w", err)
	}
	if fi.IsDir() {
		file.Close()
		return nil, nil, nil, fmt.Errorf("data: %s is a folder, not a dataset file (a dataset folder, holding train.txt and test.txt, is loaded as a whole)", path)
	}
	unclose := context.AfterFunc(ctx, func() { file.Close() })
	return file, fi, func() { unclose(); file.Close() }, nil
}

// OpenFile opens path, a file or Stdin, for one pass under ctx: until it
// is closed, the end of ctx closes it, so that a read blocked on a pipe or
// a terminal returns.
func OpenFile(ctx context.Context, path string) (io.ReadCloser, error) {
	file, _, done, err := openInput(ctx, path)
	if err != nil {
		return nil, err
	}
	return closer{file, done}, nil
}

type closer struct {
	io.Reader
	done func()
}

func (c closer) Close() error { c.done(); return nil }

// Stdin is the path that names the standard input: it is read once, as a
// stream (never cached), and named "standard input" in messages.
const Stdin = "-"

// stdinName names the standard input in messages.
const stdinName = "standard input"

// openPath opens path, or the standard input for Stdin.
func openPath(path string) (*os.File, error) {
	if path == Stdin {
		f, err := stdin()
		if err != nil {
			return nil, fmt.Errorf("data: the standard input: %w", err)
		}
		return f, nil
	}
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("data: %s does not exist (give a dataset file, a dataset folder or bundled:NAME)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	return file, nil
}

// load reads one dataset file and returns the format it was read in.
func (l Loader) load(path string) (*Dataset, Format, error) {
	ctx := l.context()
	file, fi, done, err := openInput(ctx, path)
	if err != nil {
		return nil, "", err
	}
	defer done()
	if path == Stdin {
		ds, f, err := read(ctx, file, stdinName, l.Format, sizes{})
		return ds, f, stoppedOr(ctx, stdinName, err)
	}
	l.opened(path, false)
	if !fi.Mode().IsRegular() {
		// A stream: one pass, no counting, no cache (there is no file whose
		// identity a cache could record).
		ds, f, err := read(ctx, file, path, l.Format, sizes{})
		return ds, f, stoppedOr(ctx, path, err)
	}
	var cache string
	if l.Cache != CacheOff && fi.Size() >= CacheMinBytes && littleEndian {
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
	src := sourceOf(fi)
	if cache != "" {
		defer l.opened(cache, true)
	}
	if cache != "" && l.Cache == CacheAuto {
		ds, f, err := openCache(cache, path, src)
		if cerr := ctx.Err(); cerr != nil {
			return nil, "", stopped(path, 0, cerr) // checking a large cache takes a moment
		}
		if err == nil {
			l.logf("data: %s: loaded from the cache %s", path, cache)
			return ds, f, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			l.logf("data: %s: cache %s unusable (%v): parsing the source again", path, cache, err)
		}
	}
	ds, f, err := readSized(ctx, file, path, l.Format)
	if err != nil {
		return nil, "", stoppedOr(ctx, path, err)
	}
	if cache == "" {
		return ds, f, nil
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
		l.logf("data: %s: no cache: %v", path, err)
		return ds, f, nil
	}
	if err := writeCache(ctx, cache, ds, f, src); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, "", stopped(path, 0, cerr)
		}
		l.logf("data: %s: could not write the cache %s: %v", path, cache, err)
		return ds, f, nil
	}
	l.logf("data: %s: wrote the cache %s", path, cache)
	return ds, f, nil
}

// stoppedOr returns err, or the context's error when the context ended: a
// read cut short by the file's closing is a stop, not bad input.
func stoppedOr(ctx context.Context, path string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return stopped(path, 0, cerr)
	}
	return err
}

func (l Loader) logf(format string, args ...any) {
	if l.Log != nil {
		fmt.Fprintf(l.Log, format+"\n", args...)
	}
}

// readSized parses a regular file, first counting its lines, ':' and ','
// bytes when it is uncompressed: upper bounds on its points, feature entries
// and label entries, so the CSR buffers are allocated once.
func readSized(ctx context.Context, file *os.File, name string, f Format) (*Dataset, Format, error) {
	hint, err := countSizes(ctx, file)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, "", stopped(name, 0, cerr)
		}
		return nil, "", &ParseError{File: name, Msg: fmt.Sprintf("read error: %v", err)}
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, "", fmt.Errorf("data: %w", err)
	}
	return read(ctx, file, name, f, hint)
}

// countSizes scans an uncompressed file for sizes (zero for gzip), checking
// ctx at every buffer. It gives up (zero sizes, no error) at a line longer
// than maxLineBytes, so that a file with no line ending fails as soon as
// the parse reaches the bound, not after a pass over all of it.
func countSizes(ctx context.Context, r io.Reader) (sizes, error) {
	var s sizes
	buf := make([]byte, 1<<20)
	first := true
	run := 0 // bytes since the last newline
	for {
		if err := ctx.Err(); err != nil {
			return sizes{}, err
		}
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
		if nl := bytes.LastIndexByte(b, '\n'); nl >= 0 {
			run = len(b) - 1 - nl
		} else if run += len(b); run > maxLineBytes {
			return sizes{}, nil // the parse reports the line
		}
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
// feature and label spaces. A libSVM file, which carries no dimensions, gets
// the larger of the two files' dimensions; an XC file keeps its header's.
func (l Loader) LoadPair(trainPath, testPath string) (train, test *Dataset, err error) {
	if trainPath == Stdin && testPath == Stdin {
		return nil, nil, errors.New("data: the training and the test set are both the standard input (-): give at most one of them so")
	}
	train, ftrain, err := l.load(trainPath)
	if err != nil {
		return nil, nil, err
	}
	test, ftest, err := l.load(testPath)
	if err != nil {
		return nil, nil, err
	}
	// Nothing can be trained on, or scored against, an empty set, nor a
	// set without labels.
	for _, s := range []struct {
		path string
		d    *Dataset
	}{{trainPath, train}, {testPath, test}} {
		if s.d.Len() == 0 {
			return nil, nil, fmt.Errorf("data: %s: no points", s.path)
		}
		if err := s.d.CheckLabelled(0); err != nil {
			return nil, nil, err
		}
	}
	// Each file's format is the one it was read in, not a second look at
	// its path: a stream can be read only once.
	d := max(train.Features(), test.Features())
	lb := max(train.Labels(), test.Labels())
	for _, s := range []struct {
		d *Dataset
		f Format
	}{{train, ftrain}, {test, ftest}} {
		if s.f.isLibSVM() {
			s.d.X.Cols, s.d.Y.Cols = d, lb
		}
	}
	return train, test, CheckPair(train, test)
}

// LoadDir loads the train/test pair of a dataset folder: train.txt and
// test.txt (each possibly gzipped, or named .txt.gz), or the four MNIST idx
// files.
func LoadDir(dir string) (train, test *Dataset, err error) { return Loader{}.LoadDir(dir) }

// LoadDir is the package-level LoadDir with l's cache settings, context
// and format (Auto detects each file's).
func (l Loader) LoadDir(dir string) (train, test *Dataset, err error) {
	if err := checkFolder(dir); err != nil {
		return nil, nil, err
	}
	if _, err := findFile(dir, mnistFiles[0]); err == nil {
		return l.loadMNIST(dir)
	}
	tr, err := findFile(dir, "train.txt")
	if err != nil {
		return nil, nil, err
	}
	te, err := findFile(dir, "test.txt")
	if err != nil {
		return nil, nil, err
	}
	return l.LoadPair(tr, te)
}

// checkFolder refuses a dataset folder that does not exist, or is not a
// folder, saying so: not as a missing train.txt.
func checkFolder(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("data: dataset folder %s does not exist (a dataset folder holds train.txt and test.txt, or MNIST's idx files)", dir)
	case err != nil:
		return fmt.Errorf("data: dataset folder %w", err)
	case !fi.IsDir():
		return fmt.Errorf("data: %s is a file, not a dataset folder (one holding train.txt and test.txt): give a file as --train or --test", dir)
	}
	return nil
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

// TestFile returns the test set's file of dataset folder dir
// (test.txt or test.txt.gz), for readers that stream it; an MNIST folder has
// none (load it with LoadDir).
func TestFile(dir string) (string, error) {
	if err := checkFolder(dir); err != nil {
		return "", err
	}
	if _, err := findFile(dir, mnistFiles[0]); err == nil {
		return "", fmt.Errorf("data: %s is an MNIST folder: its idx files are loaded whole, not streamed", dir)
	}
	return findFile(dir, "test.txt")
}

// LoadAny reads what path names: a bundled set ("bundled:NAME") or a
// dataset folder, both splits of each, or one file.
func (l Loader) LoadAny(path string) ([]*Dataset, error) {
	if name, ok := strings.CutPrefix(path, "bundled:"); ok {
		tr, te, err := Bundled(name)
		return []*Dataset{tr, te}, err
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		tr, te, err := l.LoadDir(path)
		return []*Dataset{tr, te}, err
	}
	d, err := l.Load(path)
	return []*Dataset{d}, err
}
