package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// smallWriteModes returns the three write modes on smallSizes, on disk.
func smallWriteModes() []WriteMode {
	return WriteModes(smallSizes.KVOptions, func() *pebble.Options {
		opts := smallSizes.PebbleOptions()
		WithPebbleFilter(opts, bloom.FilterPolicy(10))
		return opts
	})
}

// TestRunWriteModes fills tiny stores of every mode over two rounds and
// checks that each mode ran each fill of each round, in turn, and that
// the modes are the engines they name.
func TestRunWriteModes(t *testing.T) {
	modes := smallWriteModes()
	wantEngines := map[string]string{WriteModeKV: EngineKV, WriteModeKVBackground: EngineKV, WriteModePebble: EnginePebble}
	run := WriteModeRun{Keys: 3000, SyncKeys: 20, ValueSize: 100, Rounds: 2, Gen: NewKeyGen(1)}
	var fills []string
	start := func(desc string, total int64) Progress {
		fills = append(fills, desc)
		return nopProgress{}
	}
	results, err := RunWriteModes(context.Background(), vfs.Default, t.TempDir(), modes, run, start)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(wantEngines) || len(fills) != 2*run.Rounds*len(wantEngines) {
		t.Fatalf("%d modes and %d fills ran (%q), want %d modes of %d fills each", len(results), len(fills),
			fills, len(wantEngines), 2*run.Rounds)
	}
	for _, r := range results {
		if got := wantEngines[r.Mode.Name]; got != r.Mode.Engine {
			t.Errorf("mode %q runs engine %q, want %q", r.Mode.Name, r.Mode.Engine, got)
		}
		if len(r.NoSync) != run.Rounds || len(r.Sync) != run.Rounds || r.NsPerSet() <= 0 || r.NsPerSyncSet() <= 0 {
			t.Errorf("%s: NoSync fills %v, Sync fills %v, want %d timed rounds of each", r.Mode.Name, r.NoSync, r.Sync, run.Rounds)
		}
		if r.Mode.Promise == "" {
			t.Errorf("%s: no promise", r.Mode.Name)
		}
		// One writer shares a sync with nobody: a sync per Sync Set, and
		// perhaps one more of the engine's own.
		if sps := r.SetsPerSync(); len(r.SyncWALSyncs) != run.Rounds || !(sps >= 0.9 && sps <= 1) {
			t.Errorf("%s: WAL syncs %v for %d Sync Sets a round: %.3f Sets per sync, want one writer's 0.9-1",
				r.Mode.Name, r.SyncWALSyncs, run.SyncKeys, sps)
		}
	}
	if first, second := fills[0], fills[2*len(wantEngines)]; !strings.HasPrefix(second, results[len(results)-1].Mode.Name) ||
		!strings.HasPrefix(first, results[0].Mode.Name) {
		t.Errorf("round 1 starts with %q, round 2 with %q: want the modes in turn, reversed every other round", first, second)
	}
}

