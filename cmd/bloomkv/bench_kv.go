package main

import (
	"context"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// store is an engine under test, as bench drives it.
type store interface {
	// writeBatch applies, without syncing, one batch of the writes fill
	// makes through set.
	writeBatch(fill func(set func(key, value []byte) error) error) error
	// flush writes the memtable to an L0 table and waits until it is done.
	flush() error
	// waitIdle waits until no flush or compaction is running or due (no
	// level over its target).
	waitIdle()
	// compact compacts the whole key range, then waits until idle.
	compact() error
	// refresh makes the lookups that follow see every write made so far.
	refresh() error
	// get looks key up. The value is only valid until the next call.
	get(key []byte) (value []byte, found bool, err error)
	// counters returns the engine's cumulative lookup counters.
	counters() lookupSnapshot
	// shape returns the non-empty levels of the LSM.
	shape() []levelShape
	// footprint returns the keys and filter bytes of the tables.
	footprint() (footprint, error)
	close() error
}

// load writes keys [lo, hi) of the workload into s in index order (random
// key order), in NoSync batches of loadBatch writes.
func load(ctx context.Context, s store, w *workload, lo, hi int, prog *progress) error {
	for ; lo < hi; lo += loadBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(loadBatch, hi-lo)
		if err := loadBatchAt(s, w, lo, n); err != nil {
			return err
		}
		prog.add(n)
	}
	return nil
}

// loadBatchAt writes keys [lo, lo+n) in one NoSync batch.
func loadBatchAt(s store, w *workload, lo, n int) error {
	var key [keySize]byte
	var value []byte
	return s.writeBatch(func(set func(key, value []byte) error) error {
		for i := lo; i < lo+n; i++ {
			value = w.kg.value(value[:0], i, w.valueSize)
			if err := set(w.kg.present(key[:0], i), value); err != nil {
				return err
			}
		}
		return nil
	})
}

// kvStore is a bloomkv store.
type kvStore struct {
	db *kv.DB
}

// openKV opens a bloomkv store in dir with the bench's sizes, then the
// configuration's changes.
func openKV(dir string, o benchOptions, configure func(*kv.Options)) (*kvStore, error) {
	opts := &kv.Options{
		FS:             vfs.Default,
		BlockCacheSize: int64(o.cache),
		MemTableSize:   int64(o.memtable),
		TargetFileSize: int64(o.tableSize),
		LBaseMaxBytes:  int64(o.l1Size),
		// The settled shape is that of a store taking writes, with the
		// L0 tables it holds between L0 compactions, as Pebble's store
		// keeps them (openPebble): no settling of L0 once writes stop.
		DisableL0Settling: true,
	}
	if configure != nil {
		configure(opts)
	}
	db, err := kv.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return &kvStore{db: db}, nil
}

func (s *kvStore) writeBatch(fill func(set func(key, value []byte) error) error) error {
	b := s.db.NewBatch()
	if err := fill(b.Set); err != nil {
		return err
	}
	return s.db.Apply(b, kv.NoSync)
}

func (s *kvStore) flush() error { return s.db.Flush() }

func (s *kvStore) waitIdle() { waitIdle(s.idle) }

// idle reports whether no flush or compaction is running or due.
func (s *kvStore) idle() bool {
	m := s.db.Metrics()
	if m.Compact.InProgress != 0 || m.MemTable.Count != 1 {
		return false
	}
	return scoresBelowOne(len(m.Levels), func(i int) float64 { return m.Levels[i].Score })
}

// scoresBelowOne reports whether every level but the last (which never
// compacts) has a compaction score under 1, so the picker has nothing to do.
func scoresBelowOne(levels int, score func(level int) float64) bool {
	for i := range levels - 1 {
		if score(i) >= 1 {
			return false
		}
	}
	return true
}

// waitIdle polls idle until it reports true: background work must not
// change the LSM during lookups meant to measure a settled one.
func waitIdle(idle func() bool) {
	for !idle() {
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *kvStore) compact() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	if err := s.db.Compact(nil, nil); err != nil {
		return err
	}
	waitIdle(s.idle)
	return nil
}

// refresh does nothing: every Get sees the latest writes.
func (s *kvStore) refresh() error { return nil }

func (s *kvStore) get(key []byte) ([]byte, bool, error) {
	v, err := s.db.Get(key)
	if errNotFound(err) {
		return nil, false, nil
	}
	return v, err == nil, err
}

// counters reads the total and per-level lookup counters of DB.Metrics.
func (s *kvStore) counters() lookupSnapshot {
	m := s.db.Metrics()
	snap := lookupSnapshot{Total: fromLookupMetrics(m.Lookups), Levels: make([]lookupCounts, len(m.Levels))}
	for i, l := range m.Levels {
		snap.Levels[i] = fromLookupMetrics(l.Lookups)
	}
	return snap
}

func (s *kvStore) shape() []levelShape {
	var shape []levelShape
	for level, l := range s.db.Metrics().Levels {
		if l.NumFiles > 0 {
			shape = append(shape, levelShape{Level: level, Tables: l.NumFiles, Bytes: l.Size})
		}
	}
	return shape
}

func (s *kvStore) footprint() (footprint, error) {
	var fp footprint
	for _, l := range s.db.Metrics().Levels {
		fp.FilterBytes += l.FilterBytes
		fp.Keys += l.Keys
	}
	return fp, nil
}

func (s *kvStore) close() error { return s.db.Close() }
