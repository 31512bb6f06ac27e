package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"github.com/hetsgd/hetsgd/sparse"
)

// The binary cache of a parsed dataset: a header and the five arrays of its
// two CSR matrices, as they lie in memory (little-endian), each at a 64-byte
// aligned offset, so that a load maps the file and points the matrices into
// it: no parsing and no copy. The header records the format version, the
// source file's size and modification time (a changed source makes the
// cache stale) and CRC-32C checksums of the header and of the arrays, which
// every load verifies before trusting the contents; a load also validates
// the matrices' structure (sparse.CSR.Validate). A cache that fails any check
// is rebuilt from the source, never used.
//
//	offset  size  field
//	0       8     magic "HETSGDds"
//	8       4     format version (cacheVersion)
//	12      4     flags (bit 0: the feature matrix has values)
//	16      8     rows
//	24      8     features (columns of X)
//	32      8     labels (columns of Y)
//	40      8     non-zeros of X
//	48      8     non-zeros of Y
//	56      8     source size in bytes
//	64      8     source modification time, Unix nanoseconds
//	72      4     CRC-32C of the arrays (offset 128 to the end)
//	76      4     CRC-32C of bytes 0–75
//	80      48    zero
//	128…          X.Indptr (int64), X.Indices (int32), X.Values (float32),
//	              Y.Indptr (int64), Y.Indices (int32), each padded to 64 bytes
const (
	cacheMagic   = "HETSGDds"
	cacheVersion = 1
	cacheHeader  = 128
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cacheInfo is the header of a cache file.
type cacheInfo struct {
	values                 bool
	rows, features, labels int64
	xnnz, ynnz             int64
	srcSize, srcTime       int64
	dataCRC                uint32
}

// source identifies the file a cache was made from.
type source struct{ size, time int64 }

func sourceOf(fi os.FileInfo) source { return source{fi.Size(), fi.ModTime().UnixNano()} }

func (c *cacheInfo) encode() []byte {
	h := make([]byte, cacheHeader)
	copy(h, cacheMagic)
	le := binary.LittleEndian
	le.PutUint32(h[8:], cacheVersion)
	if c.values {
		le.PutUint32(h[12:], 1)
	}
	for i, v := range []int64{c.rows, c.features, c.labels, c.xnnz, c.ynnz, c.srcSize, c.srcTime} {
		le.PutUint64(h[16+8*i:], uint64(v))
	}
	le.PutUint32(h[72:], c.dataCRC)
	le.PutUint32(h[76:], crc32.Checksum(h[:76], castagnoli))
	return h
}

// decodeCache parses and checks a header; the error says what is wrong.
func decodeCache(h []byte) (cacheInfo, error) {
	var c cacheInfo
	le := binary.LittleEndian
	switch {
	case len(h) < cacheHeader:
		return c, errors.New("shorter than its header")
	case string(h[:8]) != cacheMagic:
		return c, errors.New("not a dataset cache (bad magic)")
	case le.Uint32(h[76:]) != crc32.Checksum(h[:76], castagnoli):
		return c, errors.New("header checksum mismatch")
	case le.Uint32(h[8:]) != cacheVersion:
		return c, fmt.Errorf("format version %d, this build reads %d", le.Uint32(h[8:]), cacheVersion)
	}
	c.values = le.Uint32(h[12:])&1 != 0
	v := make([]int64, 7)
	for i := range v {
		v[i] = int64(le.Uint64(h[16+8*i:]))
		// Rows and non-zeros are bounded by the file's size, checked later;
		// the dimensions by the int32 ids.
		if v[i] < 0 || i < 5 && v[i] > 1<<40 || (i == 1 || i == 2) && v[i] > 1<<31 {
			return c, fmt.Errorf("header field %d out of range (%d)", i, v[i])
		}
	}
	c.rows, c.features, c.labels, c.xnnz, c.ynnz, c.srcSize, c.srcTime = v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	c.dataCRC = le.Uint32(h[72:])
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

// writeCache writes ds as a cache of the source file src to path, through a
// temporary file renamed into place, so that a reader never sees half a
// cache.
func writeCache(path string, ds *Dataset, src source) error {
	if !littleEndian {
		return errors.New("caches are little-endian only")
	}
	c := cacheInfo{values: ds.X.Values != nil, rows: int64(ds.X.Rows), features: int64(ds.X.Cols),
		labels: int64(ds.Y.Cols), xnnz: int64(ds.X.NNZ()), ynnz: int64(ds.Y.NNZ()), srcSize: src.size, srcTime: src.time}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	crc := crc32.New(castagnoli)
	w := io.MultiWriter(tmp, crc)
	if _, err := tmp.Write(make([]byte, cacheHeader)); err != nil {
		tmp.Close()
		return err
	}
	var pad [64]byte
	for _, b := range [][]byte{asBytes(ds.X.Indptr), asBytes(ds.X.Indices), asBytes(ds.X.Values), asBytes(ds.Y.Indptr), asBytes(ds.Y.Indices)} {
		if _, err := w.Write(b); err != nil {
			tmp.Close()
			return err
		}
		if _, err := w.Write(pad[:(64-len(b)%64)%64]); err != nil {
			tmp.Close()
			return err
		}
	}
	c.dataCRC = crc.Sum32()
	if _, err := tmp.WriteAt(c.encode(), 0); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// openCache maps a cache file and returns its dataset, checking it against
// the source src. A mapping is never unmapped: the dataset may be referenced
// for the life of the process. It is private and writable, so that writing
// to the matrices changes the process's copy and never the file.
func openCache(path, name string, src source) (*Dataset, error) {
	if !littleEndian {
		return nil, errors.New("caches are little-endian only")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	h := make([]byte, cacheHeader)
	if _, err := io.ReadFull(f, h); err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	c, err := decodeCache(h)
	if err != nil {
		return nil, err
	}
	if c.srcSize != src.size || c.srcTime != src.time {
		return nil, errors.New("stale: the source file changed")
	}
	off, size := c.layout()
	if fi.Size() != size {
		return nil, fmt.Errorf("%d bytes, the header implies %d", fi.Size(), size)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	ds, err := cacheDataset(mem, c, off, name)
	if err != nil {
		syscall.Munmap(mem)
		return nil, err
	}
	return ds, nil
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
