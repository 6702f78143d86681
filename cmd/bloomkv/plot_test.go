package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func testPlotData() plotData {
	var d plotData
	d.Keys = 1000
	for b := 4; b <= 20; b++ {
		d.Ours = append(d.Ours, fprPoint{BitsPerKey: jsonFloat(b), FPR: jsonFloat(1 / float64(b*b*b))})
		d.Pebble = append(d.Pebble, fprPoint{BitsPerKey: jsonFloat(b), FPR: jsonFloat(1.2 / float64(b*b*b))})
	}
	d.Ours = append(d.Ours, fprPoint{BitsPerKey: 21, FPR: 0}) // no false positive: left out
	d.Bench = []fprPoint{{Label: "x", BitsPerKey: 10.4, FPR: 0.009}}
	d.Saved = []savedBar{{"ours, compacted", 0.99, 0}, {"ours, settled", 1.9, 0.9}}
	return d
}

// testGrowth returns growth series of two configurations over four sizes.
func testGrowth() []growthSeries {
	var g []growthSeries
	for i, name := range []string{"bloomkv, ours", "pebble, ours"} {
		s := growthSeries{Config: name}
		for k, keys := range []int{125_000, 250_000, 500_000, 1_000_000} {
			tables := float64(k + 1 + i)
			s.Points = append(s.Points, growthPoint{Keys: keys, TablesAbsent: tables, TablesPres: tables - 0.5,
				SavedAbsent: tables * 0.99, SavedPresent: tables - 1.5})
		}
		g = append(g, s)
	}
	return g
}

// svgOf draws d as SVG and returns the text.
func svgOf(t *testing.T, d plotData) string {
	t.Helper()
	fs := vfs.NewMem()
	if err := writePlot(fs, "p.svg", d); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open("p.svg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestWritePlot_Panels checks what each panel shows: the growth panels
// only with growth series, and a legend entry for present keys only when
// some present key saved a read (a legend without bars is noise).
func TestWritePlot_Panels(t *testing.T) {
	d := testPlotData()
	svg := svgOf(t, d)
	for _, want := range []string{"Block reads saved per lookup, by shape", "absent keys", "present keys", "ours, settled"} {
		if !strings.Contains(svg, want) {
			t.Errorf("plot without growth lacks %q", want)
		}
	}
	if strings.Contains(svg, "settled LSM") {
		t.Error("plot without growth series has growth panels")
	}

	d.Saved = []savedBar{{"ours, compacted", 0.99, 0}}
	if svg := svgOf(t, d); strings.Contains(svg, "present keys") {
		t.Error("legend names present keys, which have no bar")
	}

	d.Growth = testGrowth()
	svg = svgOf(t, d)
	for _, want := range []string{"Tables considered per lookup, settled LSM", "Block reads saved per lookup, settled LSM",
		"keys in the store (log scale)", "bloomkv, ours", "pebble, ours", "present keys", "125k", "1M"} {
		if !strings.Contains(svg, want) {
			t.Errorf("plot with growth lacks %q", want)
		}
	}
}

func TestFmtCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{900, "900"}, {15625, "15.6k"}, {250_000, "250k"}, {1_000_000, "1M"}, {2_500_000, "2.5M"}} {
		if got := fmtCount(tc.n); got != tc.want {
			t.Errorf("fmtCount(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestWritePlot(t *testing.T) {
	fs := vfs.NewMem()
	d := testPlotData()
	d.Growth = testGrowth()
	for _, tc := range []struct {
		name  string
		magic string
	}{{"p.svg", "<?xml"}, {"p.png", "\x89PNG"}, {"P.SVG", "<?xml"}} {
		if err := writePlot(fs, tc.name, d); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		f, err := fs.Open(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte(tc.magic)) || len(data) < 1000 {
			t.Errorf("%s: %d bytes starting %q, want a file starting %q", tc.name, len(data), data[:min(8, len(data))], tc.magic)
		}
	}
}

func TestWritePlot_BadExtension(t *testing.T) {
	err := writePlot(vfs.NewMem(), "p.pdf", testPlotData())
	var u usageError
	if !errors.As(err, &u) {
		t.Fatalf("got %v, want a usage error", err)
	}
}

// TestSavedPlot_LegendBelow checks that the reads-saved bar chart, whose
// bars fill its data area from top to bottom, draws no legend inside it
// (where it covered the first bar and the title) and that its row keeps a
// strip under the panels for that legend; a row without such a legend
// keeps none.
func TestSavedPlot_LegendBelow(t *testing.T) {
	d := testPlotData()
	d.Growth = testGrowth()
	panels, err := plotPanels(d)
	if err != nil {
		t.Fatal(err)
	}
	cell := draw.New(vgimg.New(28*vg.Centimeter, 11*vg.Centimeter))
	saved := panels[0][1]
	if saved.legendBelow == nil {
		t.Fatal("the reads-saved panel has no legend below it")
	}
	if r := saved.legendBelow.Rectangle(cell); r.Max.Y <= r.Min.Y {
		t.Errorf("the legend below is empty: %+v", r)
	}
	if r := saved.Legend.Rectangle(cell); r.Max.Y > r.Min.Y {
		t.Errorf("the panel still draws a legend over its bars: %+v", r)
	}
	if h := legendStrip(panels[0], cell); h <= 0 {
		t.Errorf("first row keeps a strip of %v for the legend", h)
	}
	if h := legendStrip(panels[1], cell); h != 0 {
		t.Errorf("growth row keeps a strip of %v with no legend below", h)
	}
}
