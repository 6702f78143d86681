package compaction

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// RunConfig says how Run writes its output.
type RunConfig struct {
	// Comparer orders the input's user keys. nil means
	// sstable.DefaultComparer. It is also the tables' comparer unless
	// Writer.Comparer is set.
	Comparer *Comparer
	// Snapshots are the sequence numbers of the open snapshots, ascending.
	// Run keeps, for each of them, the version of each key it sees.
	Snapshots []SeqNum
	// ElideTombstone reports whether nothing below the output holds
	// userKey, so that a tombstone no snapshot needs may be dropped (see
	// Compaction.ElideTombstone). nil means never: tombstones are kept.
	ElideTombstone func(userKey []byte) bool
	// RangeDels are the range tombstones of the input, in any order and
	// overlapping freely (the tombstones of each input table, say): Run
	// fragments them. It drops the point versions that a newer tombstone
	// of the same snapshot stripe deletes, keeps of each fragment the
	// newest tombstone of each stripe, and writes those into the output
	// tables, each table taking the parts within its key range.
	RangeDels []sstable.RangeTombstone
	// ElideRangeTombstone reports whether nothing below the output holds
	// a user key in [start, end), so that a range tombstone no snapshot
	// needs may be dropped once it has deleted what it covers in the input
	// (see Compaction.ElideRangeTombstone). nil means never.
	ElideRangeTombstone func(start, end []byte) bool
	// NewOutput creates the file of the next table and names its number.
	// Run calls it only when it has an entry or a range tombstone to
	// write.
	NewOutput func() (FileNum, vfs.File, error)
	// Writer are the options of the tables written.
	Writer sstable.WriterOptions
	// TargetFileSize is the size of the tables Run writes: without
	// Grandparents it closes a table once it reaches this size and starts
	// the next at the next user key; with them it cuts tables where the
	// grandparents start, between half and twice this size (see split.go).
	// 0 means one table.
	TargetFileSize int64
	// Grandparents are the tables of the level below the output
	// (Compaction.Grandparents), in key order. Run cuts tables where they
	// start, so that the output's tables line up with them, and closes a
	// table, at a user-key boundary, once it overlaps more than
	// MaxGrandparentOverlap bytes of them.
	Grandparents []*FileMetadata
	// MaxGrandparentOverlap bounds the bytes of grandparents one table may
	// overlap (Compaction.MaxGrandparentOverlap). 0 means the default
	// bound for TargetFileSize, as Options.MaxGrandparentOverlap computes
	// it (DefaultGrandparentOverlapFactor × TargetFileSize); with
	// TargetFileSize 0 too, there is no bound.
	MaxGrandparentOverlap int64
	// SplitBoundaries are tables in key order, normally a level's, along
	// which Run cuts once a table holds SplitBytes (estimated size) or
	// more: before the first user key past the end of one of them. A flush
	// passes the base level's tables (Picker.FlushSplit), so that its L0
	// tables line up with the tables they will be compacted into.
	SplitBoundaries []*FileMetadata
	// SplitBytes is the size from which Run cuts at a SplitBoundaries
	// boundary; 0 means no such cuts.
	SplitBytes int64
	// ZeroSeqNums sets to 0 the sequence number of each key's oldest kept
	// version where it is a Set that every snapshot sees (older than the
	// oldest snapshot), as Pebble and RocksDB do at the bottom of the
	// tree: the tables' trailers then repeat, so they compress better.
	// Only for an output below L0 with nothing below it holding a key of
	// the input's range (Compaction.ZeroSeqNums), where no older version
	// of the key remains anywhere and every version or tombstone above it
	// is newer. Run zeroes nothing when it keeps a range tombstone of the
	// oldest stripe, which could then cover a zeroed version it did not.
	ZeroSeqNums bool
	// StableInput says that the input's keys and values stay valid, and
	// unchanged, until Run returns, as a memtable's do: Run then writes
	// them from where they are. Otherwise it copies each user key's
	// versions before it reads past them, since moving the input (to
	// another block of a table) may reuse their memory.
	StableInput bool
}

// RunStats accounts for one Run.
type RunStats struct {
	// BytesRead sums the encoded keys and values read from the input.
	BytesRead int64
	// BytesWritten sums the sizes of the tables written.
	BytesWritten int64
	// EntriesIn and EntriesOut count the entries read and written.
	EntriesIn, EntriesOut int64
	// Shadowed counts the versions dropped because a newer version of the
	// same key is visible to every reader that could see them.
	Shadowed int64
	// TombstonesElided counts the tombstones dropped because no reader
	// needed them and nothing below the output could be hidden by them.
	TombstonesElided int64
	// RangeDeleted counts the point versions dropped because a range
	// tombstone of their snapshot stripe deletes them.
	RangeDeleted int64
	// SeqNumsZeroed counts the versions written with their sequence
	// number set to 0 (RunConfig.ZeroSeqNums).
	SeqNumsZeroed int64
	// RangeDelsOut counts the range tombstones written, one per fragment
	// part and sequence number as the tables store them; RangeDelsElided
	// those (fragments and sequence numbers) dropped because no reader
	// needed them.
	RangeDelsOut, RangeDelsElided int64
	// Tables counts the tables written.
	Tables int
}

