package data

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/hetsgd/hetsgd/sparse"
)

// mnistFiles are the four idx files of MNIST as distributed (each may be
// gzipped): train images, train labels, test images, test labels.
var mnistFiles = [4]string{
	"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
	"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
}

// LoadMNIST loads the MNIST train and test sets from a folder holding the
// four idx files (gzipped or not).
func LoadMNIST(dir string) (train, test *Dataset, err error) { return Loader{}.loadMNIST(dir) }

func (l Loader) loadMNIST(dir string) (train, test *Dataset, err error) {
	var paths [4]string
	for i, n := range mnistFiles {
		if paths[i], err = findFile(dir, n); err != nil {
			return nil, nil, err
		}
	}
	if train, err = l.loadMNISTPair(paths[0], paths[1], "mnist-train"); err != nil {
		return nil, nil, err
	}
	if test, err = l.loadMNISTPair(paths[2], paths[3], "mnist-test"); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

func (l Loader) loadMNISTPair(images, labels, name string) (*Dataset, error) {
	ctx := l.context()
	fi, _, doneI, err := openInput(ctx, images)
	if err != nil {
		return nil, err
	}
	defer doneI()
	fl, _, doneL, err := openInput(ctx, labels)
	if err != nil {
		return nil, err
	}
	defer doneL()
	l.opened(images, false)
	l.opened(labels, false)
	ds, err := readMNIST(ctx, fi, images, fl, labels, name)
	return ds, stoppedOr(ctx, images, err)
}

// ReadMNIST reads an idx3 image file and its idx1 label file (either may be
// gzipped) into a dataset: pixels scaled to [0,1] as features (zero pixels are
// not stored), one label per image.
//
// The header's counts are checked against the bytes the input holds when
// that is known (an uncompressed file, or a reader with a Len method, such
// as bytes.Reader) before anything is allocated. Otherwise (gzip, a pipe)
// no buffer is sized from the header beyond what has been read.
func ReadMNIST(images io.Reader, imagesName string, labels io.Reader, labelsName string, name string) (*Dataset, error) {
	return readMNIST(context.Background(), images, imagesName, labels, labelsName, name)
}

// remaining returns how many bytes r has left, or -1 when that is unknown.
// It never seeks anything but a regular file, and that only to ask where it is.
func remaining(r io.Reader) int64 {
	switch r := r.(type) {
	case interface{ Len() int }:
		return int64(r.Len())
	case *os.File:
		fi, err := r.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		at, err := r.Seek(0, io.SeekCurrent)
		if err != nil {
			return -1
		}
		return max(fi.Size()-at, 0)
	}
	return -1
}

func readMNIST(ctx context.Context, images io.Reader, imagesName string, labels io.Reader, labelsName string, name string) (*Dataset, error) {
	isize, lsize := remaining(images), remaining(labels)
	ir, gz, err := decompress(images, imagesName)
	if err != nil {
		return nil, err
	}
	if gz {
		isize = -1
	}
	lr, gz, err := decompress(labels, labelsName)
	if err != nil {
		return nil, err
	}
	if gz {
		lsize = -1
	}
	idims, err := idxHeader(ir, imagesName, 0x803, 3)
	if err != nil {
		return nil, err
	}
	ldims, err := idxHeader(lr, labelsName, 0x801, 1)
	if err != nil {
		return nil, err
	}
	n, rows, cols := idims[0], idims[1], idims[2]
	if ldims[0] != n {
		return nil, &ParseError{File: labelsName, Msg: fmt.Sprintf("%d labels for the %d images of %s", ldims[0], n, imagesName)}
	}
	const maxPixels = 1 << 24
	if rows == 0 || cols == 0 || uint64(rows)*uint64(cols) > maxPixels || n > 1<<28 {
		return nil, &ParseError{File: imagesName, Msg: fmt.Sprintf("idx header: implausible shape %d×%d×%d (want at most 2^28 images of 1 to 2^24 pixels)", n, rows, cols)}
	}
	d := rows * cols
	// Both bounds fit in an int64: n ≤ 2^28 and d ≤ 2^24.
	if need := int64(n) * int64(d); isize >= 0 && need > isize-16 {
		return nil, &ParseError{File: imagesName, Msg: fmt.Sprintf("idx header announces %d images of %d×%d pixels (%d bytes) but the file holds %d bytes after its header",
			n, rows, cols, need, max(isize-16, 0))}
	}
	if lsize >= 0 && int64(n) > lsize-8 {
		return nil, &ParseError{File: labelsName, Msg: fmt.Sprintf("idx header announces %d labels but the file holds %d bytes after its header", n, max(lsize-8, 0))}
	}
	// The header sizes the buffers only when the input was seen to hold
	// that much; otherwise they start small and grow with what is read.
	rowsHint, nnzHint := min(n, streamRows), 0
	if isize >= 0 {
		rowsHint, nnzHint = n, int(int64(n)*int64(d)/5) // a digit covers about a fifth of its image
	}
	x := sparse.NewBuilder(d, false, rowsHint, nnzHint)
	y := sparse.NewBuilder(10, true, rowsHint, rowsHint)
	var img []byte
	var lab [1]byte
	for i := 0; i < n; i++ {
		if i%checkLines == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("data: %s: loading stopped at image %d of %d: %w", imagesName, i, n, err)
			}
		}
		if img == nil {
			// The first image is read into a buffer that grows with the
			// bytes that arrive: a header announcing 2^24 pixels over a
			// short stream costs the stream, not 16 MB.
			var buf bytes.Buffer
			if _, err := io.CopyN(&buf, ir, int64(d)); err != nil {
				return nil, &ParseError{File: imagesName, Msg: fmt.Sprintf("truncated at image %d of %d: %v", i, n, err)}
			}
			img = buf.Bytes()[:d]
		} else if _, err := io.ReadFull(ir, img); err != nil {
			return nil, &ParseError{File: imagesName, Msg: fmt.Sprintf("truncated at image %d of %d: %v", i, n, err)}
		}
		if _, err := io.ReadFull(lr, lab[:]); err != nil {
			return nil, &ParseError{File: labelsName, Msg: fmt.Sprintf("truncated at label %d of %d: %v", i, n, err)}
		}
		for j, v := range img {
			if v != 0 {
				x.Append(int32(j), float32(v)/255)
			}
		}
		x.EndRow()
		if lab[0] > 9 {
			return nil, &ParseError{File: labelsName, Msg: fmt.Sprintf("label %d of item %d is not a digit", lab[0], i)}
		}
		y.Append(int32(lab[0]), 0)
		y.EndRow()
	}
	return &Dataset{Name: name, X: x.Build(), Y: y.Build()}, nil
}

// idxHeader reads the magic number and dimensions of an idx file.
func idxHeader(r io.Reader, name string, magic uint32, ndims int) ([]int, error) {
	hdr := make([]byte, 4+4*ndims)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("truncated idx header: %v", err)}
	}
	if got := binary.BigEndian.Uint32(hdr); got != magic {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("%v: magic 0x%08x, want 0x%08x", errNotMNIST, got, magic)}
	}
	dims := make([]int, ndims)
	for i := range dims {
		dims[i] = int(binary.BigEndian.Uint32(hdr[4+4*i:]))
	}
	return dims, nil
}
