package data

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// bigXC writes an XC file of at least CacheMinBytes and returns its path and
// the dataset parsed without a cache. The file's bytes and the dataset are
// made once for all tests.
func bigXC(t *testing.T, dir string) (string, *Dataset) {
	t.Helper()
	bigOnce.Do(func() {
		p, err := LookupProfile("amazon-670k")
		if err != nil {
			bigErr = err
			return
		}
		p = p.Scaled(0.02) // 9.8k points of ~76 non-zeros: ~9.5 MB of text
		var train, test bytes.Buffer
		if _, _, err := Generate(p, 3, &train, &test); err != nil {
			bigErr = err
			return
		}
		bigText = train.Bytes()
		bigSet, bigErr = Read(bytes.NewReader(bigText), "train.txt", Auto)
	})
	if bigErr != nil {
		t.Fatal(bigErr)
	}
	if len(bigText) < CacheMinBytes {
		t.Fatalf("generated %d bytes, want at least %d", len(bigText), CacheMinBytes)
	}
	path := filepath.Join(dir, "train.txt")
	if err := os.WriteFile(path, bigText, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, bigSet
}

var (
	bigOnce sync.Once
	bigText []byte
	bigSet  *Dataset
	bigErr  error
)

func sameDataset(t *testing.T, what string, a, b *Dataset) {
	t.Helper()
	eq := func(x, y *[]int64) bool { return bytes.Equal(asBytes(*x), asBytes(*y)) }
	if a.X.Rows != b.X.Rows || a.X.Cols != b.X.Cols || a.Y.Cols != b.Y.Cols || !eq(&a.X.Indptr, &b.X.Indptr) || !eq(&a.Y.Indptr, &b.Y.Indptr) ||
		!bytes.Equal(asBytes(a.X.Indices), asBytes(b.X.Indices)) || !bytes.Equal(asBytes(a.X.Values), asBytes(b.X.Values)) ||
		!bytes.Equal(asBytes(a.Y.Indices), asBytes(b.Y.Indices)) {
		t.Fatalf("%s: datasets differ", what)
	}
}

// The cache round trip, its staleness and corruption checks, and the
// decisions the loader reports.
func TestCache(t *testing.T) {
	if !littleEndian {
		t.Skip("caches are little-endian only")
	}
	dir := t.TempDir()
	src, want := bigXC(t, dir)
	cacheDir := filepath.Join(dir, "cache")
	var log strings.Builder
	l := Loader{Cache: CacheAuto, CacheDir: cacheDir, Log: &log}
	load := func(expect string) *Dataset {
		t.Helper()
		log.Reset()
		ds, err := l.Load(src)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), expect) {
			t.Fatalf("log %q, want %q", log.String(), expect)
		}
		sameDataset(t, expect, ds, want)
		return ds
	}
	load("wrote the cache")
	load("loaded from the cache")
	files, _ := filepath.Glob(filepath.Join(cacheDir, "*.ds"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	cache := files[0]

	// A changed source makes the cache stale.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(src, later, later); err != nil {
		t.Fatal(err)
	}
	load("stale")
	load("loaded from the cache")

	// Corruption anywhere is caught by a checksum and the cache rebuilt.
	for _, at := range []int{20, cacheHeader + 100, -5} {
		b, err := os.ReadFile(cache)
		if err != nil {
			t.Fatal(err)
		}
		if at < 0 {
			at += len(b)
		}
		b[at] ^= 0x10
		if err := os.WriteFile(cache, b, 0o644); err != nil {
			t.Fatal(err)
		}
		load("checksum mismatch")
		load("loaded from the cache")
	}
	// A value that is not finite, with checksums made to match (a file
	// changed on purpose, or by a bug), is refused too: text never yields
	// one.
	b, _ := os.ReadFile(cache)
	c := cacheInfo{rows: int64(want.Len()), xnnz: int64(want.X.NNZ()), ynnz: int64(want.Y.NNZ()), values: true}
	off, _ := c.layout()
	binary.LittleEndian.PutUint32(b[off[2]+4*7:], 0x7fc00000) // the eighth value: a NaN
	binary.LittleEndian.PutUint32(b[hdrDataCRC:], crc32.Checksum(b[cacheHeader:], castagnoli))
	binary.LittleEndian.PutUint32(b[hdrCRC:], crc32.Checksum(b[:hdrCRC], castagnoli))
	os.WriteFile(cache, b, 0o644)
	load("value 7 is NaN")
	load("loaded from the cache")
	// So is a truncated one, and one from another format version.
	b, _ = os.ReadFile(cache)
	os.WriteFile(cache, b[:len(b)-64], 0o644)
	load("bytes, the header implies")
	b, _ = os.ReadFile(cache)
	binary.LittleEndian.PutUint32(b[8:], cacheVersion+1)
	binary.LittleEndian.PutUint32(b[hdrCRC:], crc32.Checksum(b[:hdrCRC], castagnoli))
	os.WriteFile(cache, b, 0o644)
	load("format version")

	// refresh rewrites; off neither reads nor writes.
	l.Cache = CacheRefresh
	load("wrote the cache")
	l.Cache = CacheOff
	os.Remove(cache)
	load("")
	if _, err := os.Stat(cache); err == nil {
		t.Fatal("Cache off wrote a cache")
	}
	// A file below CacheMinBytes is parsed every time.
	small := filepath.Join(dir, "small.txt")
	os.WriteFile(small, []byte("1 3 2\n1 0:1\n"), 0o644)
	l.Cache, log = CacheAuto, strings.Builder{}
	if _, err := l.Load(small); err != nil || log.Len() != 0 {
		t.Fatalf("small file: %v, log %q", err, log.String())
	}
}

