package bench

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// PebbleLookups is how a Pebble engine answers Get.
type PebbleLookups int

const (
	// PebbleGet answers with DB.Get, which never reads L6 filters:
	// Pebble v1.1.5 reads them only for iterators opened with
	// IterOptions.UseL6Filters. A compacted Pebble store sits in L6, where
	// every such Get reads a data block, present key or not.
	PebbleGet PebbleLookups = iota
	// PebbleSeekPrefix answers through one iterator opened with
	// UseL6Filters, positioned with SeekPrefixGE (which consults filters)
	// on the whole key ([PebbleComparer] makes the whole key the prefix,
	// as bloomkv hashes it). The iterator sees the DB as it was when
	// opened: Refresh reopens it.
	PebbleSeekPrefix
)

// Pebble is a Pebble v1.1.5 store under test.
type Pebble struct {
	// DB is the store, for what a benchmark reads beyond Engine.
	DB      *pebble.DB
	cache   *pebble.Cache
	lookups PebbleLookups
	walSync *atomic.Int64    // the syncs of its WAL files (walSyncFS)
	it      *pebble.Iterator // UseL6Filters; opened when first needed after Refresh
	gets    int64
	found   int64
	value   []byte
}

// OpenPebble opens a Pebble store in dir with opts, whose Cache it takes
// over (it releases it on Close, or at once if the open fails). It wraps
// opts.FS (vfs.Default if nil) to count the WAL's syncs.
func OpenPebble(dir string, opts *pebble.Options, lookups PebbleLookups) (*Pebble, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	syncs := new(atomic.Int64)
	opts.FS = walSyncFS{FS: opts.FS, syncs: syncs}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		if opts.Cache != nil {
			opts.Cache.Unref()
		}
		return nil, err
	}
	return &Pebble{DB: db, cache: opts.Cache, lookups: lookups, walSync: syncs}, nil
}

// Name returns EnginePebble.
func (e *Pebble) Name() string { return EnginePebble }

func pebbleWriteOptions(sync bool) *pebble.WriteOptions {
	if sync {
		return pebble.Sync
	}
	return pebble.NoSync
}

// Set implements Engine.
func (e *Pebble) Set(key, value []byte, sync bool) error {
	return e.DB.Set(key, value, pebbleWriteOptions(sync))
}

// Apply implements Engine.
func (e *Pebble) Apply(fill func(set func(key, value []byte) error) error, sync bool) error {
	b := e.DB.NewBatch()
	if err := fill(func(key, value []byte) error { return b.Set(key, value, nil) }); err != nil {
		return errors.Join(err, b.Close())
	}
	if err := e.DB.Apply(b, pebbleWriteOptions(sync)); err != nil {
		return errors.Join(err, b.Close())
	}
	return b.Close()
}

// Get implements Engine, as the engine's PebbleLookups says. The value is
// copied, as bloomkv's Get returns the caller's own copy.
func (e *Pebble) Get(key []byte) ([]byte, bool, error) {
	e.gets++
	if e.lookups == PebbleSeekPrefix {
		return e.seekGet(key)
	}
	v, closer, err := e.DB.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	e.value = append(e.value[:0], v...)
	e.found++
	return e.value, true, closer.Close()
}

// seekGet looks key up with SeekPrefixGE.
func (e *Pebble) seekGet(key []byte) ([]byte, bool, error) {
	it, err := e.iter()
	if err != nil {
		return nil, false, err
	}
	if !it.SeekPrefixGE(key) || !bytes.Equal(it.Key(), key) {
		return nil, false, it.Error()
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, false, err
	}
	e.value = append(e.value[:0], v...)
	e.found++
	return e.value, true, nil
}

// iter returns the lookups' iterator, opening it if Refresh closed it.
func (e *Pebble) iter() (*pebble.Iterator, error) {
	if e.it == nil {
		it, err := e.DB.NewIter(&pebble.IterOptions{UseL6Filters: true})
		if err != nil {
			return nil, err
		}
		e.it = it
	}
	return e.it, nil
}

// NewIter implements Engine.
func (e *Pebble) NewIter() (Iter, error) { return e.DB.NewIter(nil) }

