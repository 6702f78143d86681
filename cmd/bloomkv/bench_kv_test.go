package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// mapStore is a store held in a map, to test what bench does around the
// engines.
type mapStore struct {
	m       map[string][]byte
	batches []int // writes per batch applied
	gets    int64
	flushes int
}

func newMapStore() *mapStore { return &mapStore{m: map[string][]byte{}} }

func (s *mapStore) writeBatch(fill func(set func(key, value []byte) error) error) error {
	n := 0
	err := fill(func(key, value []byte) error {
		s.m[string(key)] = bytes.Clone(value)
		n++
		return nil
	})
	s.batches = append(s.batches, n)
	return err
}

func (s *mapStore) flush() error   { s.flushes++; return nil }
func (s *mapStore) waitIdle()      {}
func (s *mapStore) compact() error { return nil }
func (s *mapStore) refresh() error { return nil }

func (s *mapStore) get(key []byte) ([]byte, bool, error) {
	s.gets++
	v, ok := s.m[string(key)]
	return v, ok, nil
}

// counters counts one table considered per lookup in a single level, L1,
// so that the runner's differencing shows.
func (s *mapStore) counters() lookupSnapshot {
	c := lookupCounts{TablesConsidered: s.gets, BlockReads: s.gets}
	return lookupSnapshot{Total: c, Levels: []lookupCounts{{}, c}}
}

// shape reports as many L0 tables as batches applied, modulo 4.
func (s *mapStore) shape() []levelShape {
	return []levelShape{{Level: 0, Tables: len(s.batches) % 4}, {Level: 1, Tables: 1}}
}

func (s *mapStore) footprint() (footprint, error) { return footprint{Keys: int64(len(s.m))}, nil }
func (s *mapStore) close() error                  { return nil }

func TestLoad(t *testing.T) {
	w := newWorkload(3, 2*loadBatch+7, 20, 10)
	s := newMapStore()
	if err := load(context.Background(), s, w, 0, w.keys, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := s.batches, []int{loadBatch, loadBatch, 7}; !slices.Equal(got, want) {
		t.Errorf("batches of %v writes, want %v", got, want)
	}
	if len(s.m) != w.keys {
		t.Errorf("%d keys stored, want %d", len(s.m), w.keys)
	}
	if err := w.verifySample(s, w.keys); err != nil {
		t.Error(err)
	}
	if err := load(context.Background(), s, w, w.keys, w.keys+5, nil); err != nil {
		t.Fatal(err)
	}
	if len(s.m) != w.keys+5 || s.batches[3] != 5 {
		t.Errorf("loading 5 more keys: %d keys in batches %v", len(s.m), s.batches)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := load(ctx, newMapStore(), w, 0, w.keys, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled load: got %v, want context.Canceled", err)
	}
}

func TestShapeRunner_WrongAnswer(t *testing.T) {
	w := newWorkload(3, 100, 20, 50)
	s := newMapStore()
	if err := load(context.Background(), s, w, 0, w.keys, nil); err != nil {
		t.Fatal(err)
	}
	r := &shapeRunner{app: &app{}, ctx: context.Background(), s: s, w: w, loaded: w.keys}
	for _, present := range []bool{false, true} {
		if _, _, err := r.lookups(lookupRun{present: present, n: w.keys, count: w.lookups}, nil); err != nil {
			t.Errorf("present=%t: %v", present, err)
		}
	}

	s.m[string(w.lookupKey(nil, 0, w.keys, false))] = nil // an absent key found
	if _, _, err := r.lookups(lookupRun{n: w.keys, count: 1}, nil); err == nil ||
		!strings.Contains(err.Error(), "found=true, want false") {
		t.Errorf("absent key found: got %v", err)
	}
	s.m[string(w.lookupKey(nil, 0, w.keys, true))] = []byte("short") // a value of the wrong size
	if _, _, err := r.lookups(lookupRun{present: true, n: w.keys, count: 1}, nil); err == nil ||
		!strings.Contains(err.Error(), "value of 5 bytes, want 20") {
		t.Errorf("wrong value size: got %v", err)
	}
}

// TestShapeRunner_WriteHeavy checks the write-heavy shape's bookkeeping: it
// loads the extra keys in batches, spreads exactly w.lookups lookups of
// each kind over them, counts only the lookups, and samples L0 after each
// batch.
func TestShapeRunner_WriteHeavy(t *testing.T) {
	w := newWorkload(5, 8000, 8, 777) // 8 batches, then 2 more
	s := newMapStore()
	if err := load(context.Background(), s, w, 0, w.keys, nil); err != nil {
		t.Fatal(err)
	}
	r := &shapeRunner{app: &app{}, ctx: context.Background(), s: s, w: w, loaded: w.keys}
	res, err := r.writeHeavy()
	if err != nil {
		t.Fatal(err)
	}
	if res.Keys != w.keys+w.extra || len(s.m) != res.Keys {
		t.Errorf("write-heavy ended with %d keys (%d stored), want %d", res.Keys, len(s.m), w.keys+w.extra)
	}
	for _, p := range []phase{res.Absent, res.Present} {
		if p.Lookups.Gets != int64(w.lookups) || p.Lookups.TablesConsidered != int64(w.lookups) {
			t.Errorf("phase counted %d gets and %d tables, want %d of each", p.Lookups.Gets,
				p.Lookups.TablesConsidered, w.lookups)
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
