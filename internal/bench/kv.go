package bench

import (
	"context"
	"errors"

	"github.com/bloomkv/bloomkv/kv"
)

// KV is a bloomkv store under test.
type KV struct {
	// DB is the store, for what a benchmark reads beyond Engine.
	DB *kv.DB
	it *kv.Iterator // of SeekPrefix, opened by the first after Refresh
}

// OpenKV opens a bloomkv store in dir with opts.
func OpenKV(dir string, opts *kv.Options) (*KV, error) {
	db, err := kv.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return &KV{DB: db}, nil
}

// Name returns EngineKV.
func (e *KV) Name() string { return EngineKV }

func writeOptions(sync bool) *kv.WriteOptions {
	if sync {
		return kv.Sync
	}
	return kv.NoSync
}

// Set implements Engine.
func (e *KV) Set(key, value []byte, sync bool) error {
	return e.DB.Set(key, value, writeOptions(sync))
}

// Apply implements Engine.
func (e *KV) Apply(fill func(set func(key, value []byte) error) error, sync bool) error {
	b := e.DB.NewBatch()
	defer b.Close()
	if err := fill(b.Set); err != nil {
		return err
	}
	return e.DB.Apply(b, writeOptions(sync))
}

// Get implements Engine. Every Get sees the latest writes.
func (e *KV) Get(key []byte) ([]byte, bool, error) {
	v, err := e.DB.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

// NewIter implements Engine.
func (e *KV) NewIter() (Iter, error) { return e.DB.NewIter(nil) }

// SeekPrefix implements Engine.
func (e *KV) SeekPrefix(prefix []byte) (int, error) {
	if e.it == nil {
		it, err := e.DB.NewIter(nil)
		if err != nil {
			return 0, err
		}
		e.it = it
	}
	n := 0
	for ok := e.it.SeekPrefixGE(prefix); ok; ok = e.it.Next() {
		n++
	}
	return n, e.it.Error()
}

// Flush implements Engine.
func (e *KV) Flush() error { return e.DB.Flush() }

// Compact implements Engine.
func (e *KV) Compact() error {
	if err := e.DB.Compact(nil, nil); err != nil {
		return err
	}
	return e.DB.WaitIdle(context.Background())
}

// WaitIdle is kv.DB.WaitIdle: the scheduler's own rule.
func (e *KV) WaitIdle(ctx context.Context) error { return e.DB.WaitIdle(ctx) }

// Refresh closes SeekPrefix's iterator, so the next opens one over the
// current state.
func (e *KV) Refresh() error {
	if e.it == nil {
		return nil
	}
	err := e.it.Close()
	e.it = nil
	return err
}

// Counters reads the total and per-level lookup counters of DB.Metrics.
func (e *KV) Counters() Counters {
	m := e.DB.Metrics()
	c := Counters{Total: m.Lookups, Levels: make([]kv.LookupMetrics, len(m.Levels)),
		CacheGets: m.BlockCache.Hits + m.BlockCache.Misses, CacheMisses: m.BlockCache.Misses}
	for i, l := range m.Levels {
		c.Levels[i] = l.Lookups
	}
	return c
}

// Shape implements Engine.
func (e *KV) Shape() []LevelShape {
	var shape []LevelShape
	for level, l := range e.DB.Metrics().Levels {
		if l.NumFiles > 0 {
			shape = append(shape, LevelShape{Level: level, Tables: l.NumFiles, Bytes: l.Size})
		}
	}
	return shape
}

// Footprint implements Engine.
func (e *KV) Footprint() (Footprint, error) {
	var fp Footprint
	for _, l := range e.DB.Metrics().Levels {
		fp.FilterBytes += l.FilterBytes
		fp.Keys += l.Keys
	}
	return fp, nil
}

// Stats implements Engine: every L0 table is a sorted run.
func (e *KV) Stats() Stats {
	m := e.DB.Metrics()
	s := Stats{TablesChecked: m.Lookups.TablesConsidered, AllTables: true, WriteAmp: m.WriteAmp,
		OnHeap: m.BlockCache.Size + m.MemTable.Size, SortedRuns: m.Levels[0].NumFiles, WALSyncs: m.WAL.Syncs}
	for i, l := range m.Levels {
		if i > 0 && l.NumFiles > 0 {
			s.SortedRuns++
		}
		s.TableBytes += l.Size
	}
	return s
}

// Close implements Engine.
func (e *KV) Close() error {
	return errors.Join(e.Refresh(), e.DB.Close())
}
