package main

import (
	"bytes"
	"fmt"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// pebbleStore is a Pebble v1.1.5 store set up to compare with bloomkv:
// the same block, memtable, table, L1 and block cache sizes, the same L0
// trigger, the filter on every level, one filter per table (Pebble v1 has
// no other kind).
//
// Filters at L6: Pebble v1.1.5 reads L6 filters only for iterators opened
// with IterOptions.UseL6Filters; DB.Get never sets it, so the bottom level,
// which holds most of the data, would be read without its filter. Lookups
// therefore go through one iterator opened with UseL6Filters, positioned
// with SeekPrefixGE (which consults filters) on the whole key: the
// comparer's Split returns the key's full length, so the prefix Pebble
// hashes is the key itself, as in bloomkv. An iterator sees the DB as it was
// when opened, so refresh reopens it.
type pebbleStore struct {
	db    *pebble.DB
	cache *pebble.Cache
	iter  *pebble.Iterator // opened by refresh
	gets  int64
	found int64
	value []byte
}

// pebbleComparer is Pebble's bytewise comparer with a Split that makes the
// whole key the prefix, which SeekPrefixGE requires. The name is unchanged:
// the order is the same.
var pebbleComparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = func(key []byte) int { return len(key) }
	return &c
}()

// quietLogger keeps Pebble's informational logging off the terminal.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}

func (quietLogger) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// pebbleL0Factor converts bloomkv's L0 compaction trigger into Pebble's:
// Pebble scores L0 as 2 × its sublevels / L0CompactionThreshold (and
// tables whose keys arrive in random order each make a sublevel), so twice
// bloomkv's threshold compacts L0 at the same number of tables.
const pebbleL0Factor = 2

// pebbleMemTables is how many memtables Pebble charges to its block cache
// at most while bench runs: the mutable one and the one it keeps for
// recycling.
const pebbleMemTables = 2

// openPebble opens a Pebble store in dir with the bench's sizes, then the
// configuration's changes.
func openPebble(dir string, o benchOptions, configure func(*pebble.Options)) (*pebbleStore, error) {
	// Pebble reserves its memtables' memory in the block cache, where
	// bloomkv keeps them apart. Without more room a small cache would hold
	// few blocks behind the memtables; with it, blocks get the same --cache
	// bytes in both engines.
	cache := pebble.NewCache(int64(o.cache) + pebbleMemTables*int64(o.memtable))
	opts := &pebble.Options{
		FS:                    vfs.Default,
		Cache:                 cache,
		Comparer:              pebbleComparer,
		MemTableSize:          uint64(o.memtable),
		LBaseMaxBytes:         int64(o.l1Size),
		L0CompactionThreshold: pebbleL0Factor * kv.DefaultL0CompactionThreshold,
		L0StopWritesThreshold: kv.DefaultL0StopWritesThreshold,
		Logger:                quietLogger{},
	}
	// No read-triggered compactions: bloomkv has none, and they would
	// change the LSM under the lookups meant to measure one shape of it.
	opts.Experimental.ReadSamplingMultiplier = -1
	// All seven levels explicitly: an Options with fewer Levels gets the
	// missing ones from Pebble's defaults (copies of the last given one,
	// with doubling table sizes).
	opts.Levels = make([]pebble.LevelOptions, 7)
	for i := range opts.Levels {
		opts.Levels[i] = pebble.LevelOptions{
			BlockSize:      kv.DefaultBlockSize,
			TargetFileSize: int64(o.tableSize),
			FilterType:     pebble.TableFilter,
		}
	}
	if configure != nil {
		configure(opts)
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		cache.Unref()
		return nil, err
	}
	return &pebbleStore{db: db, cache: cache}, nil
}

// withPebbleFilter returns the configuration change that puts policy on every
// level.
func withPebbleFilter(policy pebble.FilterPolicy) func(*pebble.Options) {
	return func(o *pebble.Options) {
		for i := range o.Levels {
			o.Levels[i].FilterPolicy = policy
		}
	}
}

