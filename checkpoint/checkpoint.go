package checkpoint

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
)

// Version is the format this package writes and reads.
const Version = 1

const (
	magic      = "HSGDCKPT"
	endMagic   = "HSGDEND."
	headerLen  = 16
	footerLen  = 8 + 4 + 8
	maxNameLen = 1 << 10
	chunk      = 1 << 16 // float32s per chunk of a vector's encoding
)

// Kind is what a section holds.
type Kind uint8

const (
	Bytes    Kind = 0
	Float32s Kind = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by the errors of files that are not whole,
// well-formed checkpoints.
var ErrCorrupt = errors.New("checkpoint: corrupt")

// ErrNotFinite is wrapped by the error of a vector that holds a NaN or an
// infinity: no run saves one, and none may go on from one.
var ErrNotFinite = errors.New("checkpoint: not finite")

// Writer writes a checkpoint under a temporary name; Commit puts it in
// place. Errors stick: the first one is returned by every later call and by
// Commit.
type Writer struct {
	f        *atomicfile.File
	w        *bufio.Writer
	crc      hash.Hash32
	names    map[string]bool
	sections uint64
	buf      []byte
	err      error
}

// Create starts writing the checkpoint file path, replacing it at Commit if
// it exists.
func Create(path string) (*Writer, error) {
	f, err := atomicfile.Create(path, true)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	w := &Writer{f: f, crc: crc32.New(castagnoli), names: map[string]bool{}}
	w.w = bufio.NewWriterSize(io.MultiWriter(f, w.crc), 1<<20)
	var h [headerLen]byte
	copy(h[:], magic)
	binary.LittleEndian.PutUint32(h[8:], Version)
	w.write(h[:])
	return w, nil
}

func (w *Writer) write(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

func (w *Writer) section(name string, kind Kind, n uint64) {
	if w.err != nil {
		return
	}
	if name == "" || len(name) > maxNameLen || w.names[name] {
		w.err = fmt.Errorf("checkpoint: section name %q is empty, too long or used twice", name)
		return
	}
	w.names[name] = true
	w.sections++
	h := make([]byte, 0, 2+len(name)+1+8)
	h = binary.LittleEndian.AppendUint16(h, uint16(len(name)))
	h = append(h, name...)
	h = append(h, byte(kind))
	h = binary.LittleEndian.AppendUint64(h, n)
	w.write(h)
}

// Bytes adds a section holding b.
func (w *Writer) Bytes(name string, b []byte) {
	w.section(name, Bytes, uint64(len(b)))
	w.write(b)
}

// Float32s adds a section holding v.
func (w *Writer) Float32s(name string, v []float32) {
	w.section(name, Float32s, 4*uint64(len(v)))
	if w.buf == nil {
		w.buf = make([]byte, 4*chunk)
	}
	for len(v) > 0 && w.err == nil {
		k := min(len(v), chunk)
		for i, x := range v[:k] {
			binary.LittleEndian.PutUint32(w.buf[4*i:], math.Float32bits(x))
		}
		w.write(w.buf[:4*k])
		v = v[k:]
	}
}

// Commit writes the footer, syncs the file and renames it onto its path.
// After an error nothing is left behind and the path holds what it held.
func (w *Writer) Commit() error {
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if w.err != nil {
		w.f.Abort()
		return w.err
	}
	var foot [footerLen]byte
	binary.LittleEndian.PutUint64(foot[:], w.sections)
	binary.LittleEndian.PutUint32(foot[8:], w.crc.Sum32())
	copy(foot[12:], endMagic)
	if _, err := w.f.Write(foot[:]); err != nil {
		w.f.Abort()
		return err
	}
	if err := w.f.Commit(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// Abort drops the checkpoint being written; it does nothing after Commit.
func (w *Writer) Abort() { w.f.Abort() }

// Reader reads a checkpoint file whose format and checksum Open checked.
type Reader struct {
	path     string
	f        *os.File
	sections map[string]entry
	names    []string // in file order
	buf      []byte
}

type entry struct {
	kind     Kind
	off, len int64
}

// Open checks the checkpoint file path — its header, version, footer and
// checksum — and indexes its sections.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	r := &Reader{path: path, f: f, sections: map[string]entry{}}
	if err := r.index(); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reader) corrupt(format string, args ...any) error {
	return kindError{ErrCorrupt, fmt.Sprintf("checkpoint: %s: %s (the file is damaged or is not a checkpoint; resume from another one)", r.path, fmt.Sprintf(format, args...))}
}

// kindError is an error of a kind (ErrCorrupt, ErrNotFinite) whose
// message says what is wrong without the kind's words.
type kindError struct {
	kind error
	msg  string
}

func (e kindError) Error() string        { return e.msg }
func (e kindError) Is(target error) bool { return target == e.kind }

func (r *Reader) index() error {
	fi, err := r.f.Stat()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	size := fi.Size()
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("checkpoint: %s is not a regular file", r.path)
	}
	var h [headerLen]byte
	if n, _ := r.f.ReadAt(h[:], 0); n < len(magic) || string(h[:len(magic)]) != magic {
		return kindError{ErrCorrupt, fmt.Sprintf("checkpoint: %s is not a checkpoint: it does not start as a checkpoint does", r.path)}
	}
	if size < headerLen+footerLen {
		return r.corrupt("%d bytes, shorter than an empty checkpoint", size)
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != Version {
		return fmt.Errorf("checkpoint: %s is of format version %d; this hetsgd reads version %d (continue it with the hetsgd that wrote it)", r.path, v, Version)
	}
	var foot [footerLen]byte
	if _, err := r.f.ReadAt(foot[:], size-footerLen); err != nil {
		return fmt.Errorf("checkpoint: %s: %w", r.path, err)
	}
	if string(foot[12:]) != endMagic {
		return r.corrupt("it does not end as a checkpoint does (cut short?)")
	}
	body := size - footerLen
	crc := crc32.New(castagnoli)
	if _, err := io.Copy(crc, io.NewSectionReader(r.f, 0, body)); err != nil {
		return fmt.Errorf("checkpoint: %s: %w", r.path, err)
	}
	if crc.Sum32() != binary.LittleEndian.Uint32(foot[8:]) {
		return r.corrupt("its checksum does not match its content")
	}
	want := binary.LittleEndian.Uint64(foot[:])
	br := bufio.NewReader(io.NewSectionReader(r.f, headerLen, body-headerLen))
	off := int64(headerLen)
	for off < body {
		var nl [2]byte
		if _, err := io.ReadFull(br, nl[:]); err != nil {
			return r.corrupt("section %d: %v", len(r.names), err)
		}
		n := int(binary.LittleEndian.Uint16(nl[:]))
		if n == 0 || n > maxNameLen {
			return r.corrupt("section %d: a name of %d bytes", len(r.names), n)
		}
		rest := make([]byte, n+1+8)
		if _, err := io.ReadFull(br, rest); err != nil {
			return r.corrupt("section %d: %v", len(r.names), err)
		}
		name, kind, l := string(rest[:n]), Kind(rest[n]), binary.LittleEndian.Uint64(rest[n+1:])
		off += int64(2 + len(rest))
		switch {
		case kind != Bytes && kind != Float32s:
			return r.corrupt("section %q of unknown kind %d", name, kind)
		case l > uint64(body-off):
			return r.corrupt("section %q of %d bytes runs past the end", name, l)
		case kind == Float32s && l%4 != 0:
			return r.corrupt("section %q of float32s has %d bytes", name, l)
		}
		if _, dup := r.sections[name]; dup {
			return r.corrupt("section %q twice", name)
		}
		r.sections[name] = entry{kind: kind, off: off, len: int64(l)}
		r.names = append(r.names, name)
		if _, err := br.Discard(int(l)); err != nil {
			return r.corrupt("section %q: %v", name, err)
		}
		off += int64(l)
	}
	if uint64(len(r.names)) != want {
		return r.corrupt("%d sections where the footer counts %d", len(r.names), want)
	}
	return nil
}

// Path returns the file's path.
func (r *Reader) Path() string { return r.path }

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// Names returns the sections' names in file order.
func (r *Reader) Names() []string { return append([]string(nil), r.names...) }

func (r *Reader) lookup(name string, kind Kind) (entry, error) {
	e, ok := r.sections[name]
	switch {
	case !ok:
		return e, fmt.Errorf("checkpoint: %s has no section %q (written by another kind of run?)", r.path, name)
	case e.kind != kind:
		return e, fmt.Errorf("checkpoint: %s: section %q holds kind %d, not %d", r.path, name, e.kind, kind)
	}
	return e, nil
}

// Bytes returns the content of a bytes section.
func (r *Reader) Bytes(name string) ([]byte, error) {
	e, err := r.lookup(name, Bytes)
	if err != nil {
		return nil, err
	}
	b := make([]byte, e.len)
	if _, err := r.f.ReadAt(b, e.off); err != nil {
		return nil, fmt.Errorf("checkpoint: %s: section %q: %w", r.path, name, err)
	}
	return b, nil
}

// Len returns the number of float32s of a vector section.
func (r *Reader) Len(name string) (int, error) {
	e, err := r.lookup(name, Float32s)
	return int(e.len / 4), err
}

// Float32s reads a vector section into dst, which must have its length,
// bit for bit.
func (r *Reader) Float32s(name string, dst []float32) error {
	e, err := r.lookup(name, Float32s)
	if err != nil {
		return err
	}
	if e.len != 4*int64(len(dst)) {
		return fmt.Errorf("checkpoint: %s: section %q holds %d values, where this run has %d", r.path, name, e.len/4, len(dst))
	}
	if r.buf == nil {
		r.buf = make([]byte, 4*chunk)
	}
	off := e.off
	for len(dst) > 0 {
		k := min(len(dst), chunk)
		b := r.buf[:4*k]
		if _, err := r.f.ReadAt(b, off); err != nil {
			return fmt.Errorf("checkpoint: %s: section %q: %w", r.path, name, err)
		}
		for i := range dst[:k] {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		dst, off = dst[k:], off+int64(len(b))
	}
	return nil
}

// FiniteFloat32s is Float32s for a vector that must be finite — a model's
// weights, an optimizer's moments: a NaN or an infinity in it is an error
// wrapping ErrNotFinite that names the file, the section and the position.
func (r *Reader) FiniteFloat32s(name string, dst []float32) error {
	if err := r.Float32s(name, dst); err != nil {
		return err
	}
	for i, v := range dst {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return kindError{ErrNotFinite, fmt.Sprintf("checkpoint: %s: section %q holds %v at position %d, not a finite number (a run that had diverged, or a file changed since it was written): resume from another checkpoint",
				r.path, name, v, i)}
		}
	}
	return nil
}
