package bench

import (
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// Sizes are the sizes both engines of a comparison get.
type Sizes struct {
	MemTable int64 // bytes of a memtable
	Table    int64 // size at which flushes and compactions cut tables
	LBase    int64 // target size of the base level (see kv.Options.LBaseMaxBytes)
	Cache    int64 // bytes of block cache, for blocks alone
}

// KVOptions returns bloomkv options on disk (vfs.Default) with s, kv's
// default block size and L0 trigger, and no write slowdown before the L0
// stop (Pebble v1.1.5 has none). The filter is kv's default unless the
// caller sets one.
func (s Sizes) KVOptions() *kv.Options {
	return &kv.Options{
		FS:                        vfs.Default,
		MemTableSize:              s.MemTable,
		BlockSize:                 kv.DefaultBlockSize,
		BlockCacheSize:            s.Cache,
		TargetFileSize:            s.Table,
		LBaseMaxBytes:             s.LBase,
		L0CompactionThreshold:     kv.DefaultL0CompactionThreshold,
		L0SlowdownWritesThreshold: kv.DefaultL0StopWritesThreshold,
	}
}

// pebbleL0Factor converts bloomkv's L0 compaction trigger into Pebble's:
// Pebble scores L0 as 2 × its sublevels / L0CompactionThreshold (and
// tables whose keys arrive in random order each make a sublevel), so twice
// bloomkv's threshold compacts L0 at the same number of tables.
const pebbleL0Factor = 2

// pebbleMemTables is how many memtables Pebble charges to its block cache
// at most while a benchmark runs: the mutable one and the one it keeps
// for recycling.
const pebbleMemTables = 2

// PebbleOptions returns Pebble options on disk with what KVOptions gives
// bloomkv: the same memtable, block, table and base level sizes on all
// seven levels (an Options with fewer Levels gets the missing ones from
// Pebble's defaults, which double the table size per level), the same L0
// trigger and stop, Snappy, one filter per table (Pebble v1 has no other
// kind; none until [WithPebbleFilter]), and [PebbleComparer].
//
// The options hold a block cache of their own, which [OpenPebble] takes
// over. Pebble reserves its memtables' memory in that cache, where bloomkv
// keeps them apart, so it gets room for them on top of s.Cache: blocks get
// the same bytes in both engines. Read-triggered compactions are off:
// bloomkv has none, and they would change the LSM under lookups meant to
// measure one shape of it.
func (s Sizes) PebbleOptions() *pebble.Options {
	opts := &pebble.Options{
		FS:                    vfs.Default,
		Cache:                 pebble.NewCache(s.Cache + pebbleMemTables*s.MemTable),
		Comparer:              PebbleComparer,
		MemTableSize:          uint64(s.MemTable),
		LBaseMaxBytes:         s.LBase,
		L0CompactionThreshold: pebbleL0Factor * kv.DefaultL0CompactionThreshold,
		L0StopWritesThreshold: kv.DefaultL0StopWritesThreshold,
		Logger:                pebbleadapter.QuietLogger{},
	}
	opts.Experimental.ReadSamplingMultiplier = -1
	opts.Levels = make([]pebble.LevelOptions, 7)
	for i := range opts.Levels {
		opts.Levels[i] = pebble.LevelOptions{
			BlockSize:      kv.DefaultBlockSize,
			TargetFileSize: s.Table,
			FilterType:     pebble.TableFilter,
			Compression:    pebble.SnappyCompression,
		}
	}
	return opts
}

// WithPebbleFilter puts policy (nil: none) on every level of opts.
func WithPebbleFilter(opts *pebble.Options, policy pebble.FilterPolicy) {
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = policy
	}
}

// PebbleComparer is Pebble's bytewise comparer with a Split that makes the
// whole key the prefix, as bloomkv's filters hash whole keys without a
// Split, and as SeekPrefixGE requires. The name is unchanged: the order
// is the same.
var PebbleComparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = func(key []byte) int { return len(key) }
	return &c
}()