// A cache folder that cannot be written costs the cache, not the load.
func TestCacheUnwritable(t *testing.T) {
	dir := t.TempDir()
	src, want := bigXC(t, dir)
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	var log strings.Builder
	ds, err := Loader{Cache: CacheAuto, CacheDir: filepath.Join(blocker, "cache"), Log: &log}.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	sameDataset(t, "unwritable", ds, want)
	if !strings.Contains(log.String(), "no cache") {
		t.Fatalf("log %q", log.String())
	}
}

// Loading sizes the CSR buffers from a counting pass: no slack beyond the
// data (the label bound counts the header line and a final line as rows).
func TestLoadSizesBuffers(t *testing.T) {
	dir := t.TempDir()
	path, _ := bigXC(t, dir)
	ds, err := Load(path, Auto)
	if err != nil {
		t.Fatal(err)
	}
	if c, n := cap(ds.X.Indices), ds.X.NNZ(); c != n {
		t.Fatalf("feature indices: capacity %d for %d entries", c, n)
	}
	if c, n := cap(ds.Y.Indices), ds.Y.NNZ(); c > n+2 {
		t.Fatalf("label indices: capacity %d for %d entries", c, n)
	}
	if c, n := cap(ds.X.Indptr), ds.X.Rows+1; c != n {
		t.Fatalf("row pointers: capacity %d for %d rows", c, n)
	}
}

func TestParseCacheMode(t *testing.T) {
	for in, want := range map[string]CacheMode{"auto": CacheAuto, "off": CacheOff, "": CacheOff, "REFRESH": CacheRefresh} {
		if got, err := ParseCacheMode(in); err != nil || got != want {
			t.Errorf("%q: %q, %v", in, got, err)
		}
	}
	if _, err := ParseCacheMode("sometimes"); err == nil {
		t.Error("bad mode accepted")
	}
}

