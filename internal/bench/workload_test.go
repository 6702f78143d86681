package bench

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestWorkload_Load(t *testing.T) {
	w := NewWorkload(3, 2*LoadBatch+7, 20, 10)
	m := NewMap()
	if err := w.Load(context.Background(), m, 0, w.Keys, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Batches, []int{LoadBatch, LoadBatch, 7}; !slices.Equal(got, want) {
		t.Errorf("batches of %v writes, want %v", got, want)
	}
	if len(m.M) != w.Keys {
		t.Errorf("%d keys stored, want %d", len(m.M), w.Keys)
	}
	if err := w.VerifySample(m, w.Keys); err != nil {
		t.Error(err)
	}
	if err := w.Load(context.Background(), m, w.Keys, w.Keys+5, nil); err != nil {
		t.Fatal(err)
	}
	if len(m.M) != w.Keys+5 || m.Batches[3] != 5 {
		t.Errorf("loading 5 more keys: %d keys in batches %v", len(m.M), m.Batches)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Load(ctx, NewMap(), 0, w.Keys, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled load: got %v, want context.Canceled", err)
	}
}

// TestWorkload_RunLookups checks that every lookup runs and reports
// progress, and that a wrong answer stops the run with an error.
func TestWorkload_RunLookups(t *testing.T) {
	w := NewWorkload(3, 100, 20, 10_000)
	m := NewMap()
	if err := w.Load(context.Background(), m, 0, w.Keys, nil); err != nil {
		t.Fatal(err)
	}
	for _, present := range []bool{false, true} {
		done := 0
		if _, err := w.RunLookups(context.Background(), m, LookupRun{Present: present, N: w.Keys, Count: w.Lookups},
			func(n int) { done += n }); err != nil {
			t.Fatalf("present=%t: %v", present, err)
		}
		if done != w.Lookups {
			t.Errorf("present=%t: progress heard of %d lookups, want %d", present, done, w.Lookups)
		}
	}
	if got := m.Counters().Total.Gets; got != int64(2*w.Lookups) {
		t.Errorf("%d gets ran, want %d", got, 2*w.Lookups)
	}
	m.M[string(w.LookupKey(nil, 0, w.Keys, false))] = nil
	if _, err := w.RunLookups(context.Background(), m, LookupRun{N: w.Keys, Count: 1}, nil); err == nil ||
		!strings.Contains(err.Error(), "found=true, want false") {
		t.Errorf("absent key found: got %v", err)
	}
	m.M[string(w.LookupKey(nil, 0, w.Keys, true))] = []byte("short")
	if _, err := w.RunLookups(context.Background(), m, LookupRun{Present: true, N: w.Keys, Count: 1}, nil); err == nil ||
		!strings.Contains(err.Error(), "value of 5 bytes, want 20") {
		t.Errorf("wrong value size: got %v", err)
	}
}

func TestUsers(t *testing.T) {
	m := NewMap()
	users := Users(3000)
	if err := LoadUsers(context.Background(), m, users, 8, NewKeyGen(1), nil); err != nil {
		t.Fatal(err)
	}
	if len(m.M) != users*len(UserFields) {
		t.Fatalf("%d keys for %d users", len(m.M), users)
	}
	for _, present := range []bool{false, true} {
		if _, err := UserSeeks(context.Background(), m, users, 500, 1, present, nil); err != nil {
			t.Errorf("present=%t: %v", present, err)
		}
	}
}
