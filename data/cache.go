package data

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/sparse"
)

// The binary cache of a parsed dataset: a header and the five arrays of its
// two CSR matrices, as they lie in memory (little-endian), each at a 64-byte
// aligned offset, so that a load maps the file and points the matrices into
// it: no parsing and no copy. The header records the format version, the
// source file's identity and CRC-32C checksums of the header and of the
// arrays, which every load verifies before trusting the contents; a load
// also validates the matrices' structure (sparse.CSR.Validate). A cache that
// fails any check is rebuilt from the source, never used.
//
// The source's identity is its size, modification time, change time, inode
// and device. Size and modification time alone miss a file edited in place
// to the same length and then given its old mtime back (touch -r, a restore,
// a copy that keeps times); the change time, which no user call can set back,
// and the inode, which a file replaced by rename does not keep, catch those.
// Where the system has no such fields they are zero (see source_*.go).
//
//	offset  size  field
//	0       8     magic "HETSGDds"
//	8       4     format version (cacheVersion)
//	12      4     flags (bit 0: the feature matrix has values;
//	              bit 1: the source was read as XC, not libSVM)
//	16      8     rows
//	24      8     features (columns of X)
//	32      8     labels (columns of Y)
//	40      8     non-zeros of X
//	48      8     non-zeros of Y
//	56      8     source size in bytes
//	64      8     source modification time, Unix nanoseconds
//	72      8     source change time, Unix nanoseconds
//	80      8     source inode
//	88      8     source device
//	96      4     CRC-32C of the arrays (offset 128 to the end)
//	100     4     CRC-32C of bytes 0–99
//	104     24    zero
//	128…          X.Indptr (int64), X.Indices (int32), X.Values (float32),
//	              Y.Indptr (int64), Y.Indices (int32), each padded to 64 bytes
//
// Version 1 had no change time, inode, device or format flag; its caches are
// rebuilt.
const (
	cacheMagic   = "HETSGDds"
	cacheVersion = 2
	cacheHeader  = 128
	hdrDataCRC   = 96  // offset of the arrays' checksum
	hdrCRC       = 100 // offset of the header's checksum, which covers what precedes it
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cacheInfo is the header of a cache file.
type cacheInfo struct {
	values, xc             bool
	rows, features, labels int64
	xnnz, ynnz             int64
	src                    source
	dataCRC                uint32
}

// source identifies the file a cache was made from.
type source struct {
	size, mtime, ctime int64
	ino, dev           uint64
}

func sourceOf(fi os.FileInfo) source {
	s := source{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	sysSource(&s, fi)
	return s
}

func (c *cacheInfo) encode() []byte {
	h := make([]byte, cacheHeader)
	copy(h, cacheMagic)
	le := binary.LittleEndian
	le.PutUint32(h[8:], cacheVersion)
	var flags uint32
	if c.values {
		flags |= 1
	}
	if c.xc {
		flags |= 2
	}
	le.PutUint32(h[12:], flags)
	for i, v := range []uint64{uint64(c.rows), uint64(c.features), uint64(c.labels), uint64(c.xnnz), uint64(c.ynnz),
		uint64(c.src.size), uint64(c.src.mtime), uint64(c.src.ctime), c.src.ino, c.src.dev} {
		le.PutUint64(h[16+8*i:], v)
	}
	le.PutUint32(h[hdrDataCRC:], c.dataCRC)
	le.PutUint32(h[hdrCRC:], crc32.Checksum(h[:hdrCRC], castagnoli))
	return h
}

// decodeCache parses and checks a header; the error says what is wrong.
func decodeCache(h []byte) (cacheInfo, error) {
	var c cacheInfo
	le := binary.LittleEndian
	// The version comes before the checksum, whose place it decides: a
	// cache of another version is reported as such.
	switch {
	case len(h) < cacheHeader:
		return c, errors.New("shorter than its header")
	case string(h[:8]) != cacheMagic:
		return c, errors.New("not a dataset cache (bad magic)")
	case le.Uint32(h[8:]) != cacheVersion:
		return c, fmt.Errorf("format version %d, this build reads %d", le.Uint32(h[8:]), cacheVersion)
	case le.Uint32(h[hdrCRC:]) != crc32.Checksum(h[:hdrCRC], castagnoli):
		return c, errors.New("header checksum mismatch")
	}
	flags := le.Uint32(h[12:])
	c.values, c.xc = flags&1 != 0, flags&2 != 0
	var v [5]int64
	for i := range v {
		v[i] = int64(le.Uint64(h[16+8*i:]))
		// Rows and non-zeros are bounded by the file's size, checked later;
		// the dimensions by the int32 ids.
		if v[i] < 0 || v[i] > 1<<40 || (i == 1 || i == 2) && v[i] > 1<<31 {
			return c, fmt.Errorf("header field %d out of range (%d)", i, v[i])
		}
	}
	c.rows, c.features, c.labels, c.xnnz, c.ynnz = v[0], v[1], v[2], v[3], v[4]
	c.src = source{size: int64(le.Uint64(h[56:])), mtime: int64(le.Uint64(h[64:])), ctime: int64(le.Uint64(h[72:])),
		ino: le.Uint64(h[80:]), dev: le.Uint64(h[88:])}
	c.dataCRC = le.Uint32(h[hdrDataCRC:])
	return c, nil
}

// layout returns the offsets of the five arrays and the file size.
func (c *cacheInfo) layout() (off [5]int64, size int64) {
	lengths := [5]int64{8 * (c.rows + 1), 4 * c.xnnz, 0, 8 * (c.rows + 1), 4 * c.ynnz}
	if c.values {
		lengths[2] = 4 * c.xnnz
	}
	pos := int64(cacheHeader)
	for i, n := range lengths {
		off[i] = pos
		pos += (n + 63) &^ 63
	}
	return off, pos
}

// littleEndian reports whether this machine stores integers as the cache
// does; elsewhere caching is off.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// asBytes views a slice's memory as bytes (little-endian machines only).
func asBytes[T int32 | int64 | float32](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// cacheChunk is how much of an array is written between checks of the
// context: a cache of a large set is hundreds of MB.
const cacheChunk = 16 << 20

// writeCache writes ds, read in format f from the source src, as a cache to
// path. It goes through a temporary file renamed into place (atomicfile), so
// that a reader never sees half a cache, and a writer killed midway leaves a
// temporary file that the next writer of the same cache removes. Concurrent
// writers each write their own temporary file; the last rename wins, and
// every rename puts a whole cache in place.
func writeCache(ctx context.Context, path string, ds *Dataset, f Format, src source) error {
	if !littleEndian {
		return errors.New("caches are little-endian only")
	}
	c := cacheInfo{values: ds.X.Values != nil, xc: f == XC, rows: int64(ds.X.Rows), features: int64(ds.X.Cols),
		labels: int64(ds.Y.Cols), xnnz: int64(ds.X.NNZ()), ynnz: int64(ds.Y.NNZ()), src: src}
	removeLegacyTemps(path)
	out, err := atomicfile.Create(path, true)
	if err != nil {
		return err
	}
	defer out.Abort() // does nothing after Commit
	crc := crc32.New(castagnoli)
	w := io.MultiWriter(out, crc)
	if _, err := out.Write(make([]byte, cacheHeader)); err != nil {
		return err
	}
	var pad [64]byte
	for _, b := range [][]byte{asBytes(ds.X.Indptr), asBytes(ds.X.Indices), asBytes(ds.X.Values), asBytes(ds.Y.Indptr), asBytes(ds.Y.Indices)} {
		n := len(b)
		for len(b) > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			k := min(len(b), cacheChunk)
			if _, err := w.Write(b[:k]); err != nil {
				return err
			}
			b = b[k:]
		}
		if _, err := w.Write(pad[:(64-n%64)%64]); err != nil {
			return err
		}
	}
	c.dataCRC = crc.Sum32()
	if _, err := out.WriteAt(c.encode(), 0); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return out.Commit()
}

// legacyTempAge is how old a temporary file of a version-1 writer must be to
// be removed. Those names (the cache's name + ".tmp" + digits) carry no
// process id; a writer that is alive writes to its file all along, so an
// hour without a write means it died.
const legacyTempAge = time.Hour

// removeLegacyTemps removes what writers of earlier versions left beside the
// cache path when they were killed; atomicfile removes what this version's
// writers leave.
func removeLegacyTemps(path string) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base+".tmp")
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > legacyTempAge {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// openCache maps a cache file and returns its dataset and the format its
// source was read in, checking it against the source src. A mapping is never
// unmapped: the dataset may be referenced for the life of the process. It is
// private and writable, so that writing to the matrices changes the
// process's copy and never the file.
func openCache(path, name string, src source) (*Dataset, Format, error) {
	if !littleEndian {
		return nil, "", errors.New("caches are little-endian only")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	h := make([]byte, cacheHeader)
	if _, err := io.ReadFull(f, h); err != nil {
		return nil, "", fmt.Errorf("reading the header: %w", err)
	}
	c, err := decodeCache(h)
	if err != nil {
		return nil, "", err
	}
	if c.src != src {
		return nil, "", fmt.Errorf("stale: the source file changed (%s)", c.src.diff(src))
	}
	off, size := c.layout()
	if fi.Size() != size {
		return nil, "", fmt.Errorf("%d bytes, the header implies %d", fi.Size(), size)
	}
	mem, err := mapFile(f, int(size))
	if err != nil {
		return nil, "", err
	}
	ds, err := cacheDataset(mem, c, off, name)
	if err != nil {
		unmapFile(mem)
		return nil, "", err
	}
	format := LibSVM
	if c.xc {
		format = XC
	}
	return ds, format, nil
}

// diff names what differs between the recorded source s and the file now.
func (s source) diff(now source) string {
	var d []string
	for _, f := range []struct {
		what     string
		was, got uint64
	}{{"size", uint64(s.size), uint64(now.size)}, {"modification time", uint64(s.mtime), uint64(now.mtime)},
		{"change time", uint64(s.ctime), uint64(now.ctime)}, {"inode", s.ino, now.ino}, {"device", s.dev, now.dev}} {
		if f.was != f.got {
			d = append(d, f.what)
		}
	}
	return strings.Join(d, ", ")
}

// cacheDataset checks the arrays of a cache held in mem and points a dataset
// into them.
func cacheDataset(mem []byte, c cacheInfo, off [5]int64, name string) (*Dataset, error) {
	if crc32.Checksum(mem[cacheHeader:], castagnoli) != c.dataCRC {
		return nil, errors.New("data checksum mismatch")
	}
	view := func(i int, n int64) unsafe.Pointer {
		if n == 0 {
			return nil
		}
		return unsafe.Pointer(&mem[off[i]])
	}
	ds := &Dataset{Name: name,
		X: sparse.CSR{Rows: int(c.rows), Cols: int(c.features),
			Indptr:  unsafe.Slice((*int64)(view(0, c.rows+1)), c.rows+1),
			Indices: unsafe.Slice((*int32)(view(1, c.xnnz)), c.xnnz)},
		Y: sparse.CSR{Rows: int(c.rows), Cols: int(c.labels),
			Indptr:  unsafe.Slice((*int64)(view(3, c.rows+1)), c.rows+1),
			Indices: unsafe.Slice((*int32)(view(4, c.ynnz)), c.ynnz)},
	}
	if c.values {
		ds.X.Values = unsafe.Slice((*float32)(view(2, c.xnnz)), c.xnnz)
		if ds.X.Values == nil {
			ds.X.Values = []float32{}
		}
	}
	if err := ds.X.Validate(); err != nil {
		return nil, fmt.Errorf("features: %w", err)
	}
	// Text never yields a NaN or an infinity (the parser refuses them), so
	// a cache holding one was changed after it was written, its checksum
	// with it.
	for i, v := range ds.X.Values {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("features: value %d is %v: not from a text file", i, v)
		}
	}
	if err := ds.Y.Validate(); err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	return ds, nil
}

// cachePath names the cache of a source file in dir: a digest of its
// absolute path and format.
func cachePath(dir, path string, f Format) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs + "\x00" + string(f)))
	return filepath.Join(dir, hex.EncodeToString(sum[:12])+"-"+sanitize(filepath.Base(path))+".ds"), nil
}

// sanitize keeps a file name readable in a cache name.
func sanitize(s string) string {
	return string(bytes.Map(func(r rune) rune {
		if r == '-' || r == '.' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, []byte(s)))
}

// DefaultCacheDir is where dataset caches go unless told otherwise:
// $HETSGD_CACHE, else the user's cache folder (e.g. ~/.cache) + /hetsgd.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv("HETSGD_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("data: no cache folder (set HETSGD_CACHE): %w", err)
	}
	return filepath.Join(d, "hetsgd"), nil
}
