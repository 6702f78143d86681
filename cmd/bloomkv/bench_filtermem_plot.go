package main

import (
	"fmt"
	"image/color"
	"slices"

	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/cockroachdb/pebble/vfs"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// filterMemStrategies lists every strategy of the study, bloomkv's then
// Pebble's, in the order tables and plots show them.
var filterMemStrategies = append(slices.Clone(bench.FilterStrategies), bench.PebbleStrategies...)

// writeFilterMemPlot draws the study into path on vfs.Default (SVG or
// PNG): one panel per mix, wasted data-block reads per lookup (log scale)
// against the memory asked for, a line per strategy. Points of no waste
// have no place on a log scale and are left out.
func writeFilterMemPlot(path string, res []bench.FilterMemResult) error {
	var row []panel
	for _, m := range bench.LookupMixes {
		p, err := filterMemPanel(res, m)
		if err != nil {
			return err
		}
		row = append(row, panel{Plot: p})
	}
	return writePanels(vfs.Default, path, [][]panel{row}, 36*vg.Centimeter)
}

// filterMemPanel draws one mix's panel.
func filterMemPanel(res []bench.FilterMemResult, m bench.LookupMix) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Lookups: %s", m)
	p.X.Label.Text = "filter memory, bits per key"
	p.Y.Label.Text = "wasted data-block reads per lookup"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	// The lines fall from the top left; the bottom left stays empty.
	p.Legend.Left, p.Legend.Top = true, false
	p.X.Tick.Marker = bitsTicks(res)
	p.Add(plotter.NewGrid())
	for i, s := range filterMemStrategies {
		var xys plotter.XYs
		for _, r := range res {
			if r.Mix == m && r.Strategy == s && r.Wasted > 0 {
				xys = append(xys, plotter.XY{X: r.Bits, Y: r.Wasted})
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		c := strategyColor(i)
		line.Color, points.Color = c, c
		points.Shape = draw.CircleGlyph{}
		if i >= len(bench.FilterStrategies) { // Pebble's: dashed, triangles
			line.Dashes, points.Shape = presentDashes, draw.TriangleGlyph{}
		}
		p.Add(line, points)
		p.Legend.Add(string(s), line, points)
	}
	return p, nil
}

// strategyColor is the color of the i-th of filterMemStrategies.
func strategyColor(i int) color.Color { return seriesColors[i%len(seriesColors)] }

// bitsTicks labels the x axis at the memories measured.
func bitsTicks(res []bench.FilterMemResult) plot.ConstantTicks {
	var ticks plot.ConstantTicks
	for _, r := range res {
		if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == r.Bits }) {
			ticks = append(ticks, plot.Tick{Value: r.Bits, Label: fmt.Sprint(r.Bits)})
		}
	}
	return ticks
}
