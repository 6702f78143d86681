package main

import (
	"context"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// store is an engine under test, as bench drives it.
type store interface {
	// writeBatch applies, without syncing, one batch of the writes fill
	// makes through set.
	writeBatch(fill func(set func(key, value []byte) error) error) error
	// settle flushes the memtable, compacts the whole key range and waits
	// for the background compactions that follow, so the lookups meet a
	// steady LSM rather than a pile of L0 tables or one that changes.
	settle() error
	// get looks key up. The value is only valid until the next call.
	get(key []byte) (value []byte, found bool, err error)
	// counters returns the engine's cumulative lookup counters.
	counters() lookupCounts
	// footprint returns the filter bytes and the shape of the LSM.
	footprint() (footprint, error)
	close() error
}

// load writes the workload's keys into s in index order (random key
// order), in NoSync batches of loadBatch writes.
func load(ctx context.Context, s store, w *workload, prog *progress) error {
	var key [keySize]byte
	var value []byte
	for lo := 0; lo < w.keys; lo += loadBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+loadBatch, w.keys)
		err := s.writeBatch(func(set func(key, value []byte) error) error {
			for i := lo; i < hi; i++ {
				value = w.kg.value(value[:0], i, w.valueSize)
				if err := set(w.kg.present(key[:0], i), value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		prog.add(hi - lo)
	}
	return nil
}

// kvStore is a bloomkv store.
type kvStore struct {
	db *kv.DB
}

// openKV opens a bloomkv store in dir with filters built by policy, or
// without filters when policy is nil.
func openKV(dir string, o benchOptions, policy bloompolicy.FilterPolicy) (*kvStore, error) {
	return openKVWith(dir, kvOptions(o, policy))
}

// kvOptions returns the options of bench's bloomkv stores.
func kvOptions(o benchOptions, policy bloompolicy.FilterPolicy) *kv.Options {
	return &kv.Options{
		FS:             vfs.Default,
		FilterPolicy:   policy,
		DisableFilters: policy == nil,
		BlockCacheSize: int64(o.cache),
	}
}

// openKVWith opens a bloomkv store in dir with opts.
func openKVWith(dir string, opts *kv.Options) (*kvStore, error) {
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

func (s *kvStore) settle() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	if err := s.db.Compact(nil, nil); err != nil {
		return err
	}
	waitIdle(func() bool { return s.db.Metrics().Compact.InProgress == 0 })
	return nil
}

// waitIdle polls idle until it reports true: background compactions the
// manual one left to do (a level over its target size) must not run
// during the timed lookups.
func waitIdle(idle func() bool) {
	for !idle() {
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *kvStore) get(key []byte) ([]byte, bool, error) {
	v, err := s.db.Get(key)
	if errNotFound(err) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (s *kvStore) counters() lookupCounts {
	return fromLookupMetrics(s.db.Metrics().Lookups)
}

func (s *kvStore) footprint() (footprint, error) {
	var fp footprint
	for level, l := range s.db.Metrics().Levels {
		fp.FilterBytes += l.FilterBytes
		fp.Keys += l.Keys
		if l.NumFiles > 0 {
			fp.Levels = append(fp.Levels, levelShape{Level: level, Tables: l.NumFiles, Bytes: l.Size})
		}
	}
	return fp, nil
}

func (s *kvStore) close() error { return s.db.Close() }
