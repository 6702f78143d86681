package bench

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/bloom"
)

// smallSizes make a few thousand keys spread over L0 and several levels.
var smallSizes = Sizes{MemTable: 32 << 10, Table: 32 << 10, LBase: 64 << 10, Cache: 1 << 20}

// openEngines opens a bloomkv and a Pebble store with filters, Pebble
// answering lookups as lookups says.
func openEngines(t *testing.T, lookups PebbleLookups) []Engine {
	k, err := OpenKV(t.TempDir(), smallSizes.KVOptions())
	if err != nil {
		t.Fatal(err)
	}
	opts := smallSizes.PebbleOptions()
	WithPebbleFilter(opts, bloom.FilterPolicy(10))
	p, err := OpenPebble(t.TempDir(), opts, lookups)
	if err != nil {
		t.Fatal(err)
	}
	return []Engine{k, p}
}

// TestEngines loads both engines, waits until they are idle, and checks
// what every front end relies on: lookups answer right and are counted,
// filters save reads on absent keys, a scan sees every key both ways, and
// the footprint counts every key.
func TestEngines(t *testing.T) {
	for _, lookups := range []PebbleLookups{PebbleGet, PebbleSeekPrefix} {
		for _, e := range openEngines(t, lookups) {
			t.Run(e.Name(), func(t *testing.T) {
				defer func() {
					if err := e.Close(); err != nil {
						t.Error(err)
					}
				}()
				checkEngine(t, e)
			})
		}
	}
}

func checkEngine(t *testing.T, e Engine) {
	ctx := context.Background()
	w := NewWorkload(1, 5000, 50, 2000)
	if err := w.Load(ctx, e, 0, w.Keys, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if shape := e.Shape(); len(shape) == 0 {
		t.Errorf("LSM %s after a flush", FormatShape(shape))
	}
	if err := e.Refresh(); err != nil {
		t.Fatal(err)
	}
	before := e.Counters().Total
	for _, present := range []bool{false, true} {
		if _, err := w.RunLookups(ctx, e, LookupRun{Present: present, N: w.Keys, Count: w.Lookups}, nil); err != nil {
			t.Fatal(err)
		}
	}
	after := e.Counters().Total
	if gets := after.Gets - before.Gets; e.Name() == EngineKV && gets != int64(2*w.Lookups) {
		t.Errorf("%d gets counted, want %d", gets, 2*w.Lookups)
	}
	neg, falsePos := after.FilterNegatives-before.FilterNegatives, after.FilterFalsePositives-before.FilterFalsePositives
	if neg < int64(w.Lookups)*9/10 || falsePos*20 > neg+falsePos {
		t.Errorf("%d filter negatives and %d false positives over %d absent lookups: want most saved, under 5%% false", neg, falsePos, w.Lookups)
	}
	if err := w.VerifySample(e, w.Keys); err != nil {
		t.Error(err)
	}
	for _, forward := range []bool{true, false} {
		if n, err := Scan(e, forward); err != nil || n != w.Keys {
			t.Errorf("scan forward=%t: %d keys (%v), want %d", forward, n, err, w.Keys)
		}
	}
	if err := e.Compact(); err != nil {
		t.Fatal(err)
	}
	fp, err := e.Footprint()
	if err != nil || fp.Keys != int64(w.Keys) || fp.FilterBytes == 0 {
		t.Errorf("footprint %+v (%v): want %d keys and some filter bytes", fp, err, w.Keys)
	}
	if st := e.Stats(); st.WriteAmp < 1 || st.TableBytes == 0 {
		t.Errorf("stats %+v: want write-amp of at least 1 and some tables", st)
	}
}

// TestEngines_UserSeeks runs the prefix workload on both engines with
// splitting comparers.
func TestEngines_UserSeeks(t *testing.T) {
	ko := smallSizes.KVOptions()
	ko.Comparer = KVUserComparer
	k, err := OpenKV(t.TempDir(), ko)
	if err != nil {
		t.Fatal(err)
	}
	po := smallSizes.PebbleOptions()
	po.Comparer = PebbleUserComparer
	WithPebbleFilter(po, bloom.FilterPolicy(10))
	p, err := OpenPebble(t.TempDir(), po, PebbleSeekPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Engine{k, p} {
		users := Users(3000)
		if err := LoadUsers(context.Background(), e, users, 20, NewKeyGen(2), nil); err != nil {
			t.Fatal(err)
		}
		if err := e.Compact(); err != nil {
			t.Fatal(err)
		}
		if err := e.Refresh(); err != nil {
			t.Fatal(err)
		}
		for _, present := range []bool{false, true} {
			if _, err := UserSeeks(context.Background(), e, users, 1000, 3, present, nil); err != nil {
				t.Errorf("%s present=%t: %v", e.Name(), present, err)
			}
		}
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestEngines_SyncModes checks that both engines honour a write's sync
// flag alike, through Set and Apply: a synced write syncs the WAL, a
// NoSync one does not, so a comparison of the two writes the same way.
func TestEngines_SyncModes(t *testing.T) {
	for _, e := range openEngines(t, PebbleSeekPrefix) {
		t.Run(e.Name(), func(t *testing.T) {
			defer func() {
				if err := e.Close(); err != nil {
					t.Error(err)
				}
			}()
			for i, sync := range []bool{false, true, false, true} {
				key := []byte{'k', byte(i)}
				for _, via := range []string{"Set", "Apply"} {
					before := e.Stats().WALSyncs
					var err error
					if via == "Set" {
						err = e.Set(key, key, sync)
					} else {
						err = e.Apply(func(set func(k, v []byte) error) error { return set(key, key) }, sync)
					}
					if err != nil {
						t.Fatal(err)
					}
					got := e.Stats().WALSyncs - before
					if (got > 0) != sync {
						t.Errorf("%s with sync=%t: %d WAL syncs", via, sync, got)
					}
				}
			}
		})
	}
}
