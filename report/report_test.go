package report

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/testdata"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
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

// svgFigure is what the tests read back from an SVG that Save wrote, in
// points with the origin at the bottom left (gonum/plot's coordinates).
type svgFigure struct {
	w, h  float64
	texts []svgText
	// data is the data area: the extent of the grid, which gonum/plot
	// draws across it from axis to axis.
	data struct{ minX, maxX, minY, maxY float64 }
}

type svgText struct {
	x, y, size float64 // x is the left end and y the baseline
	s          string
}

// width measures the text in the font the SVG names (Liberation Serif,
// gonum/plot's default) at its size.
func (t svgText) width() float64 {
	sty := plot.New().Title.TextStyle
	sty.Font.Size = vg.Length(t.size)
	return float64(sty.Width(t.s))
}

var (
	svgSize  = regexp.MustCompile(`<svg width="([0-9.]+)pt" height="([0-9.]+)pt"`)
	svgText_ = regexp.MustCompile(`(?s)<text x="([-0-9.e]+)" y="([-0-9.e]+)" transform="scale\(1, -1\)"\s*style="[^"]*font-size:([0-9.]+)px"\s*>([^<]*)</text>`)
	svgGrid  = regexp.MustCompile(`<path d="M([-0-9.e]+),([-0-9.e]+)L([-0-9.e]+),([-0-9.e]+)" style="fill:none;stroke:#808080;stroke-width:0.25"`)
)

func readSVG(t *testing.T, path string) svgFigure {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return v
	}
	var f svgFigure
	m := svgSize.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no <svg> size", path)
	}
	f.w, f.h = num(string(m[1])), num(string(m[2]))
	for _, m := range svgText_.FindAllSubmatch(b, -1) {
		// The text is flipped back upright by its transform: its y is the
		// baseline's, negated.
		f.texts = append(f.texts, svgText{x: num(string(m[1])), y: -num(string(m[2])), size: num(string(m[3])), s: html.UnescapeString(string(m[4]))})
	}
	grid := svgGrid.FindAllSubmatch(b, -1)
	if len(grid) == 0 {
		t.Fatalf("%s: no grid lines, so no data area to check against", path)
	}
	d := &f.data
	d.minX, d.minY, d.maxX, d.maxY = math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, g := range grid {
		for _, xy := range [][2][]byte{{g[1], g[2]}, {g[3], g[4]}} {
			x, y := num(string(xy[0])), num(string(xy[1]))
			d.minX, d.maxX = min(d.minX, x), max(d.maxX, x)
			d.minY, d.maxY = min(d.minY, y), max(d.maxY, y)
		}
	}
	return f
}

// text returns the SVG's text element that reads s.
func (f svgFigure) text(t *testing.T, s string) svgText {
	t.Helper()
	for _, x := range f.texts {
		if x.s == s {
			return x
		}
	}
	t.Fatalf("the figure has no text %q", s)
	return svgText{}
}

// ramps are series that end at the top right of the data, where gonum/plot
// would put its legend, with long names.
func ramps(n int) []Series {
	ss := make([]Series, n)
	for k := range ss {
		ss[k].Name = fmt.Sprintf("strategy %d, 16 workers, batch 256", k)
		for i := 0; i <= 10; i++ {
			ss[k].X = append(ss[k].X, float64(i))
			ss[k].Y = append(ss[k].Y, float64(i*(k+1)))
		}
	}
	return ss
}

// The legend lies right of the data area, whole within the canvas, so it
// covers no line, however many entries it has; the axis labels are drawn as
// given.
func TestLegendOutsideData(t *testing.T) {
	for _, n := range []int{1, 5, 40} {
		path := filepath.Join(t.TempDir(), "fig.svg")
		p := Plot{Title: "t", X: "training time (virtual seconds)", Y: "P@1", Series: ramps(n)}
		if err := p.Save(path); err != nil {
			t.Fatal(err)
		}
		f := readSVG(t, path)
		f.text(t, p.X)
		f.text(t, p.Y)
		for _, s := range p.Series {
			e := f.text(t, s.Name)
			switch {
			case e.x <= f.data.maxX:
				t.Errorf("%d series: legend entry %q starts at x=%.1f, inside the data area (to x=%.1f)", n, s.Name, e.x, f.data.maxX)
			case e.x+e.width() > f.w:
				t.Errorf("%d series: legend entry %q ends at x=%.1f, past the canvas's %.1f", n, s.Name, e.x+e.width(), f.w)
			case e.y < 0 || e.y+e.size > f.h:
				t.Errorf("%d series: legend entry %q at y=%.1f, off the canvas of height %.1f", n, s.Name, e.y, f.h)
			}
		}
	}
}