// The cache reader's contract under arbitrary bytes: no panic, and a dataset
// only when its matrices are valid. The checksums are fixed up first, so
// that the fuzzer reaches the structural checks behind them.
func FuzzCache(f *testing.F) {
	ds := &Dataset{}
	ds.X.Rows, ds.X.Cols, ds.Y.Rows, ds.Y.Cols = 2, 4, 2, 3
	ds.X.Indptr, ds.X.Indices, ds.X.Values = []int64{0, 2, 3}, []int32{0, 3, 1}, []float32{1, 0.5, 2}
	ds.Y.Indptr, ds.Y.Indices = []int64{0, 1, 3}, []int32{2, 0, 1}
	path := filepath.Join(f.TempDir(), "seed.ds")
	if err := writeCache(context.Background(), path, ds, XC, source{}); err != nil {
		f.Fatal(err)
	}
	seed, _ := os.ReadFile(path)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < cacheHeader {
			decodeCache(in)
			return
		}
		mem := append([]byte(nil), in...)
		le := binary.LittleEndian
		le.PutUint32(mem[hdrDataCRC:], crc32.Checksum(mem[cacheHeader:], castagnoli))
		le.PutUint32(mem[hdrCRC:], crc32.Checksum(mem[:hdrCRC], castagnoli))
		c, err := decodeCache(mem)
		if err != nil {
			return
		}
		off, size := c.layout()
		if size != int64(len(mem)) {
			return
		}
		d, err := cacheDataset(mem, c, off, "fuzz")
		if err != nil {
			return
		}
		if err := d.X.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := d.Y.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkLoad reads a synthetic Amazon-670k-like training file (a tenth of
// the full scale, ~48 MB) as text with the counting pass, and from its cache;
// MB/s are of the text file.
func BenchmarkLoad(b *testing.B) {
	p, err := LookupProfile("amazon-670k")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if _, _, err := GenerateDir(dir, p.Scaled(0.1), 1, false); err != nil {
		b.Fatal(err)
	}
	src := filepath.Join(dir, "train.txt")
	fi, err := os.Stat(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []CacheMode{CacheOff, CacheAuto} {
		name := "text"
		if mode == CacheAuto {
			name = "cache"
		}
		b.Run(name, func(b *testing.B) {
			l := Loader{Cache: mode, CacheDir: filepath.Join(dir, "cache")}
			if _, err := l.Load(src); err != nil { // writes the cache
				b.Fatal(err)
			}
			b.SetBytes(fi.Size())
			for b.Loop() {
				if _, err := l.Load(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A source edited in place to the same size, and given its modification
// time back, is not served from the cache: its change time moved.
func TestCacheSeesInPlaceEdit(t *testing.T) {
	if !littleEndian {
		t.Skip("caches are little-endian only")
	}
	dir := t.TempDir()
	src, orig := bigXC(t, dir)
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if sourceOf(fi).ino == 0 {
		t.Skip("no inode or change time on this system")
	}
	var log strings.Builder
	l := Loader{Cache: CacheAuto, CacheDir: filepath.Join(dir, "cache"), Log: &log}
	if _, err := l.Load(src); err != nil || !strings.Contains(log.String(), "wrote the cache") {
		t.Fatalf("%v, log %q", err, log.String())
	}
	// Change one digit of a value: same length, another dataset.
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte(":0.")) + 3
	b[at] = '0' + (b[at]-'0'+1)%10
	f, err := os.OpenFile(src, os.O_WRONLY, 0) // in place: the same inode
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b[at:at+1], int64(at)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(src, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	now, _ := os.Stat(src)
	if now.Size() != fi.Size() || !now.ModTime().Equal(fi.ModTime()) {
		t.Fatal("the edit changed the size or the modification time")
	}
	log.Reset()
	ds, err := l.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "stale: the source file changed (change time)") {
		t.Fatalf("log %q, want a stale cache for its change time", log.String())
	}
	want, err := Load(src, Auto)
	if err != nil {
		t.Fatal(err)
	}
	sameDataset(t, "edited", ds, want)
	if bytes.Equal(asBytes(ds.X.Values), asBytes(orig.X.Values)) {
		t.Fatal("the edit did not change the data")
	}
}

// Two files of the same size and times are two sources.
func TestSourceIdentity(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	when := time.Unix(1700000000, 0)
	for _, p := range []string{a, b} {
		os.WriteFile(p, []byte("1 3 2\n1 0:1\n"), 0o644)
		os.Chtimes(p, when, when)
	}
	fa, _ := os.Stat(a)
	fb, _ := os.Stat(b)
	sa, sb := sourceOf(fa), sourceOf(fb)
	if sa.ino == 0 {
		t.Skip("no inode on this system")
	}
	if sa.size != sb.size || sa.mtime != sb.mtime || sa == sb {
		t.Fatalf("sources %+v and %+v", sa, sb)
	}
	if d := sa.diff(sb); !strings.Contains(d, "inode") || strings.Contains(d, "size") {
		t.Fatalf("diff %q", d)
	}
}

// A cache of format version 1 (no change time, inode or format) is rebuilt.
func TestCacheVersion1Rebuilt(t *testing.T) {
	dir := t.TempDir()
	src, _ := bigXC(t, dir)
	var log strings.Builder
	l := Loader{Cache: CacheAuto, CacheDir: filepath.Join(dir, "cache"), Log: &log}
	l.Load(src)
	files, _ := filepath.Glob(filepath.Join(dir, "cache", "*.ds"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	b, _ := os.ReadFile(files[0])
	le := binary.LittleEndian
	le.PutUint32(b[8:], 1)
	clear(b[72:cacheHeader])
	le.PutUint32(b[72:], crc32.Checksum(b[cacheHeader:], castagnoli))
	le.PutUint32(b[76:], crc32.Checksum(b[:76], castagnoli))
	os.WriteFile(files[0], b, 0o644)
	log.Reset()
	if _, err := l.Load(src); err != nil || !strings.Contains(log.String(), "format version 1, this build reads 2") ||
		!strings.Contains(log.String(), "wrote the cache") {
		t.Fatalf("%v, log %q", err, log.String())
	}
}

// A writer killed midway leaves a temporary file, which the next writer of
// the same cache removes.
func TestCacheRemovesDeadWritersFiles(t *testing.T) {
	dir := t.TempDir()
	src, _ := bigXC(t, dir)
	cacheDir := filepath.Join(dir, "cache")
	cache, err := cachePath(cacheDir, src, Auto)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	os.MkdirAll(cacheDir, 0o755)
	dead := filepath.Join(cacheDir, "."+filepath.Base(cache)+".tmp-"+strconv.Itoa(cmd.Process.Pid)+".1234.tmp")
	if err := os.WriteFile(dead, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	// And those of the earlier writer, which named them NAME.tmpDIGITS:
	// removed once an hour old, kept while they may still be written.
	old := cache + ".tmp123456"
	fresh := cache + ".tmp654321"
	for _, p := range []string{old, fresh} {
		os.WriteFile(p, []byte("x"), 0o644)
	}
	long := time.Now().Add(-2 * time.Hour)
	os.Chtimes(old, long, long)
	if _, err := (Loader{Cache: CacheAuto, CacheDir: cacheDir}).Load(src); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("a recent temporary file of an earlier writer removed: %v", err)
	}
	os.Remove(fresh)
	entries, _ := os.ReadDir(cacheDir)
	if len(entries) != 1 || entries[0].Name() != filepath.Base(cache) {
		t.Fatalf("cache folder holds %v, want only %s", entries, filepath.Base(cache))
	}
}

// Loads that write the same cache at once all succeed, and leave one whole
// cache and nothing else.
func TestCacheConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	src, want := bigXC(t, dir)
	cacheDir := filepath.Join(dir, "cache")
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			ds, err := Loader{Cache: CacheRefresh, CacheDir: cacheDir}.Load(src)
			if err == nil && (ds.Len() != want.Len() || ds.X.NNZ() != want.X.NNZ()) {
				err = errors.New("a concurrent load read another dataset")
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(cacheDir)
	if len(entries) != 1 {
		t.Fatalf("cache folder holds %v, want one cache", entries)
	}
	var log strings.Builder
	ds, err := Loader{Cache: CacheAuto, CacheDir: cacheDir, Log: &log}.Load(src)
	if err != nil || !strings.Contains(log.String(), "loaded from the cache") {
		t.Fatalf("%v, log %q", err, log.String())
	}
	sameDataset(t, "after concurrent writers", ds, want)
}

// A cache records the format its source was read in, for LoadPair.
func TestCacheKeepsFormat(t *testing.T) {
	dir := t.TempDir()
	src, _ := bigXC(t, dir)
	var log strings.Builder
	l := Loader{Cache: CacheAuto, CacheDir: filepath.Join(dir, "cache"), Log: &log}
	for _, want := range []string{"wrote the cache", "loaded from the cache"} {
		log.Reset()
		if _, f, err := l.load(src); err != nil || f != XC || !strings.Contains(log.String(), want) {
			t.Fatalf("format %q, %v, log %q", f, err, log.String())
		}
	}
}
