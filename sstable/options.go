package sstable

import (
	"fmt"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
)

// Compression chooses how the writer compresses blocks.
type Compression uint8

const (
	// SnappyCompression, the zero value, stores a block Snappy-compressed
	// when that saves at least an eighth of it, and as is otherwise.
	SnappyCompression Compression = iota
	// NoCompression stores every block as is.
	NoCompression
)

// String names the compression.
func (c Compression) String() string {
	switch c {
	case SnappyCompression:
		return "snappy"
	case NoCompression:
		return "none"
	}
	return fmt.Sprintf("Compression(%d)", uint8(c))
}

// Defaults applied to zero WriterOptions fields.
const (
	DefaultBlockSize            = 4096
	DefaultBlockRestartInterval = 16
)

// MaxBlockSize is the largest BlockSize a Writer cuts blocks at: with an
// entry of up to 1 GiB after it, a block stays under 4 GiB.
const MaxBlockSize = 1 << 30

// WriterOptions configures a Writer. The zero value is usable: 4 KiB
// blocks, a restart point every 16 entries, bytewise keys, no filter and
// Snappy where it pays.
type WriterOptions struct {
	// BlockSize is the target uncompressed size of a data block; a block
	// is cut once it reaches it. 0 means DefaultBlockSize; above
	// MaxBlockSize, MaxBlockSize, so that a block with its last entry
	// stays within the 32-bit offsets of its restart points.
	BlockSize int
	// BlockRestartInterval is the number of entries between restart
	// points in data blocks. 0 means DefaultBlockRestartInterval.
	BlockRestartInterval int
	// Comparer orders the user keys; nil means [DefaultComparer]. With
	// a Split, the filters hold the distinct key prefixes of each block,
	// and the table records the Split's name.
	Comparer *Comparer
	// FilterPolicy builds one filter per data block; nil writes no filter
	// block.
	FilterPolicy bloompolicy.FilterPolicy
	// Compression chooses block compression.
	Compression Compression
}

// withDefaults returns the options with zero fields filled in.
func (o WriterOptions) withDefaults() WriterOptions {
	base.SetDefault(&o.BlockSize, DefaultBlockSize)
	o.BlockSize = min(o.BlockSize, MaxBlockSize)
	base.SetDefault(&o.BlockRestartInterval, DefaultBlockRestartInterval)
	if o.Comparer == nil {
		o.Comparer = base.DefaultComparer
	}
	return o
}

// ReaderOptions configures a Reader. The zero value reads a table of
// bytewise keys without a block cache and without filters.
type ReaderOptions struct {
	// Cache, shared by the readers of a store, keeps recently read blocks;
	// nil reads every block from the file.
	Cache *Cache
	// FileNum identifies the table in Cache and must be unique per cache.
	FileNum FileNum
	// Comparer orders the user keys; nil means [DefaultComparer]. Its
	// name must match the one the table was written with. A table whose
	// filters hold prefixes under another Split (or whole keys, when this
	// comparer has a Split, or the reverse) is read without its filter.
	Comparer *Comparer
	// Filters are the filter policies the reader may use, by Name. A table
	// whose policy is not here is read without its filter: correct, only
	// slower.
	Filters map[string]bloompolicy.FilterPolicy
	// FileName names the file in errors.
	FileName string
	// GlobalSeqNum, when not 0, is the sequence number of every entry and
	// range tombstone of the table, which must have been written with
	// sequence number 0 (the reader refuses it otherwise): a store that
	// ingests a table written outside it gives all its keys one sequence
	// number this way, as Pebble does, without rewriting the file. Keys,
	// Bounds, Properties and RangeDels then all carry it.
	GlobalSeqNum SeqNum
	// DeferFilter opens the table without loading its filter block: the
	// Reader answers lookups as a table without a filter until
	// Reader.LoadFilter. A store that caps filter memory uses it to load
	// only the filters it decides to hold.
	DeferFilter bool
	// CountMisses makes the Reader count the Get calls that find nothing
	// (Reader.Misses). It is off by default: the count is one atomic
	// counter per table, whose cache line every goroutine that looks the
	// table up would share, a cost on the read path of a store that does
	// not weigh its tables by their misses.
	CountMisses bool
}

