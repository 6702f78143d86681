package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/bloomkv/bloomkv/kv"
)

// The names of the engines, as benchmarks and reports show them.
const (
	EngineKV     = "bloomkv"
	EnginePebble = "pebble"
)

// Engine is a store under test. Every method but Counters, Shape and
// Stats may fail; a benchmark stops at the first error.
type Engine interface {
	// Name is EngineKV or EnginePebble.
	Name() string
	// Set writes one key, synced to disk when sync is set.
	Set(key, value []byte, sync bool) error
	// Apply writes, in one batch, the writes fill makes through set.
	Apply(fill func(set func(key, value []byte) error) error, sync bool) error
	// Get looks key up. The value is only valid until the next call.
	Get(key []byte) (value []byte, found bool, err error)
	// NewIter opens an unbounded iterator over the store as it is now.
	NewIter() (Iter, error)
	// SeekPrefix seeks to prefix with SeekPrefixGE and counts the keys
	// with that prefix, through an iterator that Refresh reopens.
	SeekPrefix(prefix []byte) (int, error)
	// Flush writes the memtable to L0 and waits until it is done.
	Flush() error
	// Compact flushes, compacts the whole key range, then waits until
	// the store is idle.
	Compact() error
	// WaitIdle waits until no flush or compaction runs or is due (the
	// idle rule), or until ctx ends.
	WaitIdle(ctx context.Context) error
	// Refresh makes the lookups and prefix seeks that follow see every
	// write made so far.
	Refresh() error
	// Counters returns the engine's cumulative lookup counters.
	Counters() Counters
	// Shape returns the non-empty levels of the LSM.
	Shape() []LevelShape
	// Footprint returns the keys and filter bytes of the tables.
	Footprint() (Footprint, error)
	// Stats returns what a fill reports of the engine.
	Stats() Stats
	// Close closes the store and releases what the harness opened.
	Close() error
}

// Iter is what the benchmarks need of either engine's iterator.
type Iter interface {
	First() bool
	Last() bool
	SeekGE(key []byte) bool
	Next() bool
	Prev() bool
	Key() []byte
	Value() []byte
	Error() error
	Close() error
}

// Counters are an engine's cumulative lookup counters, in bloomkv's terms
// (kv.LookupMetrics). Pebble v1.1.5 counts per DB, not per level, and
// counts no data-block reads apart: see [Pebble.Counters].
type Counters struct {
	Total  kv.LookupMetrics
	Levels []kv.LookupMetrics // index = level; nil when the engine counts no levels
	// CacheGets and CacheMisses count block cache lookups of any block
	// (Pebble's index and filter blocks included).
	CacheGets, CacheMisses int64
}

// Footprint is what a store's tables hold.
type Footprint struct {
	FilterBytes, Keys int64
}

// LevelShape is one non-empty level of an LSM.
type LevelShape struct {
	Level  int   `json:"level"`
	Tables int   `json:"tables"`
	Bytes  int64 `json:"bytes"`
}

// FormatShape formats the non-empty levels of an LSM: "L0: 2, L6: 9"
// (tables per level), or "empty".
func FormatShape(levels []LevelShape) string {
	if len(levels) == 0 {
		return "empty"
	}
	parts := make([]string, len(levels))
	for i, l := range levels {
		parts[i] = fmt.Sprintf("L%d: %d", l.Level, l.Tables)
	}
	return strings.Join(parts, ", ")
}

// L0Tables returns the number of L0 tables of an LSM shape.
func L0Tables(shape []LevelShape) int {
	if len(shape) > 0 && shape[0].Level == 0 {
		return shape[0].Tables
	}
	return 0
}

// Stats is what a fill reports of an engine.
type Stats struct {
	// TablesChecked counts, over all lookups so far, the tables whose
	// filter a lookup checked. AllTables is true when that is every table
	// a lookup considered (bloomkv); Pebble's Get reads L6 without its
	// filter, uncounted.
	TablesChecked int64
	AllTables     bool
	// SortedRuns is L0's tables (Pebble: sublevels) plus the non-empty
	// levels below: what a lookup may consult at most.
	SortedRuns int
	// WriteAmp is (WAL + flushed + compacted bytes) / WAL bytes.
	WriteAmp float64
	// TableBytes is the size of the engine's tables.
	TableBytes int64
	// OnHeap is what the engine holds on the Go heap for its block cache
	// and memtables.
	OnHeap int64
	// WALSyncs counts the syncs of the WAL since the store opened: over
	// the Sync writes of a fill, how many writers shared each.
	WALSyncs int64
}
