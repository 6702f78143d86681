package bench

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// TestCapGrowth grows a small store 16-fold under a cap of 4 bits per key
// of its final size: every step measured, samples taken all along (by the
// loader and after flushes and compactions), none above the cap, and the
// absent lookups of each step reading some blocks (4 bits per key leave
// false positives) but not one per table.
func TestCapGrowth(t *testing.T) {
	c := CapGrowthConfig{Steps: []int{2000, 4000, 8000, 16000, 32000}, ValueSize: 16, Lookups: 2000,
		CapBitsPerKey: 4, SampleEvery: 500, Sizes: Sizes{MemTable: 64 << 10, Table: 64 << 10, LBase: 128 << 10, Cache: 1 << 20},
		FS: vfs.NewMem(), Dir: "db", Seed: 1}
	res, err := CapGrowth(context.Background(), c, func(s CapGrowthStep) { t.Logf("%+v", s) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cap %d B, most held %d B in %d samples, %d over", res.CapBytes, res.MostHeld, res.Samples, res.Over)
	if len(res.Steps) != len(c.Steps) {
		t.Fatalf("%d steps measured, want %d", len(res.Steps), len(c.Steps))
	}
	if res.Over > 0 || res.MostHeld > res.CapBytes || res.MostHeld <= 0 {
		t.Fatalf("held %d B at most against a cap of %d B, %d samples over", res.MostHeld, res.CapBytes, res.Over)
	}
	// The loader alone samples 32000/500 times.
	if res.Samples < 32000/500 {
		t.Fatalf("%d samples", res.Samples)
	}
	for _, s := range res.Steps {
		if (s.Built == 0) != (s.BuildRead == 0) || s.BuildRead < s.Built {
			t.Fatalf("step of %d keys: %d filters built reading %d bytes", s.Keys, s.Built, s.BuildRead)
		}
	}
	last := res.Steps[len(res.Steps)-1]
	if last.Wasted <= 0 || last.Wasted >= float64(len(last.Shape)) || last.Samples == 0 || last.Held <= 0 ||
		last.CompactRead <= 0 || last.Built == 0 {
		t.Fatalf("last step %+v", last)
	}
}

func TestCapGrowth_BadConfig(t *testing.T) {
	for _, c := range []CapGrowthConfig{
		{Steps: nil, CapBitsPerKey: 4, Lookups: 1, SampleEvery: 1},
		{Steps: []int{10, 5}, CapBitsPerKey: 4, Lookups: 1, SampleEvery: 1},
		{Steps: []int{10}, CapBitsPerKey: 0, Lookups: 1, SampleEvery: 1},
		{Steps: []int{10}, CapBitsPerKey: 4, Lookups: 0, SampleEvery: 1},
	} {
		if _, err := CapGrowth(context.Background(), c, nil); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
