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

func (s *mapStore) settle() error { return nil }

func (s *mapStore) get(key []byte) ([]byte, bool, error) {
	v, ok := s.m[string(key)]
	return v, ok, nil
}

func (s *mapStore) counters() lookupCounts        { return lookupCounts{} }
func (s *mapStore) footprint() (footprint, error) { return footprint{}, nil }
func (s *mapStore) close() error                  { return nil }

func TestLoad(t *testing.T) {
	w := newWorkload(3, 2*loadBatch+7, 20, 10)
	s := newMapStore()
	if err := load(context.Background(), s, w, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := s.batches, []int{loadBatch, loadBatch, 7}; !slices.Equal(got, want) {
		t.Errorf("batches of %v writes, want %v", got, want)
	}
	if len(s.m) != w.keys {
		t.Errorf("%d keys stored, want %d", len(s.m), w.keys)
	}
	if err := w.verifySample(s); err != nil {
		t.Error(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := load(ctx, newMapStore(), w, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled load: got %v, want context.Canceled", err)
	}
}

func TestLookupPhase_WrongAnswer(t *testing.T) {
	a := &app{}
	w := newWorkload(3, 100, 20, 50)
	s := newMapStore()
	if err := load(context.Background(), s, w, nil); err != nil {
		t.Fatal(err)
	}
	for _, present := range []bool{false, true} {
		if _, err := a.lookupPhase(context.Background(), "", s, w, present); err != nil {
			t.Errorf("present=%t: %v", present, err)
		}
	}

	s.m[string(w.lookupKey(nil, 0, false))] = nil // an absent key found
	if _, err := a.lookupPhase(context.Background(), "", s, w, false); err == nil ||
		!strings.Contains(err.Error(), "found=true, want false") {
		t.Errorf("absent key found: got %v", err)
	}
	s.m[string(w.lookupKey(nil, 0, true))] = []byte("short") // a value of the wrong size
	if _, err := a.lookupPhase(context.Background(), "", s, w, true); err == nil ||
		!strings.Contains(err.Error(), "value of 5 bytes, want 20") {
		t.Errorf("wrong value size: got %v", err)
	}
}
