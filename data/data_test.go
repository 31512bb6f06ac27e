package data

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/sparse"

	"github.com/hetsgd/hetsgd/internal/testdata"
)

func TestBundledChecksums(t *testing.T) {
	want := map[string]string{
		"train": "b4ea0ea4064004fa7b9a83fba84563ac3cac1971462a3633deb58f5d968f8d54",
		"test":  "8362a26a8a35e23a9da6f271ff4ed077152907cb11ee4646daf34d21cce5b32b",
	}
	for split, sum := range want {
		f, err := bundled.Open("bundled/bibtex/" + split + ".txt.gz")
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, zr); err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != sum {
			t.Errorf("bundled bibtex %s: sha256 %s, want %s (PROVENANCE.md)", split, got, sum)
		}
	}
}

// The reference files load with the sizes the dataset README states, and the
// Delicious rows without labels are kept.
func TestReferenceDatasets(t *testing.T) {
	for _, c := range []struct {
		name                       string
		train, test, feats, labels int
	}{
		{"bibtex", 4880, 2515, 1836, 159},
		{"delicious", 12920, 3185, 500, 983},
	} {
		dir := testdata.Dir(t, c.name)
		train, test, err := LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if train.Len() != c.train || test.Len() != c.test || train.Features() != c.feats || train.Labels() != c.labels {
			t.Errorf("%s: %d/%d points, %d features, %d labels", c.name, train.Len(), test.Len(), train.Features(), train.Labels())
		}
		for _, d := range []*Dataset{train, test} {
			if err := d.X.Validate(); err != nil {
				t.Error(err)
			}
			if err := d.Y.Validate(); err != nil {
				t.Error(err)
			}
		}
		if c.name == "delicious" {
			if s := Describe(train, 3); s.UnlabeledPoints == 0 {
				t.Errorf("delicious train: no unlabeled points, want the lines starting with a space")
			}
		}
	}
}

func TestMNIST(t *testing.T) {
	dir := testdata.Dir(t, "mnist")
	train, test, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 60000 || test.Len() != 10000 || train.Features() != 784 || train.Labels() != 10 {
		t.Fatalf("mnist: %d/%d points, %d features, %d labels", train.Len(), test.Len(), train.Features(), train.Labels())
	}
	if err := train.X.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, v := range train.X.Values {
		if !(v > 0 && v <= 1) {
			t.Fatalf("pixel value %v outside (0,1]", v)
		}
	}
	if _, _, err := LoadMNIST(filepath.Join(dir, "nope")); err == nil {
		t.Fatal("missing folder accepted")
	}
}

func TestSamplerAndBatch(t *testing.T) {
	train, _, err := Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := NewSampler(train.Len(), 7), NewSampler(train.Len(), 7)
	b1, b2 := NewBatch(train, 300), NewBatch(train, 300)
	seen := make([]int, train.Len())
	for range 3 * train.Len() / 300 { // three epochs, crossing boundaries mid-batch
		b1.Draw(train, s1, 300)
		b2.Draw(train, s2, 300)
		for i, r := range b1.Rows {
			if b2.Rows[i] != r {
				t.Fatal("same seed, different rows")
			}
			seen[r]++
		}
	}
	// Epochs are permutations: two whole epochs and part of a third were
	// drawn, so every row came two or three times.
	if 3*train.Len()/300*300 < 2*train.Len() {
		t.Fatal("test drew fewer than two epochs")
	}
	for r, c := range seen {
		if c != 2 && c != 3 {
			t.Fatalf("row %d drawn %d times in two and a bit epochs", r, c)
		}
	}
	// Within the first full epoch every row appears exactly once.
	s := NewSampler(train.Len(), 9)
	rows := make([]int32, train.Len())
	s.Next(rows)
	count := make([]int, train.Len())
	for _, r := range rows {
		count[r]++
	}
	for r, c := range count {
		if c != 1 {
			t.Fatalf("row %d dealt %d times in one epoch", r, c)
		}
	}
	if s.Epochs() != 1 {
		t.Fatalf("Epochs = %v after one pass", s.Epochs())
	}
	// The gathered batch holds exactly the dataset's rows.
	b1.Draw(train, s1, 17)
	for i, r := range b1.Rows {
		gi, gv := b1.X.Row(i)
		wi, wv := train.X.Row(int(r))
		if len(gi) != len(wi) || len(gv) != len(wv) {
			t.Fatalf("batch row %d differs from dataset row %d", i, r)
		}
		for k := range gi {
			if gi[k] != wi[k] || gv[k] != wv[k] {
				t.Fatalf("batch row %d differs from dataset row %d", i, r)
			}
		}
	}
	if a := testing.AllocsPerRun(50, func() { b1.Draw(train, s1, 300) }); !race.Enabled && a != 0 {
		t.Fatalf("Draw allocates %v times", a)
	}
}