// TestWriteModes_Options checks that each bloomkv mode opens its store
// with its own WAL mode, on options made afresh for every store.
func TestWriteModes_Options(t *testing.T) {
	var made []*kv.Options
	kvOpts := func() *kv.Options {
		made = append(made, smallSizes.KVOptions())
		return made[len(made)-1]
	}
	modes := WriteModes(kvOpts, smallSizes.PebbleOptions)
	want := map[string]bool{WriteModeKV: false, WriteModeKVBackground: true}
	opened := 0
	for _, m := range modes {
		background, ok := want[m.Name]
		if !ok {
			continue
		}
		e, err := m.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		opened++
		if got := made[len(made)-1].BackgroundWALWrites; got != background || len(made) != opened {
			t.Errorf("%s: opened with BackgroundWALWrites %v from options %d, want %v from options %d",
				m.Name, got, len(made), background, opened)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if opened != len(want) {
		t.Fatalf("opened %d bloomkv modes, want %d", opened, len(want))
	}
}

// droppingEngine is an engine that acknowledges every other Set without
// writing it.
type droppingEngine struct {
	Engine
	n int
}

func (d *droppingEngine) Set(key, value []byte, sync bool) error {
	d.n++
	if d.n%2 == 0 {
		return nil
	}
	return d.Engine.Set(key, value, sync)
}

// TestRunWriteModes_LostWrites checks that a fill whose writes did not
// all land fails the run rather than giving a time.
func TestRunWriteModes_LostWrites(t *testing.T) {
	fs := vfs.NewMem()
	lossy := WriteMode{Name: "lossy", Engine: EngineKV, Open: func(dir string) (Engine, error) {
		e, err := OpenKV(dir, &kv.Options{FS: fs})
		return &droppingEngine{Engine: e}, err
	}}
	run := WriteModeRun{Keys: 500, SyncKeys: 10, ValueSize: 10, Rounds: 1, Gen: NewKeyGen(3)}
	_, err := RunWriteModes(context.Background(), fs, "stores", []WriteMode{lossy}, run, nil)
	if err == nil || !strings.Contains(err.Error(), "lossy, NoSync fill: key") {
		t.Fatalf("a fill that lost writes gave %v, want an error naming the missing key", err)
	}
}

func TestSyncFillKeys(t *testing.T) {
	for keys, want := range map[int]int{1: 1, 999: 999, 1000: 1000, 100_000: 1000, 500_000: 1000, 1_000_000: 2000} {
		if got := SyncFillKeys(keys); got != want {
			t.Errorf("SyncFillKeys(%d) = %d, want %d", keys, got, want)
		}
	}
}

func TestWriteModeResult_NoRounds(t *testing.T) {
	r := WriteModeResult{Keys: 10, SyncKeys: 10}
	if !math.IsNaN(r.NsPerSet()) || !math.IsNaN(r.NsPerSyncSet()) || !math.IsNaN(r.SetsPerSync()) {
		t.Errorf("no rounds: %v, %v ns per Set, %v Sets per sync, want NaN", r.NsPerSet(), r.NsPerSyncSet(), r.SetsPerSync())
	}
}

// TestNsPerWrite: a duration per write, NaN with no writes; the best
// round's per-Set figure is the shortest round's.
func TestNsPerWrite(t *testing.T) {
	if got := NsPerWrite(3*time.Millisecond, 1000); got != 3000 {
		t.Errorf("3ms over 1000 writes: %v ns each, want 3000", got)
	}
	if got := NsPerWrite(time.Second, 0); !math.IsNaN(got) {
		t.Errorf("no writes: %v ns each, want NaN", got)
	}
	r := WriteModeResult{NoSync: []time.Duration{5 * time.Millisecond, 2 * time.Millisecond}, Keys: 1000}
	if got := r.NsPerSet(); got != 2000 {
		t.Errorf("best of 5ms and 2ms over 1000 Sets: %v ns each, want 2000", got)
	}
}

// meetingEngine holds each of the first `writers` Sets until that many
// are in Set at once, and fails them if they never are: a fill that does
// not write from that many goroutines at once fails.
type meetingEngine struct {
	Engine
	writers int32
	arrived atomic.Int32
	met     chan struct{}
	keys    gosync.Map // every key written, for the test to count
}

func (m *meetingEngine) Set(key, value []byte, sync bool) error {
	m.keys.Store(string(key), true)
	if n := m.arrived.Add(1); n <= m.writers {
		if n == m.writers {
			close(m.met)
		}
		select {
		case <-m.met:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%d of %d writers in Set at once after 10s", m.arrived.Load(), m.writers)
		}
	}
	return m.Engine.Set(key, value, sync)
}

// TestRunWriteModes_Writers fills with 4 writers: they must write at
// once, and every key must land.
func TestRunWriteModes_Writers(t *testing.T) {
	fs := vfs.NewMem()
	var engines []*meetingEngine
	mode := WriteMode{Name: "meeting", Engine: EngineKV, Open: func(dir string) (Engine, error) {
		e, err := OpenKV(dir, &kv.Options{FS: fs})
		m := &meetingEngine{Engine: e, writers: 4, met: make(chan struct{})}
		engines = append(engines, m)
		return m, err
	}}
	run := WriteModeRun{Keys: 2500, SyncKeys: 10, ValueSize: 10, Rounds: 1, Gen: NewKeyGen(5), Writers: 4}
	results, err := RunWriteModes(context.Background(), fs, "stores", []WriteMode{mode}, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(engines) != 2 || len(results[0].NoSync) != 1 || len(results[0].Sync) != 1 {
		t.Fatalf("%d stores opened, %d NoSync and %d Sync fills, want 2, 1 and 1", len(engines),
			len(results[0].NoSync), len(results[0].Sync))
	}
	if sps := results[0].SetsPerSync(); !(sps >= 1 && sps <= float64(run.Writers)) {
		t.Errorf("%.3f Sync Sets per WAL sync (%v syncs), want 1 to %d writers' worth", sps, results[0].SyncWALSyncs, run.Writers)
	}
	for i, want := range []int{run.Keys, run.SyncKeys} {
		n := 0
		engines[i].keys.Range(func(any, any) bool { n++; return true })
		if n != want {
			t.Errorf("fill %d wrote %d distinct keys, want %d", i, n, want)
		}
	}
}