// A title wider than the plot is wrapped, every line whole within the
// canvas and above the data; none of its words is lost.
func TestLongTitleFits(t *testing.T) {
	title := "Bibtex, 4 devices, real time: P@1 against wall-clock seconds, evaluation excluded, for every strategy and learning rate (Fig. 8)"
	for _, series := range [][]Series{nil, ramps(1)} {
		path := filepath.Join(t.TempDir(), "fig.svg")
		if err := (Plot{Title: title, X: "epochs", Y: "P@1", Series: series}).Save(path); err != nil {
			t.Fatal(err)
		}
		f := readSVG(t, path)
		var lines []svgText
		for _, x := range f.texts {
			if x.y > f.data.maxY && x.size == 12 {
				lines = append(lines, x)
			}
		}
		sort.Slice(lines, func(i, j int) bool { return lines[i].y > lines[j].y })
		var words []string
		for _, l := range lines {
			if l.x < 0 || l.x+l.width() > f.w {
				t.Errorf("title line %q spans x=%.1f to %.1f, beyond the canvas's 0 to %.1f", l.s, l.x, l.x+l.width(), f.w)
			}
			if l.y+l.size > f.h {
				t.Errorf("title line %q is cut at the top: baseline %.1f of %.1f", l.s, l.y, f.h)
			}
			words = append(words, strings.Fields(l.s)...)
		}
		if got := strings.Join(words, " "); got != title {
			t.Errorf("the title reads %q, want %q", got, title)
		}
		if len(lines) < 2 {
			t.Errorf("a title of %d characters on %d line(s)", len(title), len(lines))
		}
	}
}

// wrapText keeps every line within the width and balances two lines.
func TestWrapText(t *testing.T) {
	sty := plot.New().Title.TextStyle
	title := "GEM, effective batch 256: training loss against time"
	width := sty.Width(title) * 0.8
	lines := wrapText(title, sty, width)
	if len(lines) != 2 || strings.Join(lines, " ") != title {
		t.Fatalf("wrapped into %q", lines)
	}
	for _, l := range lines {
		if sty.Width(l) > width {
			t.Errorf("line %q is wider than %v", l, width)
		}
		if sty.Width(l) < width/2 {
			t.Errorf("unbalanced lines %q", lines)
		}
	}
	if got := wrapText("one\ntwo three", sty, 1000); strings.Join(got, "|") != "one|two three" {
		t.Errorf("newlines: %q", got)
	}
}

// Figure writes name.svg and name.png; the PNG decodes, at 150 dots per
// inch of the SVG's size.
func TestFigureWritesSVGAndPNG(t *testing.T) {
	dir := t.TempDir()
	d, err := Create(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Abort()
	if err := d.Figure("fig", Plot{Title: "t", X: "epochs", Y: "P@1", Series: ramps(3)}); err != nil {
		t.Fatal(err)
	}
	f := readSVG(t, filepath.Join(dir, "fig.svg"))
	r, err := os.Open(filepath.Join(dir, "fig.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	img, err := png.Decode(r)
	if err != nil {
		t.Fatalf("fig.png: %v", err)
	}
	b := img.Bounds()
	wantW, wantH := f.w/72*pngDPI, f.h/72*pngDPI
	if math.Abs(float64(b.Dx())-wantW) > 1 || math.Abs(float64(b.Dy())-wantH) > 1 {
		t.Errorf("fig.png is %d×%d pixels, want %.0f×%.0f (the SVG's %.0f×%.0f pt at %d dpi)", b.Dx(), b.Dy(), wantW, wantH, f.w, f.h, pngDPI)
	}
	if b.Dx() < 800 {
		t.Errorf("fig.png is %d pixels wide: too small to read", b.Dx())
	}
	// One layout drawn twice gives what each format's own layout gives.
	for _, ext := range []string{".svg", ".png"} {
		alone := filepath.Join(t.TempDir(), "alone"+ext)
		if err := (Plot{Title: "t", X: "epochs", Y: "P@1", Series: ramps(3)}).Save(alone); err != nil {
			t.Fatal(err)
		}
		a, err1 := os.ReadFile(alone)
		b, err2 := os.ReadFile(filepath.Join(dir, "fig"+ext))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("fig%s differs from the plot saved alone (%v, %v)", ext, err1, err2)
		}
	}
	d.Abort() // no report.md: the folder holds the figures alone
	if got := strings.Join(testdata.Entries(t, dir), ","); got != "fig.png,fig.svg" {
		t.Errorf("the folder holds %s", got)
	}
}

func ExamplePlot_SaveSVGAndPNG() {
	dir, err := os.MkdirTemp("", "figure")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	p := Plot{
		Title: "bibtex: P@1 against epochs",
		X:     "epochs",
		Y:     "P@1",
		Series: []Series{
			{Name: "sync ×4", X: []float64{0.5, 1, 1.5, 2}, Y: []float64{0.21, 0.33, 0.38, 0.40}},
			{Name: "adaptive ×4", X: []float64{0.5, 1, 1.5, 2}, Y: []float64{0.25, 0.36, 0.41, 0.43}},
		},
	}
	if err := p.SaveSVGAndPNG(filepath.Join(dir, "p1")); err != nil {
		fmt.Println(err)
		return
	}
	names, _ := filepath.Glob(filepath.Join(dir, "p1.*"))
	for _, n := range names {
		fmt.Println(filepath.Base(n))
	}
	// Output:
	// p1.png
	// p1.svg
}
