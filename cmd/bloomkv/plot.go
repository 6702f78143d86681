package main

// The plot is drawn with gonum.org/v1/plot: one library renders the same
// figure to SVG and to PNG (fonts embedded, no cgo), with log axes, legends
// and bar charts. Hand-written SVG would still need a rasterizer and a font
// for PNG, which is most of what the library is.

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/vfs"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// fprPoint is one measured false-positive rate.
type fprPoint struct {
	Label      string    `json:"label,omitempty"`
	BitsPerKey jsonFloat `json:"bits_per_key"` // as measured: 8 × filter bytes / keys
	FPR        jsonFloat `json:"fpr"`
}

// savedBar is the reads saved per lookup by one configuration in one shape.
type savedBar struct {
	Label   string
	Absent  float64
	Present float64
}

// growthPoint is the settled shape of one store at one size.
type growthPoint struct {
	Keys                      int
	TablesAbsent, TablesPres  float64 // tables considered per lookup
	SavedAbsent, SavedPresent float64 // reads saved per lookup
}

// growthSeries is one configuration's growth measurements.
type growthSeries struct {
	Config string
	Points []growthPoint
}

// plotData is everything the plot shows.
type plotData struct {
	Ours, Pebble []fprPoint // standalone filters measured over a range of bits per key
	Bench        []fprPoint // the filtered configurations of the bench run
	Saved        []savedBar
	Growth       []growthSeries // none without --growth
	Keys         int            // keys per standalone filter
}

// Plot colors, chosen to stay distinct in print and for color-blind readers.
var (
	colorOurs     = color.RGBA{R: 0x00, G: 0x72, B: 0xb2, A: 0xff}
	colorPebble   = color.RGBA{R: 0xd5, G: 0x5e, B: 0x00, A: 0xff}
	colorTextbook = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	colorLimit    = color.RGBA{R: 0x00, G: 0x9e, B: 0x73, A: 0xff}
	colorAbsent   = colorOurs
	colorPresent  = color.RGBA{R: 0xe6, G: 0x9f, B: 0x00, A: 0xff}
)

// checkPlotPath rejects a plot file name whose extension is neither .svg
// nor .png, in either case.
func checkPlotPath(path string) error {
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".svg" && ext != ".png" {
		return usagef("--plot %s: want a file name ending in .svg or .png", path)
	}
	return nil
}

// writePlot draws the panels into path on fs, as SVG or PNG according to
// its extension: the false-positive rates and the reads saved per shape
// side by side, and below them, when d has growth series, tables considered
// and reads saved against the size of the store.
func writePlot(fs vfs.FS, path string, d plotData) error {
	if err := checkPlotPath(path); err != nil {
		return err
	}
	panels, err := plotPanels(d)
	if err != nil {
		return err
	}
	return writePanels(fs, path, panels, 28*vg.Centimeter)
}

// writePanels draws rows of panels, width wide and 11 cm a row, into path
// on fs, as SVG or PNG according to its extension.
func writePanels(fs vfs.FS, path string, panels [][]panel, width vg.Length) error {
	w, h := width, 11*vg.Centimeter*vg.Length(len(panels))
	var canvas vg.CanvasWriterTo
	if strings.EqualFold(filepath.Ext(path), ".svg") {
		canvas = vgsvg.New(w, h)
	} else {
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))}
	}
	// Each row is aligned on its own: the bar chart's long names would
	// otherwise narrow the panel below it too.
	dc := draw.New(canvas)
	rowHeight := (dc.Max.Y - dc.Min.Y) / vg.Length(len(panels))
	for i, row := range panels {
		// Crop's bottom moves up from the bottom edge, its top (negative)
		// down from the top edge.
		above, below := rowHeight*vg.Length(i), rowHeight*vg.Length(len(panels)-1-i)
		drawRow(row, draw.Crop(dc, 0, 0, below, -above))
	}
	return writeFile(fs, path, canvas)
}

// panel is one plot of the figure and, for a bar chart whose bars leave
// no corner of its data area free, the legend drawn under it instead,
// where it covers neither bars nor title.
type panel struct {
	*plot.Plot
	legendBelow *plot.Legend
}

