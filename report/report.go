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
	"github.com/hetsgd/hetsgd/setting"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one line of a plot.
type Series struct {
	Name string
	X, Y []float64
}

// Plot describes a line plot. Title is wrapped to the figure's width (a
// newline in it starts a line); X and Y label the axes and should name
// their units ("training time (virtual seconds)"). Each series gets a
// colour, and a dashed line after the palette's eight, and a legend entry.
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

// The figure's geometry. The axes and data keep the 5×3.5 in the figures
// always had; the canvas grows around them for the title and the legend
// instead of taking room from the data.
const (
	plotWidth  = 5 * vg.Inch
	plotHeight = 3.5 * vg.Inch
	margin     = vg.Length(6) // points, on every side
	titleGap   = vg.Length(4) // between the title and the plot
	legendGap  = vg.Length(10)
	// fontSlack is the room left for a wider font than the one measured.
	// An SVG names its font (Liberation Serif) without embedding it, which
	// would add half a megabyte to each figure; a viewer without the font
	// draws a substitute: Times New Roman, of the same widths, on most
	// systems, but DejaVu Serif, about 1.3 times as wide, on some Linux
	// ones. The title is wrapped, and the legend given room, for that font,
	// and the title starts at the left margin so that all its slack lies on
	// the side it grows towards: neither is cut in such a viewer either.
	fontSlack = 1.3
	// pngDPI makes a PNG sharp enough to read where it is shown at its
	// pixel size (about 1000 pixels wide); gonum's default, 96, blurs the
	// 9-point legend.
	pngDPI = 150
)

// figure is a Plot laid out: gonum/plot draws the axes and the data, and
// the title and the legend are drawn beside them rather than by gonum/plot,
// which would put the legend over the data and cut a title wider than the
// canvas.
type figure struct {
	pl         *plot.Plot
	legend     plot.Legend
	entries    int
	title      []string // wrapped to the canvas
	titleStyle text.Style
	w, h       vg.Length // the canvas
	plotH      vg.Length // the axes and data, below the title
	legendW    vg.Length
}

// layout builds the plot and measures its title and legend with the fonts
// they are drawn in.
func (p Plot) layout() (*figure, error) {
	pl := plot.New()
	pl.X.Label.Text = p.X
	pl.Y.Label.Text = p.Y
	pl.Add(plotter.NewGrid())
	if p.LogX {
		pl.X.Scale = plot.LogScale{}
		pl.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	f := &figure{pl: pl, legend: plot.NewLegend(), titleStyle: pl.Title.TextStyle}
	f.legend.Top, f.legend.Left = true, true // top-aligned; icons before the names
	f.legend.ThumbnailWidth = vg.Points(16)
	f.legend.Padding = vg.Points(2)
	f.legend.TextStyle.Font.Size = vg.Points(9)
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
			return nil, fmt.Errorf("report: %s: %w", p.Title, err)
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		if i >= len(palette) {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		pl.Add(line)
		f.legend.Add(s.Name, line)
		f.entries++
	}

	f.w = margin + plotWidth + margin
	var legendH vg.Length
	if f.entries > 0 {
		r := f.legend.Rectangle(draw.Canvas{})
		f.legendW, legendH = r.Size().X, r.Size().Y
		f.w += legendGap + f.legendW*fontSlack
	}
	f.title = wrapText(p.Title, f.titleStyle, (f.w-2*margin)/fontSlack)
	for _, line := range f.title {
		f.w = max(f.w, f.titleStyle.Width(line)*fontSlack+2*margin) // a word wider than the canvas
	}
	// The legend starts at the top of the data area; a legend taller than
	// that area makes the plot taller, so no entry falls off the canvas.
	area := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: plotWidth, Y: plotHeight}}}
	axes := plotHeight - pl.DataCanvas(area).Size().Y
	f.plotH = max(plotHeight, legendH+axes)
	f.h = margin + f.titleHeight() + f.plotH + margin
	return f, nil
}

// titleHeight is the height of the title's lines and the gap below them.
func (f *figure) titleHeight() vg.Length {
	if len(f.title) == 0 {
		return 0
	}
	return vg.Length(len(f.title))*f.titleStyle.FontExtents().Height + titleGap
}

