package data

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/sparse"
)

func TestReadXCKnownAnswer(t *testing.T) {
	in := "3 5 4\n" +
		"0,2 1:0.5 4:2\r\n" + // CRLF line ending
		" 3:1e-1\n" + // no labels
		"3\n" + // labels, no features
		"\n\n" // trailing blank lines
	d, err := ReadXC(strings.NewReader(in), "tiny.txt")
	if err != nil {
		t.Fatal(err)
	}
	wantX := sparse.CSR{Rows: 3, Cols: 5, Indptr: []int64{0, 2, 3, 3}, Indices: []int32{1, 4, 3}, Values: []float32{0.5, 2, 0.1}}
	wantY := sparse.CSR{Rows: 3, Cols: 4, Indptr: []int64{0, 2, 2, 3}, Indices: []int32{0, 2, 3}}
	if !reflect.DeepEqual(d.X, wantX) {
		t.Errorf("X = %+v, want %+v", d.X, wantX)
	}
	if !reflect.DeepEqual(d.Y, wantY) {
		t.Errorf("Y = %+v, want %+v", d.Y, wantY)
	}
	if d.Name != "tiny.txt" {
		t.Errorf("name %q", d.Name)
	}
}

func TestReadXCErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		line int
		msg  string
	}{
		{"", 1, "missing the XC header"},
		{"0,1 3:1\n", 1, "XC header: want `points features labels`"},
		{"2 5 x\n", 1, `labels "x" is not a non-negative integer`},
		{"1 4294967296 3\n0 1:1\n", 1, "more than ids can address"},
		{"1 5 2147483648\n0 1:1\n", 1, "more than ids can address"},
		{"2 5 3\n0 1:1\n", 0, "announces 2 points but the file has 1"},
		{"1 5 3\n0 1:1\n1 2:1\n", 3, "more points than the 1"},
		{"1 5 3\n0 5:1\n", 2, "feature 5 out of range: the data has 5 features (ids 0..4)"},
		{"1 5 3\n3 1:1\n", 2, "label 3 out of range: the data has 3 labels"},
		{"1 5 3\n0 1:abc\n", 2, `value "abc" is not a number`},
		{"1 5 3\n0 1:1e999\n", 2, "not finite"},
		{"1 5 3\n0 1:nan\n", 2, "not finite"},
		{"1 5 3\n0 1:1 1:2\n", 2, "duplicate feature 1"},
		{"1 5 3\n0,0 1:1\n", 2, "duplicate label 0"},
		{"1 5 3\n0, 1:1\n", 2, "ends with a comma"},
		{"1 5 3\n0,,1 1:1\n", 2, `label "" is not`},
		{"1 5 3\n-1 1:1\n", 2, `label "-1" is not`},
		{"1 5 3\n0 1\n", 2, "not of the form id:value"},
		{"1 5 3\n0 x:1\n", 2, `feature id "x"`},
		{"1 5 3\n0 1:\n", 2, `value "" is not a number`},
	} {
		_, err := ReadXC(strings.NewReader(c.in), "f.txt")
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, ErrFormat) {
			t.Errorf("%q: error %v, want a ParseError", c.in, err)
			continue
		}
		if pe.File != "f.txt" || pe.Line != c.line || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%q: got %s, want line %d and %q", c.in, err, c.line, c.msg)
		}
	}
}

func TestReadLibSVM(t *testing.T) {
	in := "1,0 1:0.5 3:2\n\n2 2:1\n\n"
	d, err := ReadLibSVM(strings.NewReader(in), "f.svm", LibSVMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 1-based ids 1..3 become 0..2; the inner blank line is an empty point.
	wantX := sparse.CSR{Rows: 3, Cols: 3, Indptr: []int64{0, 2, 2, 3}, Indices: []int32{0, 2, 1}, Values: []float32{0.5, 2, 1}}
	wantY := sparse.CSR{Rows: 3, Cols: 3, Indptr: []int64{0, 2, 2, 3}, Indices: []int32{1, 0, 2}}
	if !reflect.DeepEqual(d.X, wantX) || !reflect.DeepEqual(d.Y, wantY) {
		t.Fatalf("got X %+v Y %+v", d.X, d.Y)
	}
	_, err = ReadLibSVM(strings.NewReader("0 0:1\n"), "f.svm", LibSVMOptions{})
	if err == nil || !strings.Contains(err.Error(), "f.svm:1: feature id 0, but a libSVM file's feature ids start at 1") {
		t.Fatalf("error %v", err)
	}
	d, err = ReadLibSVM(strings.NewReader("0 0:1\n"), "f.svm", LibSVMOptions{ZeroBasedFeatures: true, Features: 10, Labels: 4})
	if err != nil || d.Features() != 10 || d.Labels() != 4 {
		t.Fatalf("fixed dims: %v %+v", err, d)
	}
}

func TestParseFloatMatchesStrconv(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "1", "0.5", ".5", "5.", "+3.25", "1e5", "1E-5", "123456789012345678",
		"1234567890123456789", "12345678901234567890", "0.000001", "3.4028235e38", "1e-45",
		"9007199254740993", "0.1", "2.2250738585072014e-308", "1e22", "1e23", "0x1p-2",
		"00012.5000", "-7.25e+2",
	} {
		want, err := strconv.ParseFloat(s, 64)
		got, ok := parseFloat([]byte(s))
		if err != nil || !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("parseFloat(%q) = %v %v, want %v %v", s, got, ok, want, err)
		}
	}
	for _, s := range []string{"", ".", "e5", "1e", "1.2.3", "--1", "1x", "abc"} {
		if _, ok := parseFloat([]byte(s)); ok {
			t.Errorf("parseFloat(%q) accepted", s)
		}
	}
}

func TestReadAutoDetectsFormatAndGzip(t *testing.T) {
	train, _, err := Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 4880 || train.Features() != 1836 || train.Labels() != 159 {
		t.Fatalf("bundled bibtex train: %d points, %d features, %d labels", train.Len(), train.Features(), train.Labels())
	}
	d, err := Read(strings.NewReader("1,2 3:1\n"), "x", Auto)
	if err != nil || d.Features() != 3 || d.Labels() != 3 {
		t.Fatalf("libSVM autodetect: %v %+v", err, d)
	}
}