// drawRow draws a row of panels into cell, aligned, with a strip along the
// bottom for the legends drawn below their panels.
func drawRow(row []panel, cell draw.Canvas) {
	strip := legendStrip(row, cell)
	plots := make([]*plot.Plot, len(row))
	for j, p := range row {
		plots[j] = p.Plot
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Centimeter, PadTop: vg.Millimeter * 3,
		PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	for j, c := range plot.Align([][]*plot.Plot{plots}, tiles, draw.Crop(cell, 0, 0, strip, 0))[0] {
		row[j].Draw(c)
		if l := row[j].legendBelow; l != nil {
			l.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: c.Min.X, Y: cell.Min.Y}, Max: vg.Point{X: c.Max.X, Y: cell.Min.Y + strip}}})
		}
	}
}

// legendStrip returns the height of the strip under row that its
// tallest legend drawn below a panel needs, zero when none is.
func legendStrip(row []panel, cell draw.Canvas) vg.Length {
	var h vg.Length
	for _, p := range row {
		if p.legendBelow == nil {
			continue
		}
		if r := p.legendBelow.Rectangle(cell); r.Max.Y > r.Min.Y {
			h = max(h, r.Max.Y-r.Min.Y+vg.Millimeter*3)
		}
	}
	return h
}

// plotPanels builds the panels, a row of two at a time.
func plotPanels(d plotData) ([][]panel, error) {
	left, err := fprPlot(d)
	if err != nil {
		return nil, err
	}
	right, legend, err := savedPlot(d.Saved)
	if err != nil {
		return nil, err
	}
	panels := [][]panel{{{Plot: left}, {Plot: right, legendBelow: legend}}}
	if len(d.Growth) == 0 {
		return panels, nil
	}
	tables, err := growthPlot(d.Growth, "Tables considered per lookup, settled LSM",
		"tables considered / lookups", func(p growthPoint) (float64, float64) { return p.TablesAbsent, p.TablesPres })
	if err != nil {
		return nil, err
	}
	saved, err := growthPlot(d.Growth, "Block reads saved per lookup, settled LSM",
		"filter negatives / lookups", func(p growthPoint) (float64, float64) { return p.SavedAbsent, p.SavedPresent })
	if err != nil {
		return nil, err
	}
	return append(panels, []panel{{Plot: tables}, {Plot: saved}}), nil
}

// writeFile creates path on fs and writes what w produces into it. It
// refuses a path that is a directory: vfs.FS.Create replaces what is at
// path, and would remove an empty directory there.
func writeFile(fs vfs.FS, path string, w io.WriterTo) error {
	if st, err := fs.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("writing %s: is a directory", path)
	}
	f, err := fs.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// fprPlot draws observed false-positive rates against bits per key on a
// log scale, with the textbook curve e^(-ln²2·b) and the
// information-theoretic limit 2^(-b).
func fprPlot(d plotData) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Filter false-positive rate (%d keys per filter)", d.Keys)
	p.X.Label.Text = "bits per key (8 × filter bytes / keys)"
	p.Y.Label.Text = "false-positive rate"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	// The curves fall from the top left; the bottom left stays empty.
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	lo, hi := bitsRange(d)
	textbook := plotter.NewFunction(func(b float64) float64 { return math.Exp(-math.Ln2 * math.Ln2 * b) })
	textbook.XMin, textbook.XMax, textbook.Samples = lo, hi, 100
	textbook.Color, textbook.Dashes = colorTextbook, []vg.Length{vg.Points(4), vg.Points(3)}
	limit := plotter.NewFunction(func(b float64) float64 { return math.Exp2(-b) })
	limit.XMin, limit.XMax, limit.Samples = lo, hi, 100
	limit.Color, limit.Dashes = colorLimit, []vg.Length{vg.Points(1), vg.Points(3)}
	p.Add(textbook, limit)

	if err := addFilterCurves(p, d); err != nil {
		return nil, err
	}
	if err := addBenchPoints(p, d.Bench); err != nil {
		return nil, err
	}
	p.Legend.Add("textbook e^(-ln²2·b)", textbook)
	p.Legend.Add("limit 2^(-b)", limit)
	p.X.Min, p.X.Max = lo, hi
	// Show the textbook curve over the whole x range; the limit may leave
	// the plot at the bottom.
	ymin, ymax := fprRange(d)
	p.Y.Min = math.Min(ymin, textbook.F(hi)) / 1.5
	p.Y.Max = math.Max(ymax, textbook.F(lo)) * 1.5
	return p, nil
}

