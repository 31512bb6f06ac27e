package data

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/progress/stage/stagetest"
)

// Generating a folder tells the Reporter of each split's points as they
// are written, up to the split's size.
func TestGenerateReportsPoints(t *testing.T) {
	s := HandMadeStandIn()
	s.Train, s.Test = 2*genCheck+5, 10
	var got stagetest.Recorder
	if _, _, err := s.GenerateDirWith(context.Background(), t.TempDir(), 1, GenOptions{Progress: &got}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"generating the training split (points)", "generating the test split (points)"}; !slices.Equal(got.Names, want) {
		t.Fatalf("stages %q, want %q", got.Names, want)
	}
	if fmt.Sprint(got.Total, got.Done) != fmt.Sprintf("[%d 10] [[0 %d %d] [0]]", 2*genCheck+5, genCheck, 2*genCheck) {
		t.Errorf("totals and work done: %v %v", got.Total, got.Done)
	}
	var p stagetest.Recorder
	prof := Profiles[2].Scaled(0.05)
	if _, _, err := GenerateDirWith(context.Background(), t.TempDir(), prof, 1, GenOptions{Progress: &p}); err != nil {
		t.Fatal(err)
	}
	if len(p.Names) != 2 || p.Total[0] != float64(prof.Train) || p.Total[1] != float64(prof.Test) {
		t.Errorf("a profile's stages %q, totals %v", p.Names, p.Total)
	}
}

// The estimate of the bytes written is close to what is written, and sets
// beyond the free space (or MaxGenBytes) are refused before any file or
// folder is made, with the estimate and the space.
func TestGenerateChecksTheSpace(t *testing.T) {
	s := HandMadeStandIn()
	var train, test bytes.Buffer
	if _, _, err := s.GenerateContext(context.Background(), 1, &train, &test); err != nil {
		t.Fatal(err)
	}
	if est, got := s.EstimateBytes(), float64(train.Len()+test.Len()); est < 0.8*got || est > 1.25*got {
		t.Errorf("a stand-in: estimated %.0f bytes, wrote %.0f", est, got)
	}
	train.Reset()
	test.Reset()
	p := Profiles[2].Scaled(0.1)
	if _, _, err := GenerateContext(context.Background(), p, 1, &train, &test); err != nil {
		t.Fatal(err)
	}
	if est, got := p.EstimateBytes(), float64(train.Len()+test.Len()); est < 0.8*got || est > 1.25*got {
		t.Errorf("a profile: estimated %.0f bytes, wrote %.0f", est, got)
	}
	dir := filepath.Join(t.TempDir(), "new", "sets")
	huge := s.WithPoints(1<<31 - 1)
	huge.FeaturesPerPoint = slices.Clone(huge.FeaturesPerPoint)
	for i := range huge.FeaturesPerPoint {
		huge.FeaturesPerPoint[i] = 400
	}
	_, _, err := huge.GenerateDirWith(context.Background(), dir, 1, GenOptions{})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "TB, more than the 1.1 TB hetsgd writes at most") {
		t.Fatalf("2^31 points of 400 features: %v", err)
	}
	if _, serr := os.Stat(filepath.Dir(dir)); serr == nil {
		t.Errorf("a refused set made its folder")
	}
	free, ok := freeBytes(t.TempDir())
	if !ok {
		t.Skip("this system does not say its free space")
	}
	// Points enough for a little more than the free space, under MaxGenBytes.
	n := int(float64(free)/(s.EstimateBytes()/float64(s.Train+s.Test))*1.1) + 1
	if float64(free)*1.1 >= MaxGenBytes {
		t.Skipf("%d bytes free: more than the bound", free)
	}
	_, _, err = s.WithPoints(n).GenerateDirWith(context.Background(), dir, 1, GenOptions{})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "free") {
		t.Fatalf("%d points, beyond %d bytes free: %v", n, free, err)
	}
}

func TestMeanDigits(t *testing.T) {
	for _, c := range []struct {
		n    int
		want float64
	}{{1, 1}, {10, 1}, {11, 11.0 / 11 * 1}, {100, (10 + 2*90) / 100.0}, {1000, (10 + 2*90 + 3*900) / 1000.0}} {
		if c.n == 11 {
			c.want = (10 + 2) / 11.0
		}
		if got := meanDigits(c.n); got != c.want {
			t.Errorf("meanDigits(%d) = %v, want %v", c.n, got, c.want)
		}
	}
	if got := byteSize(812e6); got != "812 MB" {
		t.Errorf("byteSize: %q", got)
	}
	if got := byteSize(1.1e12); got != "1.1 TB" {
		t.Errorf("byteSize: %q", got)
	}
}

// A stand-in file with values of the right type but no sense is refused,
// naming the file and the field: dimensions no machine holds, per-point
// counts beyond the dimensions, and real-set statistics outside what they
// measure.
func TestStandInFileOutOfSense(t *testing.T) {
	good := HandMadeStandIn()
	good.Real = &Summary{Points: 3000, AvgLabels: 3.5, AvgFeatures: 30, TopLabelShare: 0.2, HeadShare: 0.4, CoOccurrence: 1.2, CoOccurrencePoints: 3000, ProxyP1: 0.5}
	var b bytes.Buffer
	if err := good.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadStandIn(bytes.NewReader(b.Bytes()), "fit.json"); err != nil {
		t.Fatalf("the good file: %v", err)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"labels": 200`, `"labels": 2000000000`, "labels: 2000000000, more than the 16777216"},
		{`"features": 500`, `"features": 1e9`, "features"}, // not a whole number: the decoder's
		{`"features": 500`, `"features": 900000000`, "features: 900000000, more than"},
		{`"points": 3000`, `"points": -5`, "real.points: -5"},
		{`"top_label_share": 0.2`, `"top_label_share": 1.5`, "real.top_label_share: 1.5, want a share of the points in [0, 1]"},
		{`"head_share": 0.4`, `"head_share": -0.1`, "real.head_share: -0.1"},
		{`"co_occurrence": 1.2`, `"co_occurrence": 1e300`, "real.co_occurrence: 1e+300"},
		{`"avg_labels": 3.5`, `"avg_labels": -3`, "real.avg_labels: -3"},
		{`"proxy_p1": 0.5`, `"proxy_p1": 7`, "real.proxy_p1: 7"},
	} {
		in := strings.Replace(b.String(), c.from, c.to, 1)
		if in == b.String() {
			t.Fatalf("%s is not in the file", c.from)
		}
		_, err := ReadStandIn(strings.NewReader(in), "fit.json")
		if err == nil || !strings.Contains(err.Error(), "fit.json") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.to, err, c.want)
		}
	}
	// A point with more labels than the stand-in has.
	over := *good
	over.LabelsPerPoint = slices.Clone(good.LabelsPerPoint)
	over.LabelsPerPoint[len(over.LabelsPerPoint)-1] = 201
	if err := over.Check(); err == nil || !strings.Contains(err.Error(), "labels_per_point[128]: 201, more than the stand-in's 200 labels") {
		t.Errorf("201 labels a point of 200: %v", err)
	}
}
