package data

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"testing"
)

// The readers' contract under arbitrary input: no panic; either a
// *ParseError (or a read error), or a dataset whose matrices are valid CSR of
// matching row counts. Seeds live in testdata/fuzz.

func checkFuzzResult(t *testing.T, d *Dataset, err error) {
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("error is not a ParseError: %v", err)
		}
		return
	}
	if err := d.X.Validate(); err != nil {
		t.Fatalf("features: %v", err)
	}
	if err := d.Y.Validate(); err != nil {
		t.Fatalf("labels: %v", err)
	}
	if d.X.Rows != d.Y.Rows {
		t.Fatalf("%d feature rows, %d label rows", d.X.Rows, d.Y.Rows)
	}
}

func FuzzReadXC(f *testing.F) {
	f.Add([]byte("2 4 3\n0,1 0:1 3:0.5\n 2:1\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := ReadXC(bytes.NewReader(in), "fuzz")
		checkFuzzResult(t, d, err)
	})
}

func FuzzReadLibSVM(f *testing.F) {
	f.Add([]byte("0,1 1:1 4:0.5\n2 3:1\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := ReadLibSVM(bytes.NewReader(in), "fuzz", LibSVMOptions{})
		checkFuzzResult(t, d, err)
	})
}

func FuzzReadMNIST(f *testing.F) {
	f.Add([]byte{0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 255, 3, 0}, []byte{0, 0, 8, 1, 0, 0, 0, 1, 7})
	f.Fuzz(func(t *testing.T, images, labels []byte) {
		d, err := ReadMNIST(bytes.NewReader(images), "img", bytes.NewReader(labels), "lab", "fuzz")
		checkFuzzResult(t, d, err)
	})
}

// parseFloat agrees with strconv.ParseFloat on every input both accept, and
// accepts everything strconv accepts.
func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"0.5", "1e-7", "123456789.123", "-0", ".5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseFloat([]byte(s))
		want, err := strconv.ParseFloat(s, 64)
		if err == nil && (!ok || math.Float64bits(got) != math.Float64bits(want)) {
			t.Fatalf("parseFloat(%q) = %v, %v; strconv: %v", s, got, ok, want)
		}
		if err != nil && ok && !errors.Is(err, strconv.ErrRange) {
			t.Fatalf("parseFloat(%q) accepted what strconv rejects: %v", s, err)
		}
	})
}