// addFilterCurves draws the standalone filters' measured rates, ours and
// Pebble's, as lines through circles; a curve without points is left out.
func addFilterCurves(p *plot.Plot, d plotData) error {
	for _, s := range []struct {
		name  string
		pts   []fprPoint
		color color.Color
	}{{"bloompolicy (ours)", d.Ours, colorOurs}, {"Pebble bloom", d.Pebble, colorPebble}} {
		xys := fprXYs(s.pts)
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color, points.Color = s.color, s.color
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(s.name, line, points)
	}
	return nil
}

// fprRange returns the smallest and largest rate a log axis can show.
func fprRange(d plotData) (lo, hi float64) {
	lo, hi = 1, 0
	for _, pts := range [][]fprPoint{d.Ours, d.Pebble, d.Bench} {
		for _, xy := range fprXYs(pts) {
			lo, hi = math.Min(lo, xy.Y), math.Max(hi, xy.Y)
		}
	}
	return lo, hi
}

// addBenchPoints marks the false-positive rates observed in the store by the
// bench run, one glyph for all of them.
func addBenchPoints(p *plot.Plot, pts []fprPoint) error {
	xys := fprXYs(pts)
	if len(xys) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	s.GlyphStyle.Shape = draw.CrossGlyph{}
	s.GlyphStyle.Radius = vg.Points(5)
	s.GlyphStyle.Color = color.Black
	p.Add(s)
	p.Legend.Add("bench run (in the store)", s)
	return nil
}

// fprXYs returns the points that a log axis can show: a rate of zero (no
// false positive seen) has no logarithm and is left out.
func fprXYs(pts []fprPoint) plotter.XYs {
	var xys plotter.XYs
	for _, pt := range pts {
		x, y := float64(pt.BitsPerKey), float64(pt.FPR)
		if y > 0 && !math.IsNaN(x) && !math.IsNaN(y) {
			xys = append(xys, plotter.XY{X: x, Y: y})
		}
	}
	return xys
}

// bitsRange returns the x range covering every measured point.
func bitsRange(d plotData) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, pts := range [][]fprPoint{d.Ours, d.Pebble, d.Bench} {
		for _, pt := range pts {
			if b := float64(pt.BitsPerKey); !math.IsNaN(b) {
				lo, hi = min(lo, b), max(hi, b)
			}
		}
	}
	if lo > hi {
		return 1, 20
	}
	return math.Max(1, math.Floor(lo)-1), math.Ceil(hi) + 1
}

// savedPlot draws, per configuration with filters and shape, the
// data-block reads the filters saved per lookup, for absent and present
// keys, and returns the legend to draw under it: the bars fill the data
// area from top to bottom, so no corner of it is free. A kind of key whose
// bars would all be zero gets no legend entry.
func savedPlot(bars []savedBar) (*plot.Plot, *plot.Legend, error) {
	p := plot.New()
	p.Title.Text = "Block reads saved per lookup, by shape"
	p.X.Label.Text = "filter negatives / lookups"
	legend := plot.NewLegend()
	legend.Top, legend.Left = false, false
	names := make([]string, len(bars))
	absent := make(plotter.Values, len(bars))
	present := make(plotter.Values, len(bars))
	// NominalY puts the first name at the bottom; reverse so the plot reads
	// top-down in the order of the table.
	for i, b := range bars {
		j := len(bars) - 1 - i
		names[j], absent[j], present[j] = b.Label, b.Absent, b.Present
	}
	width := vg.Points(7)
	xmax := 0.0
	for i, s := range []struct {
		name   string
		values plotter.Values
		color  color.Color
	}{{"absent keys", absent, colorAbsent}, {"present keys", present, colorPresent}} {
		bc, err := plotter.NewBarChart(s.values, width)
		if err != nil {
			return nil, nil, err
		}
		bc.Horizontal = true
		bc.Color = s.color
		bc.LineStyle.Width = 0
		bc.Offset = vg.Length(2*i-1) * width / 2
		p.Add(bc)
		if m := maxValue(s.values); m > 0 {
			legend.Add(s.name, bc)
			xmax = max(xmax, m)
		}
	}
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, max(xmax*1.05, 0.1)
	return p, &legend, nil
}

func maxValue(v plotter.Values) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
