package model

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/internal/memory"
)

// The exported model is a NumPy .npz archive (a zip of .npy arrays, which
// numpy.load reads as it is, and PyTorch with torch.from_numpy):
//
//	shape  int64 [Inputs, Hidden…, Outputs]: the network's widths; the last
//	       is the number of labels
//	w0, b0, w1, b1, …  float32 weights (In, Out) and biases (Out,) of each
//	       layer, input first
//
//	card   uint8 [n], optional: a model card, JSON in UTF-8 (how the model
//	       was made and scored; json.loads(z["card"].tobytes()))
//	tfidf  uint8 [n], optional: the text vectorizer of the model's inputs
//	       and the names of its labels, JSON (package tfidf's model file)
//
// The network is h₀ = x, hᵢ₊₁ = relu(hᵢ·wᵢ + bᵢ) for the hidden layers, and
// the labels' scores are the last layer's h·w + b without the ReLU (a
// sigmoid or softmax on top is the loss's business, not the model's). The
// weights are (In, Out), as x·w needs, the transpose of a torch.nn.Linear's
// weight.

// WriteNPZ writes the network of cfg with parameters p as an .npz archive.
func WriteNPZ(w io.Writer, cfg Config, p []float32) error { return WriteNPZCard(w, cfg, p, nil) }

// WriteNPZCard is WriteNPZ with a model card: card, JSON, goes into the
// archive as card.npy, an array of its bytes (none when card is nil).
func WriteNPZCard(w io.Writer, cfg Config, p []float32, card []byte) error {
	return WriteNPZBytes(w, cfg, p, map[string][]byte{"card": card})
}

// WriteNPZBytes is WriteNPZ with byte arrays beside the network: each of
// extra, NAME.npy, an array of its bytes (none for a nil value), in the
// order of their names.
func WriteNPZBytes(w io.Writer, cfg Config, p []float32, extra map[string][]byte) error {
	m, err := New(cfg)
	if err != nil {
		return err
	}
	m.check(p, "parameters")
	z := zip.NewWriter(w)
	widths := append(append([]int{cfg.Inputs}, cfg.Hidden...), cfg.Outputs)
	f, err := z.CreateHeader(&zip.FileHeader{Name: "shape.npy", Method: zip.Store})
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	b := npyHeader("<i8", []int{len(widths)})
	for _, v := range widths {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(extra)) {
		b := extra[name]
		if b == nil {
			continue
		}
		f, err := z.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Store})
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		if _, err := f.Write(npyHeader("|u1", []int{len(b)})); err != nil {
			return fmt.Errorf("model: %w", err)
		}
		if _, err := f.Write(b); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	buf := make([]byte, 0, 1<<16)
	for _, a := range m.arrays(p) {
		f, err := z.CreateHeader(&zip.FileHeader{Name: a.name, Method: zip.Store})
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		if _, err := f.Write(npyHeader("<f4", a.shape)); err != nil {
			return fmt.Errorf("model: %w", err)
		}
		for v := a.v; len(v) > 0; {
			k := min(len(v), cap(buf)/4)
			buf = buf[:0]
			for _, x := range v[:k] {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
			}
			if _, err := f.Write(buf); err != nil {
				return fmt.Errorf("model: %w", err)
			}
			v = v[k:]
		}
	}
	if err := z.Close(); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

// npyHeader returns the .npy format 1.0 header of a C-ordered array, padded
// so that the data starts at a multiple of 64 bytes.
func npyHeader(descr string, shape []int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	s := strings.Join(dims, ", ")
	if len(shape) == 1 {
		s += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, s)
	pad := 64 - (10+len(dict)+1)%64
	if pad == 64 {
		pad = 0
	}
	dict += strings.Repeat(" ", pad) + "\n"
	h := append([]byte("\x93NUMPY\x01\x00"), 0, 0)
	binary.LittleEndian.PutUint16(h[8:], uint16(len(dict)))
	return append(h, dict...)
}

