package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	d, err := Create(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	d.Printf("# Title\n\n")
	tb := &Table{Header: []string{"a", "b"}}
	tb.Add("x", 0.123456)
	tb.Add(3, 2.0)
	d.Table(tb)
	if err := d.Figure("fig", Plot{Title: "t", X: "x", Y: "y", Series: []Series{{Name: "s", X: []float64{1, 2, 3}, Y: []float64{1, 4, 9}}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"| a | b |", "| x | 0.1235 |", "| 3 | 2 |", "![t](fig.svg)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "fig.svg"))
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Fatalf("figure: %v", err)
	}
	if _, err := Create(dir, false); err == nil {
		t.Fatal("an existing report was not protected")
	}
}
