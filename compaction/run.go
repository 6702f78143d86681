package compaction

import (
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// RunConfig says how Run writes its output.
type RunConfig struct {
	// Comparer orders the input's user keys. nil means
	// base.DefaultComparer. It is also the tables' comparer unless
	// Writer.Comparer is set.
	Comparer *base.Comparer
	// Snapshots are the sequence numbers of the open snapshots, ascending.
	// Run keeps, for each of them, the version of each key it sees.
	Snapshots []base.SeqNum
	// ElideTombstone reports whether nothing below the output holds
	// userKey, so that a tombstone no snapshot needs may be dropped (see
	// Compaction.ElideTombstone). nil means never: tombstones are kept.
	ElideTombstone func(userKey []byte) bool
	// NewOutput creates the file of the next table and names its number.
	// Run calls it only when it has an entry to write.
	NewOutput func() (base.FileNum, vfs.File, error)
	// Writer are the options of the tables written.
	Writer sstable.WriterOptions
	// TargetFileSize is the size at which Run closes a table and starts the
	// next one, at the next user key. 0 means one table.
	TargetFileSize int64
	// Grandparents are the tables of the level below the output
	// (Compaction.Grandparents), in key order. Run also closes a table,
	// at a user-key boundary, once it overlaps more than
	// MaxGrandparentOverlap bytes of them.
	Grandparents []*manifest.FileMetadata
	// MaxGrandparentOverlap bounds the bytes of grandparents one table may
	// overlap (Compaction.MaxGrandparentOverlap). 0 means the default
	// bound for TargetFileSize, as Options.MaxGrandparentOverlap computes
	// it (DefaultGrandparentOverlapFactor × TargetFileSize); with
	// TargetFileSize 0 too, there is no bound.
	MaxGrandparentOverlap int64
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
	// Tables counts the tables written.
	Tables int
}

// Run drains input, which must be in internal-key order, keeping only the
// entries some reader can see: for each user key the newest version and,
// for each snapshot, the newest version visible to it. Tombstones that no
// snapshot needs are dropped where cfg.ElideTombstone allows. The entries
// kept are written to new tables, each cut once it reaches
// cfg.TargetFileSize or overlaps too many grandparent bytes, always between
// two user keys, so no key's versions span two tables. Run returns the
// tables' metadata in key order, and nothing when no entry was kept.
//
// Run does not close input. On error it returns the tables finished so far
// with the error; the caller deletes every file it handed out through
// cfg.NewOutput.
func Run(input base.InternalIterator, cfg RunConfig) ([]*manifest.FileMetadata, RunStats, error) {
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
	r.iter = newCompactionIter(cfg.Comparer.Compare, input, cfg.Snapshots, cfg.ElideTombstone, &stats)
	r.gp = grandparentLimiter{cmp: cfg.Comparer.Compare, files: cfg.Grandparents, limit: cfg.grandparentLimit()}
	err := r.run()
	if r.w != nil {
		// Only after a failure: the table is incomplete, its error moot.
		_ = r.w.Close()
	}
	return r.tables, stats, err
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
	tables []*manifest.FileMetadata

	w       *sstable.Writer // the table being written; nil between tables
	fileNum base.FileNum
}

func (r *runner) run() error {
	for {
		versions, ok := r.iter.nextKey()
		if !ok {
			break
		}
		if r.gp.cutBefore(versions[0].key.UserKey, r.w != nil) {
			if err := r.finishTable(); err != nil {
				return err
			}
		}
		if err := r.add(versions); err != nil {
			return err
		}
		if r.cfg.TargetFileSize > 0 && r.w.EstimatedSize() >= uint64(r.cfg.TargetFileSize) {
			if err := r.finishTable(); err != nil {
				return err
			}
		}
	}
	if err := r.iter.Error(); err != nil {
		return fmt.Errorf("compaction: reading input: %w", err)
	}
	if r.w != nil {
		return r.finishTable()
	}
	return nil
}

// add writes the versions of one user key, starting a table if none is
// open.
func (r *runner) add(versions []version) error {
	if r.w == nil {
		num, f, err := r.cfg.NewOutput()
		if err != nil {
			return fmt.Errorf("compaction: creating table: %w", err)
		}
		r.w, r.fileNum = sstable.NewWriter(f, r.cfg.Writer), num
	}
	for _, v := range versions {
		if err := r.w.Add(v.key, v.value); err != nil {
			return fmt.Errorf("compaction: writing table %s: %w", r.fileNum, err)
		}
		r.stats.EntriesOut++
	}
	return nil
}

// finishTable closes the open table and records its metadata.
func (r *runner) finishTable() error {
	w := r.w
	r.w = nil
	r.gp.reset()
	if err := w.Close(); err != nil {
		return fmt.Errorf("compaction: finishing table %s: %w", r.fileNum, err)
	}
	m := w.Metadata()
	r.tables = append(r.tables, &manifest.FileMetadata{
		FileNum:        r.fileNum,
		Size:           m.Size,
		Smallest:       m.Smallest,
		Largest:        m.Largest,
		SmallestSeqNum: m.SmallestSeqNum,
		LargestSeqNum:  m.LargestSeqNum,
		NumEntries:     m.Properties.NumEntries,
		FilterBytes:    m.Properties.FilterSize,
	})
	r.stats.BytesWritten += int64(m.Size)
	r.stats.Tables++
	return nil
}

// grandparentLimiter tells when the table being written has come to
// overlap more than limit bytes of the grandparent tables, so that
// compacting it later into the level below would rewrite too much. It
// counts a grandparent once the keys written have passed it.
type grandparentLimiter struct {
	cmp     base.Compare
	files   []*manifest.FileMetadata
	limit   int64 // 0: no limit
	next    int   // first grandparent not yet passed
	overlap int64 // bytes of grandparents passed by the open table
}

// cutBefore reports whether the open table (tableOpen) should end before
// userKey.
func (g *grandparentLimiter) cutBefore(userKey []byte, tableOpen bool) bool {
	for g.next < len(g.files) && g.cmp(userKey, g.files[g.next].Largest.UserKey) > 0 {
		if tableOpen {
			g.overlap += int64(g.files[g.next].Size)
		}
		g.next++
	}
	return tableOpen && g.limit > 0 && g.overlap > g.limit
}

// reset starts counting for a new table.
func (g *grandparentLimiter) reset() { g.overlap = 0 }