// ReadNPZ reads a network written by WriteNPZ from r, of size bytes.
func ReadNPZ(r io.ReaderAt, size int64) (Config, []float32, error) {
	z, cfg, err := npzShape(r, size)
	if err != nil {
		return Config{}, nil, err
	}
	m, err := New(cfg)
	if err != nil {
		return Config{}, nil, err
	}
	files := map[string]*zip.File{}
	for _, f := range z.File {
		files[f.Name] = f
	}
	open := func(name, descr string, shape []int) (io.ReadCloser, error) {
		rc, _, err := openNPY(files, name, descr, shape)
		return rc, err
	}
	// The archive's arrays must be there with these shapes before the
	// vector is allocated: a 100-byte file may claim any widths.
	for _, a := range m.arrays(nil) {
		if f, ok := files[a.name]; !ok || f.UncompressedSize64 < 4*uint64(a.size()) {
			return Config{}, nil, fmt.Errorf("model: %s is missing or smaller than its %v values", a.name, a.shape)
		}
	}
	// A compressed archive may claim sizes far beyond its own: the memory
	// is checked before it is taken.
	if err := memory.Check(4*int64(m.NumParams()), fmt.Sprintf("a model of %d parameters", m.NumParams())); err != nil {
		return Config{}, nil, fmt.Errorf("model: %w", err)
	}
	p := make([]float32, m.NumParams())
	buf := make([]byte, 1<<16)
	for _, a := range m.arrays(p) {
		rc, err := open(a.name, "<f4", a.shape)
		if err != nil {
			return Config{}, nil, err
		}
		for v := a.v; len(v) > 0; {
			k := min(len(v), len(buf)/4)
			if _, err := io.ReadFull(rc, buf[:4*k]); err != nil {
				rc.Close()
				return Config{}, nil, fmt.Errorf("model: %s: %w", a.name, err)
			}
			for j := range v[:k] {
				bits := binary.LittleEndian.Uint32(buf[4*j:])
				if bits&0x7f800000 == 0x7f800000 { // an infinity or a NaN
					rc.Close()
					return Config{}, nil, fmt.Errorf("model: %s holds %v at position %d: a model's weights are finite (was it trained to divergence, or changed?)",
						a.name, math.Float32frombits(bits), len(a.v)-len(v)+j)
				}
				v[j] = math.Float32frombits(bits)
			}
			v = v[k:]
		}
		rc.Close()
	}
	return m.Config(), p, nil
}

// maxCard bounds the card ReadNPZCard reads: a card is a few kilobytes.
const maxCard = 1 << 20

// ReadNPZCard reads the model card of an archive of WriteNPZCard, nil when
// it has none.
func ReadNPZCard(r io.ReaderAt, size int64) ([]byte, error) {
	return ReadNPZBytes(r, size, "card", maxCard)
}

// ReadNPZBytes reads the byte array name of an archive of WriteNPZBytes,
// nil when it has none; one over limit bytes is refused.
func ReadNPZBytes(r io.ReaderAt, size int64, name string, limit int) ([]byte, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("model: not an .npz archive: %w", err)
	}
	files := map[string]*zip.File{}
	for _, f := range z.File {
		files[f.Name] = f
	}
	file := name + ".npy"
	if files[file] == nil {
		return nil, nil
	}
	rc, shape, err := openNPY(files, file, "|u1", nil)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if len(shape) != 1 || shape[0] > limit {
		return nil, fmt.Errorf("model: %s holds %v bytes, want one array of at most %d", file, shape, limit)
	}
	b := make([]byte, shape[0])
	if _, err := io.ReadFull(rc, b); err != nil {
		return nil, fmt.Errorf("model: %s: %w", file, err)
	}
	return b, nil
}

// NPZShape reads the shape of the network an archive of WriteNPZ holds,
// without its weights: a command checks what it will hold against the
// memory it may use before it reads them (ReadNPZ).
func NPZShape(r io.ReaderAt, size int64) (Config, error) {
	_, cfg, err := npzShape(r, size)
	return cfg, err
}

// npzShape opens the archive and reads its shape.npy.
func npzShape(r io.ReaderAt, size int64) (*zip.Reader, Config, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, Config{}, fmt.Errorf("model: not an .npz archive: %w", err)
	}
	files := map[string]*zip.File{}
	for _, f := range z.File {
		files[f.Name] = f
	}
	rc, shape, err := openNPY(files, "shape.npy", "<i8", nil)
	if err != nil {
		return nil, Config{}, err
	}
	if len(shape) != 1 || shape[0] < 2 || shape[0] > 1<<10 {
		rc.Close()
		return nil, Config{}, fmt.Errorf("model: shape.npy holds %v values, want the network's widths", shape)
	}
	raw := make([]byte, 8*shape[0])
	_, err = io.ReadFull(rc, raw)
	rc.Close()
	if err != nil {
		return nil, Config{}, fmt.Errorf("model: shape.npy: %w", err)
	}
	widths := make([]int, shape[0])
	for i := range widths {
		v := int64(binary.LittleEndian.Uint64(raw[8*i:]))
		if v < 1 || v > math.MaxInt32 {
			return nil, Config{}, fmt.Errorf("model: shape.npy: width %d of layer %d", v, i)
		}
		widths[i] = int(v)
	}
	return z, Config{Inputs: widths[0], Hidden: widths[1 : len(widths)-1], Outputs: widths[len(widths)-1]}, nil
}

