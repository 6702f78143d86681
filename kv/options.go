package kv

import (
	"fmt"
	"math"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// Defaults applied to zero fields of [Options]. A setting that a lower
// package owns takes that package's default: the table format's block size
// (sstable), the compaction scheme's level shape and table size
// (compaction).
const (
	DefaultMemTableSize                = 4 << 20
	DefaultMemTableStopWritesThreshold = 2
	DefaultBlockSize                   = sstable.DefaultBlockSize
	DefaultBlockCacheSize              = 8 << 20
	DefaultMaxOpenFiles                = 500
	DefaultL0CompactionThreshold       = compaction.DefaultL0CompactionThreshold
	DefaultL0SlowdownWritesThreshold   = 8
	DefaultL0StopWritesThreshold       = 12
	DefaultLBaseMaxBytes               = compaction.DefaultLBaseMaxBytes
	DefaultLevelMultiplier             = compaction.DefaultLevelMultiplier
	DefaultTargetFileSize              = compaction.DefaultTargetFileSize
	DefaultMaxManifestFileSize         = 4 << 20
	DefaultMaxSpaceAmp                 = compaction.DefaultMaxSpaceAmp
	// DefaultMaxConcurrentCompactions is Pebble v1.1.5's.
	DefaultMaxConcurrentCompactions = 1
	// DefaultFilterFPR is the target false-positive rate of the filter
	// policy used when Options.FilterPolicy is nil.
	DefaultFilterFPR = 0.01
)

// Bounds enforced on [Options] by Open.
const (
	MinMemTableSize = 1 << 10
	MaxMemTableSize = 4 << 30
	MaxBlockSize    = 64 << 20
	MinMaxOpenFiles = 8
)

// Options configure a DB. A nil *Options, and every zero field, means the
// default. Open rejects invalid values with an error naming the field.
type Options struct {
	// FS carries every file operation of the DB. nil means vfs.Default (the
	// operating system's filesystem); vfs.NewMem gives an in-memory store.
	FS vfs.FS
	// ErrorIfExists makes Open fail, with an error wrapping
	// ErrDBAlreadyExists, when the directory already holds a store: for a
	// caller that means to create a new one.
	ErrorIfExists bool
	// ErrorIfNotExists makes Open fail, with an error wrapping
	// ErrDBDoesNotExist, when the directory holds no store; Open then
	// creates nothing, not even the directory. For a caller that only means
	// to read or change an existing store. It and ErrorIfExists exclude each
	// other.
	ErrorIfNotExists bool
	// ReadOnly opens an existing store for reads alone, as Pebble's does:
	// Open fails with an error wrapping ErrDBDoesNotExist where there is no
	// store, and otherwise changes no file: it writes no table, WAL or
	// MANIFEST and deletes nothing. It takes the LOCK, so a DB writing the
	// store elsewhere keeps it out, and the reverse; where the store has no
	// LOCK file (a checkpoint, or a copied store), taking it creates one, as
	// Pebble's does. The WALs' writes are replayed into memtables held in
	// memory until Close. Writes, Flush, Compact and Ingest fail with
	// ErrReadOnly; no background flush or compaction runs. Reads, snapshots,
	// iterators, indexed batches (their reads) and Checkpoint work as in a
	// store opened for writes. It excludes ErrorIfExists.
	ReadOnly bool

	// Comparer orders the keys. nil means sstable.DefaultComparer
	// (bytewise). Its Name is stored in the MANIFEST and in every table: a
	// store must always be opened with the comparer it was created with,
	// and Open (read-only too) refuses a comparer of another Name, with an
	// error naming Options.Comparer and both names, and changes no file
	// of the store. Its Split may change between opens (see below). A
	// comparer other than bytewise may give an AbbreviatedKey, as Pebble's
	// may: the memtable then decides most steps of its searches by the keys'
	// summaries, without calling Compare. With a Split (and its SplitName),
	// filters hold key prefixes, Get asks them about Split(key), and
	// Iterator.SeekPrefixGE skips every table whose filter rules the prefix
	// out. Tables whose filters were built under another Split, or none,
	// stay readable without their filters (Metrics counts them,
	// LevelMetrics.Lookups.FilterSkipped). A Split that breaks its contract
	// is refused by Open when sample keys or the tables' bounds show it, and
	// otherwise fails the write, Get, prefix seek, flush or compaction that
	// meets it with an error wrapping ErrInvalidSplit (a write checks each
	// point key's Split); a comparer function that panics in a flush or
	// compaction (the picker, the MANIFEST's version building, a table
	// opening, the table writer) stops writes with an error wrapping
	// compaction.ErrCallbackPanic, as a failed flush does: reads go on,
	// Close returns it. A filter policy's panics there do the same. One that
	// panics while Open replays the WALs fails Open with such an error, the
	// store's files let go.
	Comparer *sstable.Comparer

	// FilterPolicy builds the per-block filters of new tables, on every
	// level that Levels and FilterBudget leave to it. nil means a Bloom
	// filter with a target false-positive rate of [DefaultFilterFPR]
	// (bloompolicy.New(DefaultFilterFPR)).
	FilterPolicy bloompolicy.FilterPolicy
	// Levels holds per-level options, index = level (L0 first), at most
	// seven. A level past the end of the slice, or whose FilterPolicy is
	// nil, takes its filters from FilterBudget if set, else FilterPolicy.
	// A table keeps the filter it was written with when a compaction moves
	// it down unchanged.
	Levels []LevelOptions
	// FilterBudget, when not nil, sizes the Bloom filters of each new table
	// for the level it is written to, by Monkey's rule (see
	// bloompolicy.Allocate): the smallest expected number of false
	// positives per absent lookup for the budget's bits per key, or the
	// fewest bits for its false positives. The runs are the tree's L0
	// tables, one each, and its levels L1 and deeper, one each, as they
	// stand when the table is written (a flush or a compaction) — except
	// that a level above the deepest holding keys counts at no less than
	// its target (LBaseMaxBytes × LevelMultiplier^(level-1) bytes at the
	// store's average bytes per entry): the size it settles at as the
	// store grows. Small runs (L0 tables, upper levels) get more bits per
	// key, the bottom level fewer. A table keeps its sizing until a
	// compaction rewrites it, so a growing store spends somewhat more than
	// a budget of bits per key (its bottom level was a smaller share of
	// the keys when its tables were written: 8% more in
	// BenchmarkFilterBudget's load of 2M keys). Levels[i].FilterPolicy,
	// where set, takes precedence for level i.
	//
	// A budget of Bytes is a cap on the filter memory the store holds,
	// whatever its size. The store allocates the cap over the tree as it
	// stands, weighing each table by the lookups that reach it and miss
	// there (the traffic-aware rule of bloompolicy's documentation;
	// Monkey's rule before any lookup), writes new tables with the bits
	// per key they get, and has each table hold in memory a filter of the
	// bits it gets now: its own, or one built in memory from its keys when
	// the allocation has moved (see the package documentation, Filters).
	// No table gets more than 16 bits per key (0.05% false positives),
	// so a cap larger than the tree needs at that is left partly
	// unspent, and builds no filter. The bytes held, as the tables' filter blocks measure them, never
	// exceed the cap; Metrics.Filters reports them, the tables holding
	// none and the filters built. In memory, each filter held also keeps
	// the offsets of its filters, 4 bytes per data block, and its block
	// takes what the allocator rounds it up to: a few percent more for a
	// table of many blocks, more for a table of a few. A cap excludes
	// Levels[i].FilterPolicy: Open refuses both. Tables stay
	// self-describing: a store written under a cap opens under any other
	// setting, and the reverse.
	FilterBudget *bloompolicy.Budget
	// DisableFilters writes new tables without filters and reads every
	// table without its filter, as if no policy knew it: each table a
	// lookup considers costs a data-block read. FilterPolicy, Levels,
	// FilterBudget and ExtraFilterPolicies are then ignored, so the same
	// files can be measured with and without their filters.
	DisableFilters bool
	// ExtraFilterPolicies are policies, beyond those of FilterPolicy and
	// Levels, that readers may use. A table written under a policy that none
	// of them names stays readable, only without its filter. Policies are
	// matched by Name.
	ExtraFilterPolicies []bloompolicy.FilterPolicy

	// MemTableSize is the size in bytes at which the memtable becomes
	// immutable and is flushed to an L0 table. Default
	// [DefaultMemTableSize]. As in Pebble, memtables ramp up after Open:
	// the first is full at MemTableSize/16 (at least 256 KiB, at most
	// MemTableSize), each next one at twice its predecessor's size, up
	// to MemTableSize; and the small ones are flushed together, once
	// the immutable memtables' sizes add up to half of MemTableSize (or
	// a Flush asks). A store that takes few writes holds little memory,
	// and one filling up inserts into smaller, faster skiplists.
	MemTableSize int64
	// MemTableStopWritesThreshold is the number of immutable memtables
	// waiting for a flush at which writers stall, each counted at its
	// share of MemTableSize (the small memtables of the ramp count for
	// less than one). Default [DefaultMemTableStopWritesThreshold].
	MemTableStopWritesThreshold int

	// BlockSize is the target uncompressed size of data blocks. Default
	// [DefaultBlockSize].
	BlockSize int
	// BlockCacheSize is the capacity in bytes of the block cache shared by
	// all tables. Default [DefaultBlockCacheSize].
	BlockCacheSize int64
	// MaxOpenFiles bounds the number of tables kept open. Default
	// [DefaultMaxOpenFiles].
	MaxOpenFiles int

	// L0CompactionThreshold is the L0 read amplification (the most L0
	// tables holding one user key: those a lookup may consult) that
	// triggers a compaction of L0 into the base level, as in Pebble (or
	// within L0, when its tables hold fewer bytes than the base-level
	// tables under them: compaction.Picker.Pick); L0 compacts too once it
	// holds 500 tables, whatever their overlap.
	// Once every acknowledged write is in a table and nothing else is
	// due, L0 compacts from half this read amplification on (at least 2),
	// Pebble v1.1.5's trigger, so a store whose writes stopped keeps at
	// most one L0 table under a key (compaction.Picker.PickSettle;
	// DisableL0Settling turns this off). Default
	// [DefaultL0CompactionThreshold].
	L0CompactionThreshold int
	// L0SlowdownWritesThreshold is the L0 read amplification at which each
	// write group is delayed by a millisecond, to let compaction catch up.
	// Default [DefaultL0SlowdownWritesThreshold], or L0StopWritesThreshold
	// when that is lower.
	L0SlowdownWritesThreshold int
	// L0StopWritesThreshold is the L0 read amplification at which writers
	// stall until compaction brings it down, as Pebble's option of that
	// name. Default [DefaultL0StopWritesThreshold], or
	// L0CompactionThreshold when that is higher. The memtables waiting for
	// a flush count toward it, as the L0 tables they become: a full
	// memtable is not switched out while L0's read amplification and they
	// reach it, so L0 does not rise above it.
	L0StopWritesThreshold int
	// LBaseMaxBytes is the target size of the base level, the level L0
	// compacts into (L1 under StaticLevels). Default
	// [DefaultLBaseMaxBytes].
	LBaseMaxBytes int64
	// LevelMultiplier is the ratio between the target sizes of consecutive
	// levels. Default [DefaultLevelMultiplier].
	LevelMultiplier int
	// TargetFileSize is the size at which compaction cuts output tables.
	// Default [DefaultTargetFileSize].
	TargetFileSize int64
	// MaxSpaceAmp bounds the space amplification of L1..L6 under
	// overwrites: the bytes of their tables over the live data they hold,
	// estimated from the versions that recent compactions into L6
	// dropped. When overwrites would take more, L5's target shrinks below
	// its share (down to TargetFileSize), so the overwritten versions
	// are compacted away sooner, at the cost of more writing; a store that
	// only grows is not affected. Applied under dynamic level sizes (see
	// StaticLevels and the compaction package's "Space amplification").
	// 0 means [DefaultMaxSpaceAmp], which the compaction package applies;
	// otherwise at least 1, or negative to size L5 by its share alone, as
	// Pebble does.
	MaxSpaceAmp float64
	// DisableAutomaticCompactions turns off background compactions; only
	// DB.Compact compacts. Writers never stall on L0 then.
	DisableAutomaticCompactions bool
	// DisableL0Settling keeps L0 compacting at L0CompactionThreshold
	// alone, also once writes stop: a flushed, idle store then keeps the
	// L0 tables (up to the threshold less one under a key) that a store
	// taking writes holds between its L0 compactions, and an explicit
	// Flush never costs a compaction of L0 below the threshold.
	DisableL0Settling bool
	// FlushSplitBytes is the size from which a flush cuts its L0 table at
	// the next boundary between tables of the level L0 compacts into, so
	// that L0 compactions can take narrow slices (Pebble's option of that
	// name). 0 means 2 × TargetFileSize; negative, one table per flush.
	FlushSplitBytes int64
	// StaticLevels sizes the levels from L1 down, as LevelDB does: L1 is
	// always the level L0 compacts into, with target LBaseMaxBytes, and
	// each deeper level's target is LevelMultiplier times the one above.
	// By default the targets are derived from the bottom level up, as in
	// Pebble (see the compaction package's documentation): data goes
	// from L0 straight to L6 while the store is small, and the level L0
	// compacts into moves up as the store grows. A store opened under one
	// scheme after the other converges on it as compactions run.
	StaticLevels bool
	// MaxConcurrentCompactions is the most background compactions that
	// run at once, each on tables and key ranges no other one touches.
	// Beyond the first, one more starts only while L0's read
	// amplification or the estimated compaction debt is high (Pebble's
	// rule: see compaction.Picker.WantsAnother). Default
	// [DefaultMaxConcurrentCompactions], as in Pebble.
	MaxConcurrentCompactions int

	// MaxManifestFileSize is the size at which the MANIFEST is rewritten
	// from a snapshot of the current version. Default
	// [DefaultMaxManifestFileSize].
	MaxManifestFileSize int64

	// BackgroundWALWrites weakens NoSync writes to Pebble's promise, for
	// speed: a NoSync write is acknowledged once its WAL record is in a
	// buffer in memory, and a goroutine of the DB writes the buffer to the
	// WAL file a moment later (within about a millisecond, or once 32 KiB
	// have piled up), many writes in one system call. By default
	// (false) each commit writes its records to the file before it is
	// acknowledged, so an acknowledged NoSync write survives a crash of
	// the process.
	//
	// With it, a crash of the process loses the acknowledged NoSync
	// writes whose WAL records are not wholly in the file: at most 256
	// KiB of them ([BackgroundWALLossBound]), counting the bytes of their
	// records (each a batch's encoding, [Batch.Len], plus a few bytes of
	// framing), so at most 256 KiB of batches. A record only partly in
	// the file counts whole, as recovery drops it. A commit that would
	// put the records not wholly in the file over 256 KiB waits for the
	// background writer before it is acknowledged, so a batch bigger than
	// that is acknowledged only once all of it is in the file, as by
	// default.
	// What survives any crash is still a prefix of the acknowledged
	// writes, batches whole, never one with an earlier one missing. A
	// Sync write keeps its full promise, and extends it to every write
	// acknowledged before it: it waits until the buffer is written, then
	// syncs. Flush, Close and the switch to a new memtable also write out
	// the buffer first. A failed background write is reported by every
	// later write (Sync or not), Flush and Close, and the DB accepts no
	// more writes; the NoSync writes acknowledged after the failed bytes
	// were buffered are lost.
	BackgroundWALWrites bool

	// EventListener, when not nil, is told of flushes, compactions, WALs
	// and tables created and deleted, write stalls and background errors
	// (see EventListener). MakeLoggingEventListener makes one that logs
	// them.
	EventListener *EventListener

	// Logger receives the store's warnings, such as an ingested table
	// whose filters the store cannot read (see DB.Ingest); nil discards
	// them.
	Logger Logger

	// private holds what only kv's tests set (export_test.go).
	private struct {
		// fullSizeMemTables starts memtables at MemTableSize rather than
		// initialMemTableSize, for tests that need every write of a run
		// in one memtable and one WAL.
		fullSizeMemTables bool
		// walMmapChunk, when positive, replaces maxWALMmapChunk, for
		// tests whose records must cross a mapped WAL's chunks often.
		walMmapChunk int64
		// beforeReadSeq, when not nil, runs as a read without a
		// snapshot, its read state loaded, is about to load the
		// visible sequence number, for tests that commit writes there.
		beforeReadSeq func()
	}
}

// Logger takes the store's log messages. Pebble's Logger satisfies it.
type Logger interface {
	// Infof logs a message formatted as fmt.Sprintf does.
	Infof(format string, args ...any)
}

// resolve returns a copy of o with defaults filled in, or an error naming
// the first invalid field.
func (o *Options) resolve() (*Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	r.ExtraFilterPolicies = append([]bloompolicy.FilterPolicy(nil), r.ExtraFilterPolicies...)
	r.Levels = append([]LevelOptions(nil), r.Levels...)
	if r.FilterBudget != nil {
		budget := *r.FilterBudget
		r.FilterBudget = &budget
	}
	if err := r.checkSigns(); err != nil {
		return nil, err
	}
	r.fillDefaults()
	if err := checkComparer(r.Comparer); err != nil {
		return nil, err
	}
	if r.FilterPolicy == nil {
		p, err := defaultFilterPolicy()
		if err != nil {
			return nil, err
		}
		r.FilterPolicy = p
	}
	if err := r.checkBounds(); err != nil {
		return nil, err
	}
	return &r, nil
}

// checkSigns rejects negative sizes and counts before defaults hide them.
func (o *Options) checkSigns() error {
	ints := []struct {
		name string
		v    int64
	}{
		{"MemTableSize", o.MemTableSize},
		{"MemTableStopWritesThreshold", int64(o.MemTableStopWritesThreshold)},
		{"BlockSize", int64(o.BlockSize)},
		{"BlockCacheSize", o.BlockCacheSize},
		{"MaxOpenFiles", int64(o.MaxOpenFiles)},
		{"L0CompactionThreshold", int64(o.L0CompactionThreshold)},
		{"L0SlowdownWritesThreshold", int64(o.L0SlowdownWritesThreshold)},
		{"L0StopWritesThreshold", int64(o.L0StopWritesThreshold)},
		{"LBaseMaxBytes", o.LBaseMaxBytes},
		{"LevelMultiplier", int64(o.LevelMultiplier)},
		{"TargetFileSize", o.TargetFileSize},
		{"MaxManifestFileSize", o.MaxManifestFileSize},
		{"MaxConcurrentCompactions", int64(o.MaxConcurrentCompactions)},
	}
	for _, f := range ints {
		if f.v < 0 {
			return fmt.Errorf("kv: invalid options: %s is negative (%d)", f.name, f.v)
		}
	}
	return nil
}

// fillDefaults applies the defaults, once for the store: the packages
// below receive resolved values.
func (o *Options) fillDefaults() {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Comparer == nil {
		o.Comparer = sstable.DefaultComparer
	}
	base.SetDefault(&o.MemTableSize, DefaultMemTableSize)
	base.SetDefault(&o.MemTableStopWritesThreshold, DefaultMemTableStopWritesThreshold)
	base.SetDefault(&o.BlockSize, DefaultBlockSize)
	base.SetDefault(&o.BlockCacheSize, DefaultBlockCacheSize)
	base.SetDefault(&o.MaxOpenFiles, DefaultMaxOpenFiles)
	base.SetDefault(&o.L0CompactionThreshold, DefaultL0CompactionThreshold)
	base.SetDefault(&o.L0StopWritesThreshold, max(DefaultL0StopWritesThreshold, o.L0CompactionThreshold))
	base.SetDefault(&o.L0SlowdownWritesThreshold, min(DefaultL0SlowdownWritesThreshold, o.L0StopWritesThreshold))
	base.SetDefault(&o.LBaseMaxBytes, DefaultLBaseMaxBytes)
	base.SetDefault(&o.LevelMultiplier, DefaultLevelMultiplier)
	base.SetDefault(&o.TargetFileSize, DefaultTargetFileSize)
	base.SetDefault(&o.MaxManifestFileSize, DefaultMaxManifestFileSize)
	base.SetDefault(&o.MaxConcurrentCompactions, DefaultMaxConcurrentCompactions)
	// MaxSpaceAmp stays 0 for the compaction package to default.
}

// checkComparer rejects a comparer that lacks a function or a name the
// store needs.
func checkComparer(c *sstable.Comparer) error {
	if c.Compare == nil || c.Separator == nil || c.Successor == nil || c.Name == "" {
		return fmt.Errorf("kv: invalid options: Comparer %q needs Compare, Separator, Successor and a Name", c.Name)
	}
	if err := c.CheckSplit(); err != nil {
		return fmt.Errorf("kv: invalid options: %w", err)
	}
	return nil
}

// checkSplitOnTables tries the comparer's Split on the bounds of the
// store's tables, keys the store holds (see base.Comparer.CheckSplit).
func (d *DB) checkSplitOnTables() error {
	if d.cmp.Split == nil {
		return nil
	}
	var samples [][]byte
	for _, files := range d.mu.versions.current.Levels {
		for _, f := range files {
			samples = append(samples, f.Smallest.UserKey, f.Largest.UserKey)
		}
	}
	if err := d.cmp.CheckSplit(samples...); err != nil {
		return fmt.Errorf("kv: invalid options: %w", err)
	}
	return nil
}

// checkBounds rejects values that are positive but unusable, and
// thresholds that contradict one another.
func (o *Options) checkBounds() error {
	switch {
	case o.ErrorIfExists && o.ErrorIfNotExists:
		return fmt.Errorf("kv: invalid options: ErrorIfExists and ErrorIfNotExists are both set, so Open could never succeed")
	case o.ErrorIfExists && o.ReadOnly:
		return fmt.Errorf("kv: invalid options: ErrorIfExists and ReadOnly are both set, so Open could never succeed")
	case o.MemTableSize < MinMemTableSize || o.MemTableSize > MaxMemTableSize:
		return fmt.Errorf("kv: invalid options: MemTableSize %d outside [%d, %d]",
			o.MemTableSize, MinMemTableSize, int64(MaxMemTableSize))
	case o.BlockSize > MaxBlockSize:
		return fmt.Errorf("kv: invalid options: BlockSize %d over %d", o.BlockSize, MaxBlockSize)
	case o.MaxOpenFiles < MinMaxOpenFiles:
		return fmt.Errorf("kv: invalid options: MaxOpenFiles %d under %d", o.MaxOpenFiles, MinMaxOpenFiles)
	case o.L0StopWritesThreshold < o.L0CompactionThreshold:
		return fmt.Errorf("kv: invalid options: L0StopWritesThreshold %d below L0CompactionThreshold %d",
			o.L0StopWritesThreshold, o.L0CompactionThreshold)
	case o.L0SlowdownWritesThreshold > o.L0StopWritesThreshold:
		return fmt.Errorf("kv: invalid options: L0SlowdownWritesThreshold %d above L0StopWritesThreshold %d",
			o.L0SlowdownWritesThreshold, o.L0StopWritesThreshold)
	case o.LevelMultiplier < 2:
		return fmt.Errorf("kv: invalid options: LevelMultiplier %d under 2", o.LevelMultiplier)
	case math.IsNaN(o.MaxSpaceAmp) || o.MaxSpaceAmp > 0 && o.MaxSpaceAmp < 1:
		return fmt.Errorf("kv: invalid options: MaxSpaceAmp %g under 1 (a negative value turns the bound off)", o.MaxSpaceAmp)
	}
	return o.checkFilters()
}

// WriteOptions control one write. Use the predefined [Sync] and [NoSync]; a
// nil *WriteOptions means NoSync.
type WriteOptions struct {
	// Sync makes the write wait until the WAL is synced to stable storage,
	// so it survives a crash of the machine. Without it, an acknowledged
	// write survives a crash of the process once the OS has it, and always
	// survives a clean Close.
	Sync bool
}

// Sync and NoSync are the two write modes.
var (
	Sync   = &WriteOptions{Sync: true}
	NoSync = &WriteOptions{Sync: false}
)

func (o *WriteOptions) sync() bool { return o != nil && o.Sync }

// IterOptions restrict an iterator. A nil *IterOptions means no bounds.
//
// An iterator also has a prefix-only mode, as Pebble's has: SeekPrefixGE
// enters it, and the next absolute positioning call (First, Last, SeekGE,
// SeekLT) leaves it. In it, Next stops at the end of the seek key's prefix
// and Prev is not supported (see Iterator.SeekPrefixGE).
//
// Pebble's IterOptions.UseL6Filters has no counterpart, and needs none:
// Pebble's prefix seeks skip the filters of L6 tables unless it is set,
// while bloomkv's read every table's filters, L6 included, as its Gets do.
// To read without filters, open the store with Options.DisableFilters.
type IterOptions struct {
	// LowerBound, when not nil, is the smallest key the iterator shows
	// (inclusive).
	LowerBound []byte
	// UpperBound, when not nil, is the key the iterator stops before
	// (exclusive). Bounds with LowerBound at or above UpperBound show no
	// key: the iterator is never Valid.
	UpperBound []byte
	// PrefixOnly makes every SeekGE a SeekPrefixGE (RocksDB's
	// prefix_same_as_start): the seek asks the tables' filters about the
	// seek key's prefix under Options.Comparer's Split, and Next stops at
	// the end of that prefix. First, Last and SeekLT are not prefix seeks
	// and leave the mode as they do after SeekPrefixGE. NewIter refuses it,
	// with an error wrapping ErrInvalidPrefixSeek, when the Comparer has no
	// Split.
	PrefixOnly bool
}

// defaultFilterPolicy is used when Options.FilterPolicy is nil.
func defaultFilterPolicy() (bloompolicy.FilterPolicy, error) {
	return bloompolicy.New(DefaultFilterFPR)
}
