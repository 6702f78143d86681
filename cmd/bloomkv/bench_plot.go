package main

import (
	"fmt"
	"image/color"
	"math"

	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/cockroachdb/pebble/vfs"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// benchPlot measures the standalone filter curves (up to 100,000 keys per
// filter, bits per key 4 to 20) and writes the plot of a bench run.
func (a *app) benchPlot(rep *benchReport, kg bench.KeyGen, o benchOptions) error {
	n := min(o.keys, 100_000)
	q := min(max(20*n, 100_000), 2_000_000)
	prog := a.startProgress("plot: standalone filters", -1)
	ours, pebble, err := fprCurve(kg, 4, 20, n, q)
	prog.done()
	if err != nil {
		return err
	}
	d := benchPlotData(rep.Rows)
	d.Ours, d.Pebble, d.Keys = ours, pebble, n
	if err := writePlot(vfs.Default, o.plot, d); err != nil {
		return err
	}
	rep.Curves = &fprCurves{Keys: n, Queries: q, Ours: ours, Pebble: pebble}
	rep.Plot = o.plot
	return nil
}

// benchPlotData gathers what the plot shows of the rows: the rates
// observed in each shape, the reads saved per shape and the growth series,
// of the configurations with filters (without, every figure is zero).
func benchPlotData(rows []benchRow) plotData {
	var d plotData
	for _, r := range rows {
		if r.Filter == filterNone {
			continue
		}
		for _, s := range r.Shapes {
			d.Bench = append(d.Bench, fprPoint{Label: r.Config + ", " + s.Shape,
				BitsPerKey: r.FilterBitsPerKey, FPR: s.Absent.FPR})
			d.Saved = append(d.Saved, savedBar{Label: r.Config + ", " + s.Shape,
				Absent: float64(s.Absent.ReadsSavedPerLookup), Present: float64(s.Present.ReadsSavedPerLookup)})
		}
		if len(r.Growth) == 0 {
			continue
		}
		g := growthSeries{Config: r.Config}
		for _, s := range r.Growth {
			g.Points = append(g.Points, growthPoint{Keys: s.Keys,
				TablesAbsent: float64(s.Absent.TablesPerLookup), TablesPres: float64(s.Present.TablesPerLookup),
				SavedAbsent: float64(s.Absent.ReadsSavedPerLookup), SavedPresent: float64(s.Present.ReadsSavedPerLookup)})
		}
		d.Growth = append(d.Growth, g)
	}
	return d
}

// seriesColors tell the configurations apart in the growth panels
// (Okabe–Ito, distinct for color-blind readers).
var seriesColors = []color.Color{
	colorOurs, colorPebble, colorLimit, colorPresent,
	color.RGBA{R: 0x56, G: 0xb4, B: 0xe9, A: 0xff},
	color.RGBA{R: 0xcc, G: 0x79, B: 0xa7, A: 0xff},
	color.RGBA{A: 0xff},
}

// growthPlot draws, per configuration, one figure of the settled LSM
// against the number of keys in the store: absent keys solid, present keys
// dashed. value returns the absent and present figures of a point.
func growthPlot(series []growthSeries, title, ylabel string, value func(growthPoint) (absent, present float64)) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "keys in the store (log scale)"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.Legend.Left, p.Legend.Top = true, true
	p.Add(plotter.NewGrid())
	ymax := 0.0
	for i, s := range series {
		c := seriesColors[i%len(seriesColors)]
		for _, present := range []bool{false, true} {
			line, points, err := growthLine(s.Points, present, value)
			if err != nil {
				return nil, err
			}
			line.Color, points.Color = c, c
			p.Add(line, points)
			if !present {
				p.Legend.Add(s.Config, line)
			}
			for _, xy := range line.XYs {
				ymax = max(ymax, xy.Y)
			}
		}
	}
	addKindLegend(p)
	if len(series) > 0 {
		p.X.Tick.Marker = keyTicks(series[0].Points)
	}
	// The legend sits top left, where the smallest stores have the
	// smallest figures: leave it room above the lines.
	p.Y.Min, p.Y.Max = 0, max(ymax*1.8, 0.1)
	return p, nil
}

// presentDashes is the dash pattern of the present keys' lines in the
// growth panels and their legend.
var presentDashes = []vg.Length{vg.Points(5), vg.Points(3)}

// growthLine returns the line and glyphs of one series for absent keys
// (solid, circles) or present keys (dashed, triangles), leaving out points
// that could not be measured.
func growthLine(pts []growthPoint, present bool, value func(growthPoint) (absent, present float64)) (*plotter.Line, *plotter.Scatter, error) {
	xys := make(plotter.XYs, 0, len(pts))
	for _, pt := range pts {
		y, yp := value(pt)
		if present {
			y = yp
		}
		if !math.IsNaN(y) {
			xys = append(xys, plotter.XY{X: float64(pt.Keys), Y: y})
		}
	}
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, nil, err
	}
	points.Shape = draw.CircleGlyph{}
	if present {
		line.Dashes = presentDashes
		points.Shape = draw.TriangleGlyph{}
	}
	return line, points, nil
}

// addKindLegend explains the line styles: absent keys solid with circles,
// present keys dashed with triangles.
func addKindLegend(p *plot.Plot) {
	for _, k := range []struct {
		name   string
		dashes []vg.Length
		shape  draw.GlyphDrawer
	}{{"absent keys", nil, draw.CircleGlyph{}}, {"present keys", presentDashes, draw.TriangleGlyph{}}} {
		l, pts, err := plotter.NewLinePoints(plotter.XYs{{X: 1, Y: 0}})
		if err != nil {
			continue
		}
		l.Color, pts.Color, l.Dashes, pts.Shape = colorTextbook, colorTextbook, k.dashes, k.shape
		p.Legend.Add(k.name, l, pts)
	}
}

// keyTicks labels the x axis at the measured store sizes: 15.6k, 31.2k, ... 1M.
func keyTicks(pts []growthPoint) plot.Ticker {
	ticks := make(plot.ConstantTicks, len(pts))
	for i, pt := range pts {
		ticks[i] = plot.Tick{Value: float64(pt.Keys), Label: fmtCount(pt.Keys)}
	}
	return ticks
}

// fmtCount formats a count briefly: 900, 15.6k, 250k, 1M, 2.5M.
func fmtCount(n int) string {
	x := float64(n)
	switch {
	case n >= 1_000_000:
		return trimZeros(x/1e6) + "M"
	case n >= 1_000:
		return trimZeros(x/1e3) + "k"
	}
	return fmt.Sprint(n)
}

// trimZeros formats x with three significant digits and no trailing zeros.
func trimZeros(x float64) string {
	return fmt.Sprintf("%.3g", x)
}
