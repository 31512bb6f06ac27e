package data

import (
	"bytes"
	"math"
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
