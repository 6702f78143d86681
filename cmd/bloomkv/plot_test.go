package main

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
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
	d.Saved = []savedBar{{"none", 0, 0}, {"ours", 1.9, 0.9}}
	return d
}

func TestWritePlot(t *testing.T) {
	fs := vfs.NewMem()
	for _, tc := range []struct {
		name  string
		magic string
	}{{"p.svg", "<?xml"}, {"p.png", "\x89PNG"}, {"P.SVG", "<?xml"}} {
		if err := writePlot(fs, tc.name, testPlotData()); err != nil {
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