// IterOptions configures a table iterator (Reader.NewIter, Reader.InitIter).
// The zero value, like a nil *IterOptions, iterates over the whole table
// through the block cache and counts nothing.
type IterOptions struct {
	// LowerBound and UpperBound limit the iterator to the user keys in
	// [LowerBound, UpperBound); a nil bound is open.
	LowerBound, UpperBound []byte
	// Stats, when not nil, receives what the iterator's prefix seeks cost
	// (Iter.SeekPrefixGE): one table considered per seek, the filters'
	// verdicts, and the data blocks read in prefix mode. A filter's
	// "maybe" counts as a true positive when the block held a key of the
	// prefix at or after the seek key, as a prefix match when it held keys
	// of the prefix only below it, and as a false positive otherwise. Reads
	// outside prefix mode are not counted. It must not be shared between
	// goroutines.
	Stats *LookupStats
	// Compaction makes an iterator for one pass over the table, as a
	// compaction reads its inputs: a block the cache holds is read from
	// the cache, and any other into a buffer of the iterator's own, reused
	// from block to block, without caching it, from the bytes the iterator
	// reads ahead of it (64 KiB of the file at a time). A pass over a
	// whole table then neither evicts the blocks lookups want (as Pebble
	// reads compaction inputs) nor leaves one buffer of garbage per
	// block, nor makes a system call per block. Key
	// and Value, value bytes included, are then valid only until the next
	// move.
	Compaction bool
}

// LookupStats accumulates what point lookups and prefix seeks cost.
// Reader.Get and the prefix seeks of an iterator with IterOptions.Stats
// add to it; the caller owns it and sums it across tables.
type LookupStats struct {
	// TablesConsidered counts the tables a lookup asked: one per Get, one
	// per table a prefix seek reached.
	TablesConsidered int64
	// FilterNegatives counts filters that answered "absent": data-block
	// reads saved.
	FilterNegatives int64
	// FilterTruePositives counts filters that answered "maybe" for a block
	// that held the user key.
	FilterTruePositives int64
	// FilterFalsePositives counts filters that answered "maybe" for a block
	// that did not hold the key, nor, under a Split, any key of its prefix:
	// the filter's own errors. FilterFalsePositives / (FilterFalsePositives
	// + FilterNegatives) is the filter's false-positive rate.
	FilterFalsePositives int64
	// PrefixMatches counts, under a Split, filters that answered "maybe"
	// for a block that held keys of the key's prefix but not the key (for
	// a prefix seek: only keys of the prefix below the seek key). The
	// filter holds prefixes, so it was right: these are neither true nor
	// false positives.
	PrefixMatches int64
	// FilterSkipped counts the tables a lookup asked that have a filter
	// the reader did not use: built by a policy not among
	// ReaderOptions.Filters, or under another Split than the Comparer's
	// (Properties.FilterSplitName). A reader given no policies at all
	// reads without filters on purpose, and counts none.
	FilterSkipped int64
	// BlockReads counts data blocks fetched.
	BlockReads int64
	// BlockCacheMisses counts, of those, the ones read from the file.
	BlockCacheMisses int64
	// RangeDelChecks counts the tables whose range tombstones were
	// searched for the key (held in memory: no block read). A table with
	// no range tombstones adds nothing. A table whose filter ruled the key
	// out is still searched, and counts as a filter negative too: a
	// filter speaks only of point keys.
	RangeDelChecks int64
}

// Add adds o's counters to s.
func (s *LookupStats) Add(o LookupStats) {
	s.TablesConsidered += o.TablesConsidered
	s.FilterNegatives += o.FilterNegatives
	s.FilterTruePositives += o.FilterTruePositives
	s.FilterFalsePositives += o.FilterFalsePositives
	s.PrefixMatches += o.PrefixMatches
	s.FilterSkipped += o.FilterSkipped
	s.BlockReads += o.BlockReads
	s.BlockCacheMisses += o.BlockCacheMisses
	s.RangeDelChecks += o.RangeDelChecks
}