// An empty training or test file is an error that names it.
func TestLoadPairRejectsEmptySets(t *testing.T) {
	dir := t.TempDir()
	full, empty := filepath.Join(dir, "full.txt"), filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(full, []byte("1 5 3\n0 1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("0 5 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{empty, full}, {full, empty}} {
		_, _, err := LoadPair(c[0], c[1], XC)
		if err == nil || !strings.Contains(err.Error(), empty+": no points") {
			t.Errorf("LoadPair(%s, %s): %v, want an error naming %s", c[0], c[1], err, empty)
		}
	}
}

// A sampler set to any position deals what one that dealt its way there
// deals next, forward across epochs and backward to an earlier one.
func TestSamplerSeek(t *testing.T) {
	const n = 97
	ref := NewSampler(n, 11)
	stream := make([]int32, 5*n)
	ref.Next(stream)
	s := NewSampler(n, 11)
	for _, at := range []int64{0, 3, 96, 97, 98, 250, 10, 0, 400, 194} {
		s.SetPos(at)
		if s.Pos() != at {
			t.Fatalf("Pos after SetPos(%d) = %d", at, s.Pos())
		}
		got := make([]int32, 60)
		s.Next(got)
		for i, r := range got {
			if want := stream[at+int64(i)]; r != want {
				t.Fatalf("after SetPos(%d), row %d is %d, the stream has %d", at, i, r, want)
			}
		}
	}
	if a := testing.AllocsPerRun(10, func() { s.SetPos(s.Pos() + 150) }); !race.Enabled && a != 0 {
		t.Fatalf("SetPos forward allocates %v times", a)
	}
}

// The fingerprint follows the content, not the name, and sees a single
// changed value.
func TestFingerprint(t *testing.T) {
	a, _, err := Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := Bundled("bibtex")
	b.Name = "elsewhere"
	if a.Fingerprint() != b.Fingerprint() {
		t.Fatal("the same data gave two fingerprints")
	}
	b.X.Values = append([]float32(nil), b.X.Values...)
	b.X.Values[1234] += 1e-3
	if a.Fingerprint() == b.Fingerprint() {
		t.Fatal("a changed value kept the fingerprint")
	}
}

// WriteXC writes what ReadXC reads back, value for value: points without
// labels, without features or with neither included.
func TestWriteXCRoundTrip(t *testing.T) {
	d := &Dataset{Name: "t",
		X: sparse.CSR{Rows: 5, Cols: 5, Indptr: []int64{0, 2, 3, 3, 4, 4}, Indices: []int32{0, 4, 2, 1}, Values: []float32{0.1, 1.0 / 3, 2.5e-7, 7}},
		Y: sparse.CSR{Rows: 5, Cols: 3, Indptr: []int64{0, 2, 2, 3, 3, 3}, Indices: []int32{0, 2, 1}}}
	var b bytes.Buffer
	if err := WriteXC(&b, d); err != nil {
		t.Fatal(err)
	}
	got, err := ReadXC(&b, "t")
	if err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	if !reflect.DeepEqual(got.X, d.X) || !reflect.DeepEqual(got.Y, d.Y) {
		t.Errorf("read back %+v %+v, want %+v %+v", got.X, got.Y, d.X, d.Y)
	}
}