// draw draws the figure on a canvas of f.w × f.h.
func (f *figure) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	sty := f.titleStyle
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	lineH := sty.FontExtents().Height
	for i, line := range f.title {
		c.FillText(sty, vg.Point{X: c.Min.X + margin, Y: c.Max.Y - margin - vg.Length(i)*lineH}, line)
	}
	plotC := c
	plotC.Min = vg.Point{X: c.Min.X + margin, Y: c.Min.Y + margin}
	plotC.Max = vg.Point{X: plotC.Min.X + plotWidth, Y: plotC.Min.Y + f.plotH}
	f.pl.Draw(plotC)
	if f.entries == 0 {
		return
	}
	legendC := c
	legendC.Min = vg.Point{X: plotC.Max.X + legendGap, Y: plotC.Min.Y}
	legendC.Max = vg.Point{X: legendC.Min.X + f.legendW, Y: f.pl.DataCanvas(plotC).Max.Y}
	f.legend.Draw(legendC)
}

// wrapText breaks s at spaces into lines no wider than width in sty, and
// at its newlines. Two lines are balanced, so that a title wrapped for a
// word or two does not leave them alone on its second line.
func wrapText(s string, sty text.Style, width vg.Length) []string {
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		words := strings.Fields(para)
		if len(words) == 0 {
			continue
		}
		var wrapped []string
		line := words[0]
		for _, w := range words[1:] {
			if sty.Width(line+" "+w) > width {
				wrapped = append(wrapped, line)
				line = w
				continue
			}
			line += " " + w
		}
		wrapped = append(wrapped, line)
		if len(wrapped) == 2 {
			best := max(sty.Width(wrapped[0]), sty.Width(wrapped[1]))
			for i := 1; i < len(words); i++ {
				a, b := strings.Join(words[:i], " "), strings.Join(words[i:], " ")
				if w := max(sty.Width(a), sty.Width(b)); w < best {
					best, wrapped[0], wrapped[1] = w, a, b
				}
			}
		}
		lines = append(lines, wrapped...)
	}
	return lines
}

// Save writes the plot as an SVG file, or in the format its extension
// names (png, pdf, eps, ...). The axes and data take 5×3.5 in; the title,
// above them, is wrapped to the canvas, and the legend lies to the right of
// the data, the canvas widened (and if need be heightened) for it. A PNG
// is drawn at 150 dots per inch.
//
// The file is written under a temporary name and renamed, so an
// interrupted run leaves no half figure; an existing file is replaced, and
// a path that exists and is not a regular file is an error.
func (p Plot) Save(path string) error {
	f, err := p.layout()
	if err != nil {
		return err
	}
	return f.save(path)
}

// SaveSVGAndPNG writes the plot as base.svg and base.png, each as Save
// writes it, from one layout: the SVG for pages and print, the PNG for
// where an SVG is not shown (many chat tools, issue trackers' previews,
// image viewers).
func (p Plot) SaveSVGAndPNG(base string) error {
	f, err := p.layout()
	if err != nil {
		return err
	}
	for _, ext := range []string{".svg", ".png"} {
		if err := f.save(base + ext); err != nil {
			return err
		}
	}
	return nil
}

// save draws the laid-out figure into path, in the format its extension
// names, atomically.
func (f *figure) save(path string) error {
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	var c vg.CanvasWriterTo
	if format == "png" {
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(pngDPI))}
	} else {
		var err error
		if c, err = draw.NewFormattedCanvas(f.w, f.h, format); err != nil {
			return fmt.Errorf("report: %s: %w (name a .svg, .png, .pdf or .eps file)", path, err)
		}
	}
	f.draw(draw.New(c))
	af, err := atomicfile.Create(path, true)
	if err != nil {
		return fmt.Errorf("report: figure: %w", err)
	}
	defer af.Abort()
	if _, err := c.WriteTo(af); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	if err := af.Commit(); err != nil {
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
		return nil, setting.Errorf("report", "report: %s already exists (choose another folder, or overwrite it: {Create.overwrite})", name)
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

// Figure saves a plot as name.svg and name.png (SaveSVGAndPNG) and links
// the SVG from the report.
func (d *Dir) Figure(name string, p Plot) error {
	if err := p.SaveSVGAndPNG(filepath.Join(d.Path, name)); err != nil {
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