// openNPY opens the array name of an archive's files, checking its type
// and, if shape is not nil, its shape; it returns its shape.
func openNPY(files map[string]*zip.File, name, descr string, shape []int) (io.ReadCloser, []int, error) {
	f, ok := files[name]
	if !ok {
		return nil, nil, fmt.Errorf("model: the archive has no %s (not a model hetsgd exported)", name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("model: %s: %w", name, err)
	}
	got, err := readNPYHeader(rc, descr)
	if err == nil && shape != nil && !slices.Equal(got, shape) {
		err = fmt.Errorf("shape %v, want %v", got, shape)
	}
	if err != nil {
		rc.Close()
		return nil, nil, fmt.Errorf("model: %s: %w", name, err)
	}
	return rc, got, nil
}

// ExportBytes is what WriteNPZ allocates for the network besides its
// parameters: a copy of each label-major layer turned (In, Out), and a
// buffer.
func (m *MLP) ExportBytes() int64 {
	b := int64(1 << 16)
	for _, l := range m.layers {
		if l.Transposed {
			b = memory.Add(b, memory.Mul(4, memory.Mul(int64(l.In), int64(l.Out))))
		}
	}
	return b
}

// npyArray is one array of the archive: its file name, shape and values.
type npyArray struct {
	name  string
	shape []int
	v     []float32
}

func (a npyArray) size() int {
	n := 1
	for _, d := range a.shape {
		n *= d
	}
	return n
}

// arrays lists the weight and bias arrays of the network, input first, over
// parameters p (nil: names and shapes only).
func (m *MLP) arrays(p []float32) []npyArray {
	var out []npyArray
	for i, l := range m.layers {
		w := npyArray{name: "w" + strconv.Itoa(i) + ".npy", shape: []int{l.In, l.Out}}
		b := npyArray{name: "b" + strconv.Itoa(i) + ".npy", shape: []int{l.Out}}
		if p != nil {
			w.v, b.v = p[l.W:l.B], p[l.B:l.B+l.Out]
			if l.Transposed {
				// Exported (In, Out) like every layer: a label-major model
				// reads back as the same network in the usual layout.
				w.v = make([]float32, l.In*l.Out)
				transpose(w.v, p[l.W:l.B], l.Out, l.In)
			}
		}
		out = append(out, w, b)
	}
	return out
}

var npyDict = regexp.MustCompile(`^\{'descr': '([<>|][a-z][0-9]+)', 'fortran_order': (True|False), 'shape': \(([0-9, ]*)\), \}\s*$`)

// readNPYHeader reads an .npy header of format 1.0 with the dictionary
// layout numpy writes, and returns the array's shape.
func readNPYHeader(r io.Reader, descr string) ([]int, error) {
	var h [10]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	if string(h[:6]) != "\x93NUMPY" || h[6] != 1 {
		return nil, fmt.Errorf("not an .npy array of format 1")
	}
	dict := make([]byte, binary.LittleEndian.Uint16(h[8:]))
	if _, err := io.ReadFull(r, dict); err != nil {
		return nil, err
	}
	m := npyDict.FindSubmatch(dict)
	switch {
	case m == nil:
		return nil, fmt.Errorf("an .npy header %q", dict)
	case string(m[1]) != descr:
		return nil, fmt.Errorf("values of type %s, want %s", m[1], descr)
	case string(m[2]) != "False":
		return nil, fmt.Errorf("a Fortran-ordered array")
	}
	var shape []int
	for _, f := range strings.Split(string(m[3]), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil || d < 0 || d > math.MaxInt32 {
			return nil, fmt.Errorf("a dimension %q", f)
		}
		shape = append(shape, d)
	}
	return shape, nil
}