// SeekPrefix implements Engine, through the iterator with UseL6Filters.
func (e *Pebble) SeekPrefix(prefix []byte) (int, error) {
	it, err := e.iter()
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.SeekPrefixGE(prefix); ok; ok = it.Next() {
		n++
	}
	return n, it.Error()
}

// Flush implements Engine.
func (e *Pebble) Flush() error { return e.DB.Flush() }

// Compact implements Engine. Keys of the benchmarks sort below 0xff.
func (e *Pebble) Compact() error {
	if err := e.DB.Flush(); err != nil {
		return err
	}
	if err := e.DB.Compact(nil, []byte{0xff}, true); err != nil {
		return err
	}
	return e.WaitIdle(context.Background())
}

// WaitIdle waits until Pebble has nothing to flush or compact, by
// pebbleadapter.Idle's rule, or until ctx ends.
func (e *Pebble) WaitIdle(ctx context.Context) error { return pebbleadapter.WaitIdle(ctx, e.DB) }

// Refresh closes the lookups' iterator, so the next lookup opens one over
// the current state.
func (e *Pebble) Refresh() error {
	if e.it == nil {
		return nil
	}
	err := e.it.Close()
	e.it = nil
	return err
}

// Counters maps Pebble's metrics onto bloomkv's, in total only: Pebble
// v1.1.5 counts filter checks and block-cache accesses per DB, not per
// level. Every filter check is a table considered and a filter hit a
// negative (a saved read). A miss ("maybe") is a true positive when the
// lookup found its key, a false one otherwise: the workloads write each
// key once and look up only keys that have been flushed, so a found key is
// in exactly one table, whose filter said maybe. Block reads are all
// block-cache accesses, index and filter blocks included, since Pebble
// does not count data blocks apart.
func (e *Pebble) Counters() Counters {
	m := e.DB.Metrics()
	gets := m.BlockCache.Hits + m.BlockCache.Misses
	return Counters{Total: kv.LookupMetrics{
		Gets:                 e.gets,
		TablesConsidered:     m.Filter.Hits + m.Filter.Misses,
		FilterNegatives:      m.Filter.Hits,
		FilterTruePositives:  e.found,
		FilterFalsePositives: m.Filter.Misses - e.found,
		BlockReads:           gets,
		BlockCacheMisses:     m.BlockCache.Misses,
	}, CacheGets: gets, CacheMisses: m.BlockCache.Misses}
}

// Shape implements Engine.
func (e *Pebble) Shape() []LevelShape {
	var shape []LevelShape
	for level, l := range e.DB.Metrics().Levels {
		if l.NumFiles > 0 {
			shape = append(shape, LevelShape{Level: level, Tables: int(l.NumFiles), Bytes: l.Size})
		}
	}
	return shape
}

// Footprint implements Engine, from the tables' properties.
func (e *Pebble) Footprint() (Footprint, error) {
	var fp Footprint
	levels, err := e.DB.SSTables(pebble.WithProperties())
	if err != nil {
		return fp, err
	}
	for _, tables := range levels {
		for _, t := range tables {
			fp.FilterBytes += int64(t.Properties.FilterSize)
			fp.Keys += int64(t.Properties.NumEntries)
		}
	}
	return fp, nil
}

// Stats implements Engine. Tables checked are filter checks, which leave
// out the L6 table a Get reads without its filter; the block cache and
// memtables are on the Go heap only without cgo (pebbleManualOnHeap).
func (e *Pebble) Stats() Stats {
	m := e.DB.Metrics()
	total := m.Total()
	s := Stats{TablesChecked: m.Filter.Hits + m.Filter.Misses, SortedRuns: m.ReadAmp(),
		WriteAmp: total.WriteAmp(), TableBytes: total.Size, WALSyncs: e.walSync.Load()}
	if pebbleManualOnHeap {
		s.OnHeap = m.BlockCache.Size + int64(m.MemTable.Size)
	}
	return s
}

// Close implements Engine.
func (e *Pebble) Close() error {
	err := errors.Join(e.Refresh(), e.DB.Close())
	if e.cache != nil {
		e.cache.Unref()
	}
	return err
}