func (s *pebbleStore) writeBatch(fill func(set func(key, value []byte) error) error) error {
	b := s.db.NewBatch()
	if err := fill(func(key, value []byte) error { return b.Set(key, value, nil) }); err != nil {
		return err
	}
	if err := s.db.Apply(b, pebble.NoSync); err != nil {
		return err
	}
	return b.Close()
}

func (s *pebbleStore) flush() error { return s.db.Flush() }

func (s *pebbleStore) waitIdle() { waitIdle(s.idle) }

// compact compacts every key (hex digits sort below 0xff), then waits
// until idle.
func (s *pebbleStore) compact() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	if err := s.db.Compact(nil, []byte{0xff}, true); err != nil {
		return err
	}
	s.waitIdle()
	return nil
}

// idle reports whether no flush or compaction is running or due. It does
// not wait for Compact.EstimatedDebt to reach zero: Pebble's estimate stays
// above zero on a store whose every level scores under 1, where Pebble
// schedules nothing more.
func (s *pebbleStore) idle() bool {
	m := s.db.Metrics()
	if m.Compact.NumInProgress != 0 || m.Flush.NumInProgress != 0 {
		return false
	}
	return scoresBelowOne(len(m.Levels), func(i int) float64 { return m.Levels[i].Score })
}

// refresh replaces the lookups' iterator with one over the current state.
func (s *pebbleStore) refresh() error {
	if s.iter != nil {
		err := s.iter.Close()
		s.iter = nil
		if err != nil {
			return err
		}
	}
	it, err := s.db.NewIter(&pebble.IterOptions{UseL6Filters: true})
	if err != nil {
		return err
	}
	s.iter = it
	return nil
}

func (s *pebbleStore) get(key []byte) ([]byte, bool, error) {
	s.gets++
	if !s.iter.SeekPrefixGE(key) || !bytes.Equal(s.iter.Key(), key) {
		return nil, false, s.iter.Error()
	}
	v, err := s.iter.ValueAndErr()
	if err != nil {
		return nil, false, err
	}
	// Copy, as bloomkv's Get must: its result is the caller's to keep.
	s.value = append(s.value[:0], v...)
	s.found++
	return s.value, true, nil
}

// counters maps Pebble's metrics onto bloomkv's, in total only: Pebble
// v1.1.5 counts filter checks and block-cache accesses per DB, not per
// level. Every filter check is a table considered and a filter hit a
// negative (a saved read). A miss ("maybe") is a true positive when the
// lookup found its key, a false one otherwise: bench writes each key once
// and looks up only keys that have been flushed, so a found key is in
// exactly one table, whose filter said maybe. Block reads are all
// block-cache accesses, index and filter blocks included, since Pebble does
// not count data blocks apart.
func (s *pebbleStore) counters() lookupSnapshot {
	m := s.db.Metrics()
	return lookupSnapshot{Total: lookupCounts{
		Gets:                 s.gets,
		TablesConsidered:     m.Filter.Hits + m.Filter.Misses,
		FilterNegatives:      m.Filter.Hits,
		FilterTruePositives:  s.found,
		FilterFalsePositives: m.Filter.Misses - s.found,
		BlockReads:           m.BlockCache.Hits + m.BlockCache.Misses,
		BlockCacheMisses:     m.BlockCache.Misses,
	}}
}

func (s *pebbleStore) shape() []levelShape {
	var shape []levelShape
	for level, l := range s.db.Metrics().Levels {
		if l.NumFiles > 0 {
			shape = append(shape, levelShape{Level: level, Tables: int(l.NumFiles), Bytes: l.Size})
		}
	}
	return shape
}

func (s *pebbleStore) footprint() (footprint, error) {
	var fp footprint
	levels, err := s.db.SSTables(pebble.WithProperties())
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

func (s *pebbleStore) close() error {
	var err error
	if s.iter != nil {
		err = s.iter.Close()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	s.cache.Unref()
	return err
}
