package data

import (
	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
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

// Format detection and the XC header: whatever the first line, Auto reads
// it as XC or libSVM and reports a bad header at line 1 as a header error.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"2 4 3\n0,1 0:1 3:0.5\n 2:1\n", "0,1 1:1 4:0.5\n2 3:1\n", "4880 1836\n0 1:1\n",
		"4880 -3 159\n", "1 0 3\n", "3\n1 2:1\n", "\n1 1:1\n", "1,2 3\n", " 1 2 3\r\n0 1:1\r\n",
		"99999999999999999999 1 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		d, format, err := read(context.Background(), bytes.NewReader(in), "fuzz", Auto, sizes{})
		checkFuzzResult(t, d, err)
		first, _, _ := bytes.Cut(in, []byte{'\n'})
		if !bytes.HasPrefix(in, gzipMagic) && len(first) < 1<<12 && headerLike(first) {
			var pe *ParseError
			if err == nil && format != XC || errors.As(err, &pe) && pe.Line == 1 && strings.Contains(pe.Msg, "id:value") {
				t.Fatalf("header-like first line %q read as libSVM: %v", first, err)
			}
		}
	})
}

// The bounded line reader yields the lines of its input, CRs before the
// newline dropped, and fails exactly at the first line longer than its
// bound, whatever the bound and the buffer size.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("abcd\nef\r\n\n"), uint8(4), uint8(16))
	f.Add([]byte("abcdefghijklmnopqrstuvwxyz0123456789\nab"), uint8(30), uint8(16))
	f.Fuzz(func(t *testing.T, in []byte, bound, buf uint8) {
		max := int(bound)
		tr := newLineReaderSize(context.Background(), bytes.NewReader(in), "f", 16+int(buf), max)
		want := bytes.Split(in, []byte{'\n'})
		if len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1] // a final newline ends a line, not starts one
		}
		for i := 0; ; i++ {
			line, ok, err := tr.next()
			if i == len(want) {
				if ok || err != nil {
					t.Fatalf("after the %d lines: %q, %v, %v", len(want), line, ok, err)
				}
				return
			}
			if len(want[i]) > max {
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Line != i+1 || !strings.Contains(pe.Msg, "line longer than") {
					t.Fatalf("line %d of %d bytes, bound %d: %q, %v", i+1, len(want[i]), max, line, err)
				}
				return
			}
			if err != nil || !ok || !bytes.Equal(line, bytes.TrimSuffix(want[i], []byte{'\r'})) {
				t.Fatalf("line %d: %q, %v, %v, want %q", i+1, line, ok, err, want[i])
			}
		}
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

// A stand-in file is either refused with a *ParseError or read into a
// StandIn that passes Check and writes back to the same StandIn.
func FuzzReadStandIn(f *testing.F) {
	var b bytes.Buffer
	HandMadeStandIn().WriteJSON(&b)
	f.Add(b.Bytes())
	anchored := HandMadeStandIn()
	anchored.Anchors = &Shares{At: []float64{0.01, 0.5}, Value: []float64{1, 0}}
	b.Reset()
	anchored.WriteJSON(&b)
	f.Add(b.Bytes())
	f.Add([]byte(`{"format":"hetsgd-standin/1","anchors":{"at":[],"value":[]}}`))
	f.Add([]byte(`{"format":"hetsgd-standin/1","anchors":null}`))
	f.Add([]byte(`{"format":"hetsgd-standin/1"}`))
	f.Add([]byte(`{"format":"hetsgd-standin/1","labels":-1}`))
	f.Add([]byte("[]"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := ReadStandIn(bytes.NewReader(in), "fuzz.json")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error is not a ParseError: %v", err)
			}
			return
		}
		if err := s.Check(); err != nil {
			t.Fatalf("read a stand-in that fails Check: %v", err)
		}
		var out bytes.Buffer
		if err := s.WriteJSON(&out); err != nil {
			t.Fatal(err)
		}
		back, err := ReadStandIn(&out, "again.json")
		if err != nil {
			t.Fatalf("written back, refused: %v", err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip changed the stand-in")
		}
	})
}
