package data

import (
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
func LoadMNIST(dir string) (train, test *Dataset, err error) {
	var paths [4]string
	for i, n := range mnistFiles {
		if paths[i], err = findFile(dir, n); err != nil {
			return nil, nil, err
		}
	}
	if train, err = loadMNISTPair(paths[0], paths[1], "mnist-train"); err != nil {
		return nil, nil, err
	}
	if test, err = loadMNISTPair(paths[2], paths[3], "mnist-test"); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

func loadMNISTPair(images, labels, name string) (*Dataset, error) {
	fi, err := os.Open(images)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer fi.Close()
	fl, err := os.Open(labels)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer fl.Close()
	return ReadMNIST(fi, images, fl, labels, name)
}

// ReadMNIST reads an idx3 image file and its idx1 label file (either may be
// gzipped) into a dataset: pixels scaled to [0,1] as features (zero pixels are
// not stored), one label per image.
func ReadMNIST(images io.Reader, imagesName string, labels io.Reader, labelsName string, name string) (*Dataset, error) {
	ir, err := decompress(images, imagesName)
	if err != nil {
		return nil, err
	}
	lr, err := decompress(labels, labelsName)
	if err != nil {
		return nil, err
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
	if uint64(rows)*uint64(cols) > maxPixels || n > 1<<28 {
		return nil, &ParseError{File: imagesName, Msg: fmt.Sprintf("implausible shape %d×%d×%d", n, rows, cols)}
	}
	d := rows * cols
	// Sizes come from an untrusted header: hint, but let the data decide.
	hint := min(n, 1<<16)
	x := sparse.NewBuilder(d, false, hint, min(hint*d/5, 1<<22))
	y := sparse.NewBuilder(10, true, hint, hint)
	img := make([]byte, d)
	var lab [1]byte
	for i := 0; i < n; i++ {
		if _, err := io.ReadFull(ir, img); err != nil {
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
