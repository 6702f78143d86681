package bench

import (
	"context"
	"slices"
	"testing"
)

func TestGrowthSteps(t *testing.T) {
	for _, tc := range []struct {
		keys   int
		growth bool
		want   []int
	}{
		{1_000_000, false, []int{1_000_000}},
		{1_000_000, true, []int{15625, 31250, 62500, 125000, 250000, 500000, 1_000_000}},
		{8000, true, []int{1000, 2000, 4000, 8000}},
		{1500, true, []int{1500}},
		{1, true, []int{1}},
	} {
		if got := GrowthSteps(tc.keys, tc.growth); !slices.Equal(got, tc.want) {
			t.Errorf("GrowthSteps(%d, %t) = %v, want %v", tc.keys, tc.growth, got, tc.want)
		}
	}
}

func TestFlushesToSettledL0(t *testing.T) {
	// SettledL0Tables is 3 and the trigger 4: from 0 L0 tables three
	// flushes; from 3, a round through a compaction and three more.
	for l0, want := range []int{3, 2, 1, 4, 3, 2} {
		if got := flushesToSettledL0(l0); got != want {
			t.Errorf("flushesToSettledL0(%d) = %d, want %d", l0, got, want)
		}
	}
}

// TestLoader_Settle settles real bloomkv stores and checks the shape the
// settled measurements rely on: every key loaded, SettledL0Tables tables
// in L0 and nothing due, at each doubling step of a growth series.
func TestLoader_Settle(t *testing.T) {
	sizes := smallSizes
	opts := sizes.KVOptions()
	opts.DisableL0Settling = true
	e, err := OpenKV(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	w := NewWorkload(1, 8000, 100, 10)
	l := &Loader{Engine: e, Workload: w, MemTable: sizes.MemTable}
	steps := GrowthSteps(w.Keys, true)
	for _, n := range steps {
		if err := l.Settle(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		if l.Loaded != n {
			t.Fatalf("settled at %d keys, want %d", l.Loaded, n)
		}
		if shape := e.Shape(); L0Tables(shape) != SettledL0Tables || len(shape) < 2 {
			t.Errorf("%d keys: LSM %s, want %d L0 tables over deeper levels", n, FormatShape(shape), SettledL0Tables)
		}
	}
	if len(steps) < 3 {
		t.Fatalf("%d growth steps: the test settles too few", len(steps))
	}
	if err := w.VerifySample(e, w.Keys); err != nil {
		t.Error(err)
	}
}
