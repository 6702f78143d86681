package main

import (
	"bytes"
	"fmt"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// pebbleStore is a Pebble v1.1.5 store set up to compare with bloomkv:
// the same block size, memtable size, table size and block cache size, the
// filter on every level, one filter per table (Pebble v1 has no other
// kind).
//
// Filters at L6: Pebble v1.1.5 reads L6 filters only for iterators opened
// with IterOptions.UseL6Filters; DB.Get never sets it, so after a full
// compaction (everything in L6) Get would use no filter at all. Lookups
// therefore go through one iterator opened with UseL6Filters, positioned
// with SeekPrefixGE (which consults filters) on the whole key: the
// comparer's Split returns the key's full length, so the prefix Pebble
// hashes is the key itself, as in bloomkv.
type pebbleStore struct {
	db    *pebble.DB
	cache *pebble.Cache
	iter  *pebble.Iterator // opened by settle, after the last write
	gets  int64
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

// pebbleMemTables is how many memtables Pebble charges to its block cache
// at most while bench runs: the mutable one and the one it keeps for
// recycling.
const pebbleMemTables = 2

func openPebble(dir string, o benchOptions, policy pebble.FilterPolicy) (*pebbleStore, error) {
	return openPebbleWith(dir, pebbleOptions(o, policy))
}

// pebbleOptions returns the options of bench's Pebble stores, with a block
// cache of their own.
func pebbleOptions(o benchOptions, policy pebble.FilterPolicy) *pebble.Options {
	// Pebble reserves its memtables' memory in the block cache, where
	// bloomkv keeps them apart. Without more room an 8 MiB cache would hold
	// no block at all behind two 4 MiB memtables; with it, blocks get the
	// same --cache bytes in both engines.
	cache := pebble.NewCache(int64(o.cache) + pebbleMemTables*kv.DefaultMemTableSize)
	opts := &pebble.Options{
		FS:           vfs.Default,
		Cache:        cache,
		Comparer:     pebbleComparer,
		MemTableSize: kv.DefaultMemTableSize,
		Logger:       quietLogger{},
	}
	// All seven levels explicitly: an Options with fewer Levels gets the
	// missing ones from Pebble's defaults (copies of the last given one).
	opts.Levels = make([]pebble.LevelOptions, 7)
	for i := range opts.Levels {
		opts.Levels[i] = pebble.LevelOptions{
			BlockSize:      kv.DefaultBlockSize,
			TargetFileSize: kv.DefaultTargetFileSize,
			FilterPolicy:   policy,
			FilterType:     pebble.TableFilter,
		}
	}
	return opts
}

// openPebbleWith opens a Pebble store in dir with opts, taking over their
// block cache.
func openPebbleWith(dir string, opts *pebble.Options) (*pebbleStore, error) {
	db, err := pebble.Open(dir, opts)
	if err != nil {
		opts.Cache.Unref()
		return nil, err
	}
	return &pebbleStore{db: db, cache: opts.Cache}, nil
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

// settle flushes, compacts every key (hex digits sort below 0xff) and waits
// for background compactions, then opens the iterator the lookups use.
func (s *pebbleStore) settle() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	if err := s.db.Compact(nil, []byte{0xff}, true); err != nil {
		return err
	}
	waitIdle(func() bool { return s.db.Metrics().Compact.NumInProgress == 0 })
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
	return s.value, true, nil
}

// counters maps Pebble's metrics onto bloomkv's: every filter check is a
// table considered, a filter hit a saved read (negative), a miss a
// positive, counted as false since only the absent phase uses it for the
// rate. Block reads are all block-cache accesses, index and filter blocks
// included, since Pebble does not count data blocks apart.
func (s *pebbleStore) counters() lookupCounts {
	m := s.db.Metrics()
	return lookupCounts{
		Gets:                 s.gets,
		TablesConsidered:     m.Filter.Hits + m.Filter.Misses,
		FilterNegatives:      m.Filter.Hits,
		FilterFalsePositives: m.Filter.Misses,
		BlockReads:           m.BlockCache.Hits + m.BlockCache.Misses,
		BlockCacheMisses:     m.BlockCache.Misses,
	}
}

func (s *pebbleStore) footprint() (footprint, error) {
	var fp footprint
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		return fp, err
	}
	for level, tables := range levels {
		var shape levelShape
		for _, t := range tables {
			fp.FilterBytes += int64(t.Properties.FilterSize)
			fp.Keys += int64(t.Properties.NumEntries)
			shape.Tables++
			shape.Bytes += int64(t.Size)
		}
		if shape.Tables > 0 {
			shape.Level = level
			fp.Levels = append(fp.Levels, shape)
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
