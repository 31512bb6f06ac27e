package data

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerateDeterministicAndOnProfile(t *testing.T) {
	p, err := LookupProfile("amazon-670k")
	if err != nil {
		t.Fatal(err)
	}
	p = p.Scaled(0.005)
	var tr1, te1, tr2, te2 bytes.Buffer
	s1, _, err := Generate(p, 7, &tr1, &te1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Generate(p, 7, &tr2, &te2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tr1.Bytes(), tr2.Bytes()) || !bytes.Equal(te1.Bytes(), te2.Bytes()) {
		t.Fatal("same seed, different bytes")
	}
	var tr3, te3 bytes.Buffer
	Generate(p, 8, &tr3, &te3)
	if bytes.Equal(tr1.Bytes(), tr3.Bytes()) {
		t.Fatal("different seeds, same bytes")
	}
	// The output parses, and its statistics are those reported and close
	// to the profile's.
	d, err := ReadXC(bytes.NewReader(tr1.Bytes()), "synthetic")
	if err != nil {
		t.Fatal(err)
	}
	st := Describe(d, 3)
	if st.Points != p.Train || st.Features != p.Features || st.Labels != p.Labels {
		t.Fatalf("shape %d×%d×%d, want %d×%d×%d", st.Points, st.Features, st.Labels, p.Train, p.Features, p.Labels)
	}
	if math.Abs(st.NNZ.Mean-s1.AvgNNZ) > 1e-9 || math.Abs(st.LabelsPerPoint.Mean-s1.AvgLabels) > 1e-9 {
		t.Fatalf("reported stats %+v disagree with the file's %+v", s1, st)
	}
	if math.Abs(st.NNZ.Mean-p.AvgNNZ)/p.AvgNNZ > 0.05 || math.Abs(st.LabelsPerPoint.Mean-p.AvgLabels)/p.AvgLabels > 0.05 {
		t.Fatalf("nnz %.2f labels %.2f per point, profile %.2f and %.2f", st.NNZ.Mean, st.LabelsPerPoint.Mean, p.AvgNNZ, p.AvgLabels)
	}
	// Power law: the most frequent label is far above the average.
	avg := float64(p.Train) * p.AvgLabels / float64(p.Labels)
	if float64(st.Head[0].Count) < 20*avg {
		t.Fatalf("most frequent label on %d points, average %.1f: no power law", st.Head[0].Count, avg)
	}
	// Rows have unit L2 norm.
	for i := 0; i < d.Len(); i++ {
		_, v := d.X.Row(i)
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-3 {
			t.Fatalf("row %d has squared norm %v", i, n)
		}
	}
}

func TestGenerateDirKeepsExistingFiles(t *testing.T) {
	dir := t.TempDir()
	p, _ := LookupProfile("bibtex")
	p = p.Scaled(0.05)
	if _, _, err := GenerateDir(dir, p, 1, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := GenerateDir(dir, p, 2, false); err == nil {
		t.Fatal("existing dataset overwritten without --force")
	}
	if _, _, err := GenerateDir(dir, p, 2, true); err != nil {
		t.Fatal(err)
	}
	if _, err := LookupProfile("imagenet"); err == nil {
		t.Fatal("unknown profile accepted")
	}
}

// A generation that is stopped leaves the folder as it was: no partial
// file, no new train.txt beside an old test.txt, no temporary file.
func TestGenerateDirStopped(t *testing.T) {
	p, _ := LookupProfile("bibtex")
	p = p.Scaled(0.5) // 2440 training points: the generator checks at 0, 1024 and 2048
	dir := t.TempDir()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := GenerateDirContext(canceled, dir, p, 1, false); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a cancelled generation left %v", entries)
	}
	if _, _, err := GenerateDir(dir, p, 1, false); err != nil {
		t.Fatal(err)
	}
	before := readDir(t, dir)
	// Stopped in the training set, then in the test set (the training set
	// whole but not yet in place).
	for _, stop := range []int64{2, 4} {
		_, _, err := GenerateDirContext(newStopAfter(stop), dir, p, 2, true)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped at check %d: %v", stop, err)
		}
		if after := readDir(t, dir); !maps.Equal(after, before) {
			t.Fatalf("stopped at check %d: the folder changed: %d files", stop, len(after))
		}
	}
	// Unstopped, it replaces both, and removes what earlier versions left
	// when stopped.
	os.WriteFile(filepath.Join(dir, "train.txt.partial"), []byte("1 2 3\n"), 0o644)
	if _, _, err := GenerateDirContext(context.Background(), dir, p, 2, true); err != nil {
		t.Fatal(err)
	}
	after := readDir(t, dir)
	if len(after) != 2 || after["train.txt"] == before["train.txt"] || after["test.txt"] == before["test.txt"] {
		t.Fatalf("seed 2 over seed 1: files %d, changed %v %v", len(after), after["train.txt"] != before["train.txt"], after["test.txt"] != before["test.txt"])
	}
}

// readDir returns the names and contents of the files in dir.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

// GenerateContext stops its writers too, and names what it was making.
func TestGenerateContextStopped(t *testing.T) {
	p, _ := LookupProfile("bibtex")
	var tr, te bytes.Buffer
	_, _, err := GenerateContext(newStopAfter(1), p, 1, &tr, &te)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "bibtex: stopped at point 1024 of 4880") {
		t.Fatalf("%v", err)
	}
}

// A profile with a head share puts its most frequent label on about that
// share of the points, at any scale; without it the exponent is the
// profile's.
func TestTopLabelShare(t *testing.T) {
	p, err := LookupProfile("delicious-200k")
	if err != nil {
		t.Fatal(err)
	}
	for _, scale := range []float64{0.005, 0.02} {
		q := p.Scaled(scale)
		st, _, err := Generate(q, 3, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		share := float64(st.MaxLabelFreq) / float64(st.Points)
		if math.Abs(share-q.TopLabelShare) > 0.04 {
			t.Errorf("scale %g: s = %.3f puts the head label on %.3f of the points, want %.2f", scale, q.LabelExponent(), share, q.TopLabelShare)
		}
		// Zipf(0.9), the profile's exponent, would put it on nearly all.
		q.TopLabelShare = 0
		if q.LabelExponent() != 0.9 {
			t.Errorf("without a head share the exponent is %v, want the profile's 0.9", q.LabelExponent())
		}
		st, _, _ = Generate(q, 3, io.Discard, io.Discard)
		if share := float64(st.MaxLabelFreq) / float64(st.Points); share < 0.95 {
			t.Errorf("scale %g, Zipf 0.9: head on %.3f of the points; the fit is not what lowers it", scale, share)
		}
	}
}
