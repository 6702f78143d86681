package main

import (
	"context"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/bench"
)

func TestShapeRunner_WrongAnswer(t *testing.T) {
	w := bench.NewWorkload(3, 100, 20, 50)
	s := bench.NewMap()
	if err := w.Load(context.Background(), s, 0, w.Keys, nil); err != nil {
		t.Fatal(err)
	}
	r := (&app{}).newShapeRunner(context.Background(), "map", s, w, 1<<20)
	r.Loaded = w.Keys
	for _, present := range []bool{false, true} {
		c, _, err := r.lookups(bench.LookupRun{Present: present, N: w.Keys, Count: w.Lookups}, nil)
		if err != nil {
			t.Errorf("present=%t: %v", present, err)
		}
		if c.Total.Gets != int64(w.Lookups) {
			t.Errorf("present=%t: %d gets counted, want %d", present, c.Total.Gets, w.Lookups)
		}
	}

	s.M[string(w.LookupKey(nil, 0, w.Keys, false))] = nil // an absent key found
	if _, _, err := r.lookups(bench.LookupRun{N: w.Keys, Count: 1}, nil); err == nil ||
		!strings.Contains(err.Error(), "found=true, want false") {
		t.Errorf("absent key found: got %v", err)
	}
	s.M[string(w.LookupKey(nil, 0, w.Keys, true))] = []byte("short") // a value of the wrong size
	if _, _, err := r.lookups(bench.LookupRun{Present: true, N: w.Keys, Count: 1}, nil); err == nil ||
		!strings.Contains(err.Error(), "value of 5 bytes, want 20") {
		t.Errorf("wrong value size: got %v", err)
	}
}

// TestShapeRunner_WriteHeavy checks the write-heavy shape's bookkeeping: it
// loads the extra keys in batches, spreads exactly w.Lookups lookups of
// each kind over them, counts only the lookups, and samples L0 after each
// batch.
func TestShapeRunner_WriteHeavy(t *testing.T) {
	w := bench.NewWorkload(5, 8000, 8, 777) // 8 batches, then 2 more
	s := bench.NewMap()
	if err := w.Load(context.Background(), s, 0, w.Keys, nil); err != nil {
		t.Fatal(err)
	}
	r := (&app{}).newShapeRunner(context.Background(), "map", s, w, 1<<20)
	r.Loaded = w.Keys
	res, err := r.writeHeavy()
	if err != nil {
		t.Fatal(err)
	}
	if res.Keys != w.Keys+w.Extra || len(s.M) != res.Keys {
		t.Errorf("write-heavy ended with %d keys (%d stored), want %d", res.Keys, len(s.M), w.Keys+w.Extra)
	}
	for _, p := range []phase{res.Absent, res.Present} {
		if p.Lookups.Gets != int64(w.Lookups) || p.Lookups.TablesConsidered != int64(w.Lookups) {
			t.Errorf("phase counted %d gets and %d tables, want %d of each", p.Lookups.Gets,
				p.Lookups.TablesConsidered, w.Lookups)
		}
		if len(p.Levels) != 1 || p.Levels[0].Level != 1 || p.Levels[0].TablesPerLookup != 1 {
			t.Errorf("per level: got %+v, want one table per lookup at L1", p.Levels)
		}
	}
	// After the 9th and 10th batches the map store reports 1 and 2 L0
	// tables.
	if want := (tableRange{Min: 1, Mean: 1.5, Max: 2}); res.L0 == nil || *res.L0 != want {
		t.Errorf("L0 during the phase: got %+v, want %+v", res.L0, want)
	}
}
