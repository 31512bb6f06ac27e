package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/testdata"
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

// An aborted report leaves no report.md and no temporary file; one written
// before it, under --force, is left as it was. Abort after Close does
// nothing.
func TestReportAbort(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	d, err := Create(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	d.Printf("# Half a report\n")
	d.Abort()
	d.Abort()
	if names := testdata.Entries(t, dir); len(names) != 0 {
		t.Fatalf("an aborted report left %v", names)
	}
	if err := d.Close(); err == nil {
		t.Fatal("Close after Abort succeeded")
	}

	d, err = Create(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	d.Printf("# Complete\n")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d.Abort()
	d, err = Create(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	d.Printf("# Interrupted\n")
	d.Abort()
	if md, _ := os.ReadFile(filepath.Join(dir, "report.md")); string(md) != "# Complete\n" {
		t.Fatalf("report.md after an aborted overwrite: %q", md)
	}
	if names := testdata.Entries(t, dir); len(names) != 1 {
		t.Fatalf("the folder holds %v, want report.md only", names)
	}
}

var errFull = errors.New("no space left on device")

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after <= 0 {
		return 0, errFull
	}
	w.after--
	return len(p), nil
}

// A write error of Printf or Table is returned by Close, which then leaves
// no report.md and no temporary file.
func TestReportWriteError(t *testing.T) {
	for _, fail := range []func(d *Dir){
		func(d *Dir) { d.Printf("# Title\n") },
		func(d *Dir) { d.Table(&Table{Header: []string{"a"}}) },
	} {
		dir := t.TempDir()
		d, err := Create(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		d.Printf("fits\n")
		d.w = &failingWriter{}
		fail(d)
		d.w = d.md
		d.Printf("written after the failure\n")
		if err := d.Close(); !errors.Is(err, errFull) {
			t.Fatalf("Close after a failed write: %v, want the write's error", err)
		}
		if names := testdata.Entries(t, dir); len(names) != 0 {
			t.Fatalf("a report that failed to write left %v", names)
		}
	}
}

// A figure is written whole under its name or not at all; a link in its
// place is an error and stays a link.
func TestFigureAtomic(t *testing.T) {
	dir := t.TempDir()
	p := Plot{Title: "t", Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{1, 2}}}}
	target := filepath.Join(dir, "elsewhere.svg")
	os.WriteFile(target, []byte("not a figure"), 0o644)
	link := filepath.Join(dir, "fig.svg")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := p.Save(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a figure over a link: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "not a figure" {
		t.Fatalf("the link's target was written: %q", b)
	}
	if err := p.Save(filepath.Join(dir, "fig.nope")); err == nil {
		t.Fatal("a figure in an unknown format")
	}
	if err := p.Save(filepath.Join(dir, "ok.svg")); err != nil {
		t.Fatal(err)
	}
	names := testdata.Entries(t, dir)
	if strings.Join(names, ",") != "elsewhere.svg,fig.svg,ok.svg" {
		t.Fatalf("the folder holds %v", names)
	}
}
