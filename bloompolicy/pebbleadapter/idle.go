package pebbleadapter

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"
)

// Idle reports whether a Pebble store whose metrics are m has nothing to
// flush or compact: no flush or compaction running, and every level but
// the last (which never compacts) scoring under 1, so that its picker has
// nothing to do. Pebble v1.1.5's scheduler is not public, so this is read
// off its metrics, as kv.DB.WaitIdle's rule is bloomkv's own. It does not
// wait for Compact.EstimatedDebt to reach zero: Pebble's estimate stays
// above zero on a store whose every level scores under 1, where Pebble
// schedules nothing more.
//
// Measurements of a settled Pebble store (bloomkv's benchmark harness, the
// YCSB binding) wait with it, so both engines are measured at rest.
func Idle(m *pebble.Metrics) bool {
	if m.Compact.NumInProgress != 0 || m.Flush.NumInProgress != 0 {
		return false
	}
	for _, l := range m.Levels[:len(m.Levels)-1] {
		if l.Score >= 1 {
			return false
		}
	}
	return true
}

// idlePoll is how often WaitIdle reads the store's metrics.
const idlePoll = 5 * time.Millisecond

// WaitIdle waits until Idle holds for db's metrics, polling them, or until
// ctx ends, and then returns ctx.Err(). db is a *pebble.DB, or anything
// that reports Pebble's metrics.
func WaitIdle(ctx context.Context, db interface{ Metrics() *pebble.Metrics }) error {
	for !Idle(db.Metrics()) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(idlePoll):
		}
	}
	return nil
}

// QuietLogger is a pebble.Logger that keeps Pebble's informational
// logging out of the output of measurements and tests, where a store opened
// and closed many times would print pages of it; Fatalf panics with its
// message, as Pebble expects Fatalf not to return.
type QuietLogger struct{}

// Infof drops the message.
func (QuietLogger) Infof(string, ...any) {}

// Fatalf panics with the message.
func (QuietLogger) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
