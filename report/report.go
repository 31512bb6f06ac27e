package report

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/hetsgd/hetsgd/internal/atomicfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one line of a plot.
type Series struct {
	Name string
	X, Y []float64
}

// Plot describes a line plot.
type Plot struct {
	Title, X, Y string
	Series      []Series
	LogX        bool
}

// palette is colour-blind-safe (Okabe–Ito), cycled over series.
var palette = []color.RGBA{
	{0, 114, 178, 255}, {213, 94, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{230, 159, 0, 255}, {86, 180, 233, 255}, {0, 0, 0, 255}, {240, 228, 66, 255},
}

// Save writes the plot as an SVG file (5×3.5 in), or in the format its
// extension names (png, pdf, eps, ...). The file is written under a
// temporary name and renamed, so an interrupted run leaves no half figure;
// a path that exists and is not a regular file is an error.
func (p Plot) Save(path string) error {
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.X.Label.Text = p.X
	pl.Y.Label.Text = p.Y
	pl.Legend.Top = false
	pl.Legend.Left = false
	pl.Add(plotter.NewGrid())
	if p.LogX {
		pl.X.Scale = plot.LogScale{}
		pl.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	for i, s := range p.Series {
		if len(s.X) == 0 {
			continue
		}
		pts := make(plotter.XYs, 0, len(s.X))
		for j := range s.X {
			if p.LogX && !(s.X[j] > 0) {
				continue
			}
			if math.IsNaN(s.Y[j]) || math.IsInf(s.Y[j], 0) {
				continue
			}
			pts = append(pts, plotter.XY{X: s.X[j], Y: s.Y[j]})
		}
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("report: %s: %w", p.Title, err)
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		if i >= len(palette) {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		pl.Add(line)
		pl.Legend.Add(s.Name, line)
	}
	pl.Legend.ThumbnailWidth = vg.Points(14)
	pl.Legend.Padding = vg.Points(1)
	pl.Legend.TextStyle.Font.Size = vg.Points(8)
	pl.Legend.YPosition = draw.PosBottom
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	wt, err := pl.WriterTo(5*vg.Inch, 3.5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("report: %s: %w (name a .svg, .png, .pdf or .eps file)", path, err)
	}
	f, err := atomicfile.Create(path, true)
	if err != nil {
		return fmt.Errorf("report: figure: %w", err)
	}
	defer f.Abort()
	if _, err := wt.WriteTo(f); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Table is a Markdown table.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row of cells formatted with fmt's %v (floats with %.4g).
func (t *Table) Add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case float64:
			row[i] = Float(v)
		case string:
			row[i] = v
		default:
			row[i] = fmt.Sprint(v)
		}
	}
	t.Rows = append(t.Rows, row)
}

// Float formats a number for a table: 4 significant digits, "–" for NaN.
func Float(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.4g", v)
}

// Write renders the table.
func (t *Table) Write(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n|")
	for range t.Header {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Dir is a report folder: a Markdown file and its figures. report.md is
// written under a temporary name and appears, whole, only at Close; figures
// appear as they are made, each whole.
type Dir struct {
	Path string
	md   *atomicfile.File
	w    io.Writer // md (a test's failing writer in its place)
	err  error     // the first write error, returned by Close
	done bool
}

// Create makes the folder (it must not hold a report already, unless
// overwrite) and starts report.md in it.
func Create(path string, overwrite bool) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	name := filepath.Join(path, "report.md")
	f, err := atomicfile.Create(name, overwrite)
	if errors.Is(err, atomicfile.ErrExist) {
		return nil, fmt.Errorf("report: %s already exists (choose another folder, or overwrite it with --force)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return &Dir{Path: path, md: f, w: f}, nil
}

// Printf appends Markdown text. A write error is kept for Close, which
// returns it: the report is written in many small pieces, and a caller
// checking each would gain nothing over one check at the end.
func (d *Dir) Printf(format string, args ...any) {
	if d.err != nil || d.done {
		return
	}
	if _, err := fmt.Fprintf(d.w, format, args...); err != nil {
		d.err = fmt.Errorf("report: %w", err)
	}
}

// Table appends a table followed by a blank line.
func (d *Dir) Table(t *Table) {
	if d.err != nil || d.done {
		return
	}
	if err := t.Write(d.w); err != nil {
		d.err = fmt.Errorf("report: %w", err)
		return
	}
	d.Printf("\n")
}

// Figure saves a plot as name.svg and links it from the report.
func (d *Dir) Figure(name string, p Plot) error {
	if err := p.Save(filepath.Join(d.Path, name+".svg")); err != nil {
		return err
	}
	d.Printf("![%s](%s.svg)\n\n", p.Title, name)
	return nil
}

// Close finishes report.md: it appears under its name, whole. After a write
// error it does not, and Close returns that error; a report.md that was
// there before Create is then left as it was.
func (d *Dir) Close() error {
	if d.done {
		return fmt.Errorf("report: %s already closed or aborted", d.md.Name())
	}
	d.done = true
	if d.err != nil {
		d.md.Abort()
		return d.err
	}
	if err := d.md.Commit(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Abort drops the report: no report.md is written (one that was there
// before Create is left as it was) and no temporary file stays. Figures
// already saved stay. It does nothing after Close, so it can be deferred.
func (d *Dir) Abort() {
	if d.done {
		return
	}
	d.done = true
	d.md.Abort()
}