// Run drains input, which must be in internal-key order, keeping only the
// entries some reader can see: for each user key the newest version and,
// for each snapshot, the newest version visible to it, unless a range
// tombstone of cfg.RangeDels that the same readers see deletes it.
// Tombstones that no snapshot needs are dropped where cfg.ElideTombstone
// and cfg.ElideRangeTombstone allow. The entries kept are written to new
// tables, each cut near cfg.TargetFileSize (where a grandparent starts,
// when there are grandparents), once it overlaps too many grandparent
// bytes, or once it holds cfg.SplitBytes at a boundary of
// cfg.SplitBoundaries, always between two user keys, so no key's versions
// span two tables; the range tombstones kept are cut at the same
// boundaries, so that the tables' key ranges, tombstones included, do not
// overlap. Run returns the tables' metadata in key order, and nothing when
// nothing was kept.
//
// Run does not close input. On error it returns the tables finished so far
// with the error; the caller deletes every file it handed out through
// cfg.NewOutput. A panic of a callback (the comparer's, the filter
// policy's, the input's) is such an error, wrapping ErrCallbackPanic.
func Run(input InternalIterator, cfg RunConfig) ([]*FileMetadata, RunStats, error) {
	var stats RunStats
	if err := cfg.check(); err != nil {
		return nil, stats, err
	}
	if cfg.Comparer == nil {
		cfg.Comparer = base.DefaultComparer
	}
	if cfg.Writer.Comparer == nil {
		cfg.Writer.Comparer = cfg.Comparer
	}
	r := &runner{cfg: cfg, stats: &stats}
	err := guard(func() error {
		r.start(input)
		return r.run()
	})
	if r.w != nil {
		// Only after a failure: the table is incomplete, its error moot.
		_ = guard(r.w.Close)
	}
	return r.tables, stats, err
}

// ErrCallbackPanic is wrapped by the error of a Run during which a
// function of the caller's panicked: the Comparer's (Compare, Split,
// Separator, Successor), the filter policy's, or the input iterator's.
// Run returns it, with the panic's value and stack, rather than let the
// panic kill the goroutine that runs it (a store's background flush or
// compaction, which no caller could recover).
var ErrCallbackPanic = errors.New("compaction: a callback panicked")

// guard runs fn, turning a panic into an error wrapping ErrCallbackPanic.
func guard(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrCallbackPanic, p, debug.Stack())
		}
	}()
	return fn()
}

// check rejects configurations that are programming mistakes.
func (cfg *RunConfig) check() error {
	if cfg.NewOutput == nil {
		return errors.New("compaction: RunConfig.NewOutput is nil")
	}
	for i := 1; i < len(cfg.Snapshots); i++ {
		if cfg.Snapshots[i-1] > cfg.Snapshots[i] {
			return fmt.Errorf("compaction: snapshots out of order: %d before %d", cfg.Snapshots[i-1], cfg.Snapshots[i])
		}
	}
	return nil
}

// grandparentLimit returns the bound on one table's grandparent overlap; 0
// for none.
func (cfg *RunConfig) grandparentLimit() int64 {
	switch {
	case cfg.MaxGrandparentOverlap > 0:
		return cfg.MaxGrandparentOverlap
	case cfg.TargetFileSize > 0:
		return (&Options{TargetFileSize: cfg.TargetFileSize}).MaxGrandparentOverlap()
	}
	return 0
}

// runner carries the state of one Run.
type runner struct {
	cfg    RunConfig
	stats  *RunStats
	iter   *compactionIter
	gp     grandparentLimiter
	split  boundarySplitter
	tables []*manifest.FileMetadata

	w       *sstable.Writer // the table being written; nil between tables
	fileNum base.FileNum
	// full says the open table reached the target size while a pending
	// tombstone spans its last key: it is cut before the next key, which
	// bounds the tombstone's part.
	full bool

	// pending are the range tombstones kept and not yet written in full,
	// fragmented; lower is where the open table's part of them starts
	// (nil for the first table): the previous table's cut.
	pending []sstable.RangeTombstone
	lower   []byte
}

// start readies r to drain input: the compaction iterator, the range
// tombstones it keeps, and where tables are cut.
func (r *runner) start(input InternalIterator) {
	cfg := &r.cfg
	frags := rangedel.Fragment(cfg.Comparer.Compare, cfg.RangeDels)
	r.iter = newCompactionIter(cfg.Comparer, cfg.StableInput, input, cfg.Snapshots, cfg.ElideTombstone, frags, r.stats)
	r.pending = r.iter.keptRangeDels(frags, cfg.ElideRangeTombstone)
	r.iter.zero = cfg.ZeroSeqNums && !r.iter.keepsOldestStripe(r.pending)
	r.gp = grandparentLimiter{cmp: cfg.Comparer.Compare, files: cfg.Grandparents, limit: cfg.grandparentLimit()}
	r.split = boundarySplitter{cmp: cfg.Comparer.Compare, files: cfg.SplitBoundaries, bytes: cfg.SplitBytes}
}

