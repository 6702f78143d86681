package pebbleadapter

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// metricsOf reports fixed metrics, as a store that never changes would.
type metricsOf pebble.Metrics

func (m *metricsOf) Metrics() *pebble.Metrics { return (*pebble.Metrics)(m) }

func TestIdle(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(m *pebble.Metrics)
		idle bool
	}{
		{"nothing", func(*pebble.Metrics) {}, true},
		{"compaction running", func(m *pebble.Metrics) { m.Compact.NumInProgress = 1 }, false},
		{"flush running", func(m *pebble.Metrics) { m.Flush.NumInProgress = 1 }, false},
		{"L0 due", func(m *pebble.Metrics) { m.Levels[0].Score = 1 }, false},
		{"L5 due", func(m *pebble.Metrics) { m.Levels[5].Score = 1.5 }, false},
		{"L5 under", func(m *pebble.Metrics) { m.Levels[5].Score = 0.99 }, true},
		{"L6 scored", func(m *pebble.Metrics) { m.Levels[6].Score = 3 }, true}, // the bottom never compacts
		{"debt left", func(m *pebble.Metrics) { m.Compact.EstimatedDebt = 1 << 20 }, true},
	} {
		var m pebble.Metrics
		tc.set(&m)
		if got := Idle(&m); got != tc.idle {
			t.Errorf("%s: Idle = %v, want %v", tc.name, got, tc.idle)
		}
	}
}

// TestWaitIdle_Context checks that WaitIdle gives up with the context's
// error on a store that stays busy.
func TestWaitIdle_Context(t *testing.T) {
	var busy metricsOf
	busy.Compact.NumInProgress = 1
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WaitIdle(ctx, &busy); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitIdle on a busy store with a canceled context = %v", err)
	}
}

// TestWaitIdle_Settles loads a real Pebble store past several flushes and
// checks that WaitIdle returns once Idle holds.
func TestWaitIdle_Settles(t *testing.T) {
	db, err := pebble.Open("db", &pebble.Options{FS: vfs.NewMem(), Logger: QuietLogger{},
		MemTableSize: 64 << 10, LBaseMaxBytes: 128 << 10, L0CompactionThreshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	value := make([]byte, 100)
	for i := range 20000 {
		if err := db.Set([]byte(fmt.Sprintf("k%08d", i*7919%20000)), value, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := WaitIdle(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.Flush.Count < 5 || m.Compact.Count == 0 {
		t.Fatalf("%d flushes and %d compactions: the store never had work to wait for", m.Flush.Count, m.Compact.Count)
	}
	if !Idle(m) {
		t.Fatalf("WaitIdle returned on a busy store:\n%s", m)
	}
}