// run drains the input into tables.
func (r *runner) run() error {
	for {
		versions, ok := r.iter.nextKey()
		if !ok {
			break
		}
		key := versions[0].key.UserKey
		if r.cutBefore(key) {
			if err := r.finishTable(key, nil); err != nil {
				return err
			}
		}
		if err := r.add(versions); err != nil {
			return err
		}
		if r.cfg.TargetFileSize > 0 && r.gp.sizeCut(r.w.EstimatedSize(), uint64(r.cfg.TargetFileSize)) {
			if r.full = r.spans(key); !r.full {
				if err := r.finishTable(nil, key); err != nil {
					return err
				}
			}
		}
	}
	if err := r.iter.Error(); err != nil {
		return fmt.Errorf("compaction: reading input: %w", err)
	}
	if r.w == nil && len(r.pending) > 0 {
		if err := r.openTable(); err != nil {
			return err
		}
	}
	if r.w != nil {
		return r.finishTable(nil, nil)
	}
	return nil
}

// cutBefore reports whether the open table, if any, should end before key
// (see "Where Run cuts its output tables" in split.go), short of its size
// after the key, which run checks once key is written.
func (r *runner) cutBefore(key []byte) bool {
	open := r.w != nil
	reached := r.gp.advance(key, open)
	split := r.split.cutBefore(key, r.w)
	if !open {
		return false
	}
	aligned := reached && r.cfg.TargetFileSize > 0 && r.gp.alignedCut(r.w.EstimatedSize(), uint64(r.cfg.TargetFileSize))
	return r.full || split || aligned || r.gp.overLimit()
}

// spans reports whether a pending tombstone holds key and reaches past it.
func (r *runner) spans(key []byte) bool {
	_, ok := rangedel.Covering(r.cfg.Comparer.Compare, r.pending, key, base.SeqNumMax)
	return ok
}

// openTable starts the next output table.
func (r *runner) openTable() error {
	num, f, err := r.cfg.NewOutput()
	if err != nil {
		return fmt.Errorf("compaction: creating table: %w", err)
	}
	r.w, r.fileNum = sstable.NewWriter(f, r.cfg.Writer), num
	return nil
}

// add writes the versions of one user key, starting a table if none is
// open.
func (r *runner) add(versions []version) error {
	if r.w == nil {
		if err := r.openTable(); err != nil {
			return err
		}
	}
	for _, v := range versions {
		if err := r.w.Add(v.key, v.value); err != nil {
			return fmt.Errorf("compaction: writing table %s: %w", r.fileNum, err)
		}
		r.stats.EntriesOut++
	}
	return nil
}

// finishTable writes into the open table its part of the pending range
// tombstones, closes it and records its metadata. The table ends before
// next (the first key of the next table), or after last (its own last
// key, which no pending tombstone spans), or, both nil, with the input.
func (r *runner) finishTable(next, last []byte) error {
	w := r.w
	r.w, r.full = nil, false
	r.gp.reset()
	if err := r.addRangeDels(w, next, last); err != nil {
		_ = w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("compaction: finishing table %s: %w", r.fileNum, err)
	}
	m := w.Metadata()
	r.tables = append(r.tables, NewFileMetadata(r.fileNum, m))
	r.stats.BytesWritten += int64(m.Size)
	r.stats.Tables++
	return nil
}

// addRangeDels writes into w the table's part of the pending tombstones
// (see finishTable) and keeps pending what remains for the next tables.
func (r *runner) addRangeDels(w *sstable.Writer, next, last []byte) error {
	cmp := r.cfg.Comparer.Compare
	n := len(r.pending) // pending[:n] are written, whole or in part
	done := n           // pending[:done] are written whole
	switch {
	case next != nil:
		n = sort.Search(len(r.pending), func(i int) bool { return cmp(r.pending[i].Start, next) >= 0 })
		done = sort.Search(len(r.pending), func(i int) bool { return cmp(r.pending[i].End, next) > 0 })
	case last != nil:
		n = sort.Search(len(r.pending), func(i int) bool { return cmp(r.pending[i].Start, last) > 0 })
		done = n
	}
	for _, t := range rangedel.Truncate(cmp, r.pending[:n], r.lower, next) {
		if err := w.AddRangeDel(t); err != nil {
			return fmt.Errorf("compaction: writing table %s: %w", r.fileNum, err)
		}
		r.stats.RangeDelsOut++
	}
	r.pending, r.lower = r.pending[done:], nil
	if next != nil {
		// A copy: next is valid only until the input moves on.
		r.lower = append(make([]byte, 0, len(next)), next...)
	}
	return nil
}
