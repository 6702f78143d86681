package kv

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// LookupMetrics counts what point lookups and prefix seeks touched. In
// Metrics.Lookups they cover the whole DB; in LevelMetrics.Lookups one
// level's share.
//
// The counters after Gets and PrefixSeeks sum over both kinds of lookup. A
// Get considers each table whose key range covers the key, and asks the
// filter about the key (its prefix, under a Comparer with a Split). A
// prefix seek (Iterator.SeekPrefixGE, and the Next calls that follow it in
// prefix mode) considers each table whose key range may hold the prefix
// at or after the seek key, asks the filter of each data block it would
// enter about the prefix, and counts the data blocks it reads; a "maybe"
// is a true positive when the block held a key of the prefix at or after
// the seek key. Scans outside prefix mode are not counted. Measure one
// kind alone by taking the difference of two Metrics around it.
//
// Under a Comparer with a Split a filter holds key prefixes, so a "maybe"
// for a block that holds the key's prefix but not the key is the filter
// being right: it counts as a PrefixMatch, not as a false positive. Every
// "maybe" is then exactly one of FilterTruePositives, PrefixMatches and
// FilterFalsePositives, and
//
//	filter false-positive rate = FilterFalsePositives / (FilterFalsePositives + FilterNegatives)
//	data-block reads saved per lookup = FilterNegatives / (Gets + PrefixSeeks)
//
// is the filter's own rate, comparable with its policy's target. Tables
// read without their filter (FilterSkipped) ask no filter and count in
// neither. A lookup that fails with an error counts what it did before:
// a table that cannot be opened is not counted as considered, and a
// block whose read fails counts as read, its filter's "maybe" in none of
// the three.
type LookupMetrics struct {
	// Gets counts the point lookups served (total only; 0 per level):
	// each Get and GetAppend of the DB, a Snapshot or an indexed Batch,
	// once, wherever it was answered (a batch's own writes, a memtable or
	// a table).
	Gets                 int64
	PrefixSeeks          int64 // Iterator.SeekPrefixGE calls (total only; 0 per level)
	TablesConsidered     int64 // tables whose key range covered the key (or may hold the prefix)
	FilterNegatives      int64 // filter said absent: a data-block read saved
	FilterTruePositives  int64 // filter said maybe; the block held the user key
	FilterFalsePositives int64 // filter said maybe; the block held neither the key nor (with a Split) its prefix
	// PrefixMatches counts, under a Split, the filters that said maybe
	// for a block holding keys of the key's prefix but not the key (for a
	// prefix seek: keys of the prefix only below the seek key). The filter
	// was right; the block read was the price of filtering prefixes.
	PrefixMatches int64
	// FilterSkipped counts the tables considered that have a filter the
	// DB did not use: written by a policy it does not know, or under
	// another Comparer.SplitName (or with a Split when it has none, or
	// the reverse). Such tables are read correctly, without their filter.
	// Options.DisableFilters skips filters on purpose and counts none.
	FilterSkipped    int64
	BlockReads       int64 // data blocks fetched for lookups
	BlockCacheMisses int64 // of those, read from the file
	// RangeDelChecks counts the tables whose range tombstones were
	// searched for the key: tables with any, searched in memory whatever
	// their filter said (a filter speaks only of point keys, so a table
	// it ruled out still counts one FilterNegative, and no block read).
	RangeDelChecks int64
}

// add adds o's counters to m. It repeats sstable.LookupStats.Add's sums
// rather than embed that type: the flat fields are DESIGN.md's contract,
// and callers may write LookupMetrics literals with them.
func (m *LookupMetrics) add(o LookupMetrics) {
	m.Gets += o.Gets
	m.PrefixSeeks += o.PrefixSeeks
	m.TablesConsidered += o.TablesConsidered
	m.FilterNegatives += o.FilterNegatives
	m.FilterTruePositives += o.FilterTruePositives
	m.FilterFalsePositives += o.FilterFalsePositives
	m.PrefixMatches += o.PrefixMatches
	m.FilterSkipped += o.FilterSkipped
	m.BlockReads += o.BlockReads
	m.BlockCacheMisses += o.BlockCacheMisses
	m.RangeDelChecks += o.RangeDelChecks
}

// LevelMetrics describes one level of the tree.
type LevelMetrics struct {
	NumFiles    int
	Size        int64         // bytes of tables
	Keys        int64         // entries in the level's tables, every version and tombstone
	FilterBytes int64         // bytes of filter blocks, offsets and trailers included (read or not: see Options.DisableFilters)
	Lookups     LookupMetrics // this level's share (Gets and PrefixSeeks stay 0 here)
	// Score is the compaction picker's priority for the level
	// (compaction.Picker.Priorities, Pebble's score ratio): its size over
	// its target, or L0's read amplification over L0CompactionThreshold
	// (its table count over 500 when higher), divided by the next level's
	// when 1 or more. At 1 or more the level wants
	// compacting.
	Score float64
	// Compactions counts the compactions that wrote into this level;
	// Moves the tables moved into it unchanged.
	Compactions, Moves int64
	// BytesRead counts the input bytes of those compactions; BytesWritten
	// the bytes of tables written into the level, by flushes (L0) and
	// compactions.
	BytesRead, BytesWritten int64
	// BytesFlushed and BytesCompacted split BytesWritten by what wrote
	// the tables: flushes of memtables (L0 only) and compactions (every
	// level below L0, and L0 itself when L0 tables merge within L0: see
	// compaction.Picker.Pick), so that a level's share of the store's write
	// amplification shows whichever kind of work wrote it. Their sums
	// over the levels are Flush.BytesWritten and Compact.BytesWritten.
	// The flushes Open makes of the memtables its WAL replay fills count
	// as flushes. A flush or compaction that fails counts in none of
	// these: the tables it wrote before failing are deleted (see
	// Metrics.TablesDeleted), and their bytes are in no counter.
	BytesFlushed, BytesCompacted int64
	// BytesIn counts the bytes that came into the level from above: for
	// L0 the batches of the memtables flushed into it, for deeper levels
	// the tables of the level above that compactions into it read. Tables
	// moved down unchanged are not counted.
	BytesIn int64
}

// WriteAmp returns the level's write amplification: the bytes written into
// it per byte that came in from above, BytesWritten / BytesIn (0 before
// anything came in).
func (l LevelMetrics) WriteAmp() float64 {
	if l.BytesIn == 0 {
		return 0
	}
	return float64(l.BytesWritten) / float64(l.BytesIn)
}

// Metrics is a snapshot of the DB's counters and shape.
type Metrics struct {
	Lookups LookupMetrics  // all levels and memtables together
	Levels  []LevelMetrics // index = level, L0 first

	Flush struct {
		Count        int64 // memtables flushed
		BytesWritten int64 // bytes of L0 tables they produced
	}
	Compact struct {
		Count        int64 // compactions that rewrote tables (moves excluded)
		BytesRead    int64
		BytesWritten int64
		InProgress   int
		// MultiLevelCount counts the compactions of Count that rewrote
		// tables of three levels in one go: tables of L_n, the L_n+1
		// tables under them and the L_n+2 tables under those, written
		// into L_n+2 (multi-level compactions, see the compaction
		// package's documentation; Pebble's metric of that name).
		MultiLevelCount int64
		// BaseLevel is the level L0 compacts into (see
		// Options.StaticLevels and compaction.Picker.Shape).
		BaseLevel int
		// EstimatedDebt estimates the bytes compactions must still read
		// and write to bring every level within its target
		// (compaction.Picker.Debt), as Pebble's metric of that name.
		EstimatedDebt uint64
		// L0ReadAmp is the most L0 tables that hold one user key: the L0
		// tables a lookup may consult (Pebble's L0 sublevel count).
		L0ReadAmp int
	}
	WAL struct {
		Files   int   // WALs live: those of the memtable and of the unflushed ones
		BytesIn int64 // bytes of batches appended
		Writes  int64 // group writes
		Syncs   int64 // fsyncs
		// Recycled counts WALs created by taking over the file of a
		// flushed one.
		Recycled int64
	}
	// Ingest counts the DB.Ingest calls that added tables, and those
	// tables and their bytes (Pebble's Metrics.Ingest).
	Ingest struct {
		Count, Tables, Bytes int64
	}
	// WriteStalls counts the times a writer waited for a flush or a
	// compaction: each stall once, however often the writer woke during
	// it, as EventListener.WriteStallBegin hears of it.
	WriteStalls int64
	// TablesDeleted counts obsolete tables deleted, those of a failed
	// flush or compaction included: each EventListener.TableDeleted
	// without an Err.
	TablesDeleted int64
	// WriteAmp is (WAL.BytesIn + Flush.BytesWritten +
	// Compact.BytesWritten) / WAL.BytesIn: the bytes of tables flushes and
	// compactions wrote, and of batches, per byte of batches written by
	// users. It counts the WAL at its batches' bytes, as Pebble's
	// WAL.BytesIn, so it falls short of what reached the disk: the WAL's
	// record framing and the zeros written ahead of its syncs, the
	// MANIFEST, tables of failed work and ingested tables are not in it.
	WriteAmp float64

	// BlockCache describes the block cache. Its Size counts the data
	// blocks held and, as Reserved, the index, filter and other in-memory
	// structures of the open tables, charged to its capacity (see
	// sstable.Reader).
	BlockCache sstable.CacheMetrics
	MemTable   struct {
		Size  int64 // bytes held by the memtable and immutable memtables
		Count int   // memtables, the mutable one included
	}
	Snapshots int // open snapshots

	// Filters describes the memory the tables' filters and indexes take.
	Filters FilterMetrics
}

// FilterMetrics describes the filter memory of the open tables (see
// Options.FilterBudget). Tables not open (beyond MaxOpenFiles) hold
// nothing.
type FilterMetrics struct {
	// HeldBytes is the filter bytes the open tables hold in memory, by
	// the MANIFEST's filter sizes; never above CapBytes under a cap.
	HeldBytes int64
	// CapBytes is the cap, FilterBudget.Bytes; 0 without one.
	CapBytes int64
	// TablesNotHeld counts the tables the cap leaves without a filter
	// held, though they carry one or the cap's allocation gave them bits
	// (a filter to build) that did not fit: lookups read them as if they
	// had none.
	TablesNotHeld int64
	// IndexBytes is the memory the open tables' indexes take.
	IndexBytes int64
	// TablesBuilt counts the open tables whose filter held was built in
	// memory from their keys, at the bits per key the cap's allocation
	// now gives them, instead of the one they were written with.
	TablesBuilt int64
	// FiltersBuilt counts the filters built since Open, each a read
	// of the whole table; BuildBytesRead is the data-block bytes, as
	// stored, those builds read (sstable.Filter.BytesRead): to weigh
	// against what compactions read (Metrics.Compact.BytesRead).
	FiltersBuilt, BuildBytesRead int64
}

// lookupCounters are the hot-path atomics behind a level's LookupMetrics
// (Gets is counted once for the DB, in dbMetrics).
type lookupCounters struct {
	tablesConsidered                    atomic.Int64
	filterNegatives, filterTP, filterFP atomic.Int64
	prefixMatches, filterSkipped        atomic.Int64
	blockReads, blockCacheMisses        atomic.Int64
	rangeDelChecks                      atomic.Int64
	// found counts the Gets that found their key (a value or a
	// tombstone) in the level: the lookups that reached it and did not
	// miss, for the filter budget's traffic model.
	found atomic.Int64
}

// addStats adds one table lookup's stats. Most counters of a lookup are
// zero (an absent key usually stops at the filter), and an atomic add of
// zero costs as much as any other, so only the others are added.
func (c *lookupCounters) addStats(s *sstable.LookupStats) {
	addNonZero(&c.tablesConsidered, s.TablesConsidered)
	addNonZero(&c.filterNegatives, s.FilterNegatives)
	addNonZero(&c.filterTP, s.FilterTruePositives)
	addNonZero(&c.filterFP, s.FilterFalsePositives)
	addNonZero(&c.prefixMatches, s.PrefixMatches)
	addNonZero(&c.filterSkipped, s.FilterSkipped)
	addNonZero(&c.blockReads, s.BlockReads)
	addNonZero(&c.blockCacheMisses, s.BlockCacheMisses)
	addNonZero(&c.rangeDelChecks, s.RangeDelChecks)
}

func addNonZero(c *atomic.Int64, n int64) {
	if n != 0 {
		c.Add(n)
	}
}

func (c *lookupCounters) load() LookupMetrics {
	return LookupMetrics{
		TablesConsidered:     c.tablesConsidered.Load(),
		FilterNegatives:      c.filterNegatives.Load(),
		FilterTruePositives:  c.filterTP.Load(),
		FilterFalsePositives: c.filterFP.Load(),
		PrefixMatches:        c.prefixMatches.Load(),
		FilterSkipped:        c.filterSkipped.Load(),
		BlockReads:           c.blockReads.Load(),
		BlockCacheMisses:     c.blockCacheMisses.Load(),
		RangeDelChecks:       c.rangeDelChecks.Load(),
	}
}

// levelCounters are the per-level atomics.
type levelCounters struct {
	lookups                 lookupCounters
	compactions, moves      atomic.Int64
	bytesRead, bytesWritten atomic.Int64
	bytesIn                 atomic.Int64
	bytesFlushed            atomic.Int64
	bytesCompacted          atomic.Int64
}

// dbMetrics holds the DB's counters.
type dbMetrics struct {
	gets                  atomic.Int64 // point lookups; the rest of LookupMetrics is per level
	prefixSeeks           atomic.Int64
	levels                [manifest.NumLevels]levelCounters
	flushes, flushBytes   atomic.Int64
	compactions           atomic.Int64
	multiLevelCompactions atomic.Int64
	walBytesIn, walWrites atomic.Int64
	walSyncs, writeStalls atomic.Int64
	walsRecycled          atomic.Int64
	tablesDeleted         atomic.Int64
	ingests               ingestCounters
}

// Metrics returns the DB's current metrics. After Close it returns the
// counters as they were; the shape fields are then empty. Flushes and
// compactions count their work as they install their Version, under
// d.mu, so the counters are read under it with the Version they go with:
// a compaction counted is one whose outputs the shape fields show.
func (d *DB) Metrics() Metrics {
	if d.checkOpen() != nil {
		return d.counterMetrics()
	}
	d.mu.Lock()
	m := d.counterMetrics()
	v := d.mu.versions.current
	v.Ref()
	// The memtables, read under d.mu: once flushed, a memtable is reused.
	for _, mem := range append([]*memTable{d.mu.mem}, d.mu.imm...) {
		m.MemTable.Count++
		m.MemTable.Size += mem.Size()
		m.WAL.Files += len(mem.logs)
	}
	m.Compact.InProgress = len(d.mu.compacting)
	m.Snapshots = d.mu.snaps.count()
	d.mu.Unlock()
	defer d.unrefVersion(v)
	m.BlockCache = d.blockCache.Metrics()
	m.Filters = FilterMetrics{
		HeldBytes:      d.filterMem.held.Load(),
		CapBytes:       d.filterMem.cap,
		TablesNotHeld:  d.filterMem.notHeld.Load(),
		IndexBytes:     d.tableCache.indexBytes.Load(),
		TablesBuilt:    d.filterMem.built.Load(),
		FiltersBuilt:   d.filterMem.builds.Load(),
		BuildBytesRead: d.filterMem.buildRead.Load(),
	}
	d.shapeMetrics(&m, v)
	return m
}

// counterMetrics returns the metrics kept as counters.
func (d *DB) counterMetrics() Metrics {
	var m Metrics
	m.Lookups.Gets = d.metrics.gets.Load()
	m.Lookups.PrefixSeeks = d.metrics.prefixSeeks.Load()
	m.Levels = make([]LevelMetrics, manifest.NumLevels)
	for i := range m.Levels {
		c := &d.metrics.levels[i]
		l := &m.Levels[i]
		l.Lookups = c.lookups.load()
		l.Compactions, l.Moves = c.compactions.Load(), c.moves.Load()
		l.BytesRead, l.BytesWritten = c.bytesRead.Load(), c.bytesWritten.Load()
		l.BytesIn = c.bytesIn.Load()
		l.BytesFlushed, l.BytesCompacted = c.bytesFlushed.Load(), c.bytesCompacted.Load()
		m.Lookups.add(l.Lookups)
		m.Compact.BytesRead += l.BytesRead
		m.Compact.BytesWritten += l.BytesCompacted
	}
	m.Flush.Count, m.Flush.BytesWritten = d.metrics.flushes.Load(), d.metrics.flushBytes.Load()
	m.Compact.Count = d.metrics.compactions.Load()
	m.Compact.MultiLevelCount = d.metrics.multiLevelCompactions.Load()
	m.WAL.BytesIn, m.WAL.Writes = d.metrics.walBytesIn.Load(), d.metrics.walWrites.Load()
	m.WAL.Syncs, m.WriteStalls = d.metrics.walSyncs.Load(), d.metrics.writeStalls.Load()
	m.WAL.Recycled = d.metrics.walsRecycled.Load()
	m.TablesDeleted = d.metrics.tablesDeleted.Load()
	d.metrics.ingests.load(&m)
	if m.WAL.BytesIn > 0 {
		total := m.WAL.BytesIn + m.Flush.BytesWritten + m.Compact.BytesWritten
		m.WriteAmp = float64(total) / float64(m.WAL.BytesIn)
	}
	return m
}

// shapeMetrics fills in what Version v looks like.
func (d *DB) shapeMetrics(m *Metrics, v *manifest.Version) {
	scores := d.picker.Priorities(v)
	m.Compact.BaseLevel = d.picker.Shape(v, nil).BaseLevel
	m.Compact.EstimatedDebt = d.picker.Debt(v, nil)
	m.Compact.L0ReadAmp = d.picker.L0ReadAmp(v, nil)
	for i, files := range v.Levels {
		l := &m.Levels[i]
		l.NumFiles = len(files)
		l.Score = scores[i]
		for _, f := range files {
			l.Size += int64(f.Size)
			l.Keys += int64(f.NumEntries)
			l.FilterBytes += int64(f.FilterBytes)
		}
	}
}

// String formats the metrics as a table, one row per level.
func (m Metrics) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "level  files       size     keys  filter-B  considered  negatives  true-pos  false-pos  prefix-match  skipped  block-reads  misses\n")
	for i, l := range m.Levels {
		fmt.Fprintf(&b, "L%d  %8d %10d %8d %9d %11d %10d %9d %10d %13d %8d %12d %7d\n", i,
			l.NumFiles, l.Size, l.Keys, l.FilterBytes, l.Lookups.TablesConsidered,
			l.Lookups.FilterNegatives, l.Lookups.FilterTruePositives,
			l.Lookups.FilterFalsePositives, l.Lookups.PrefixMatches, l.Lookups.FilterSkipped,
			l.Lookups.BlockReads, l.Lookups.BlockCacheMisses)
	}
	fmt.Fprintf(&b, "level  compactions  moves   bytes-in  bytes-read  bytes-written  w-amp    flushed   compacted\n")
	for i, l := range m.Levels {
		fmt.Fprintf(&b, "L%d  %14d %6d %10d %11d %14d %6.2f %10d %11d\n", i,
			l.Compactions, l.Moves, l.BytesIn, l.BytesRead, l.BytesWritten, l.WriteAmp(),
			l.BytesFlushed, l.BytesCompacted)
	}
	t := m.Lookups
	fmt.Fprintf(&b, "total gets %d, prefix seeks %d: considered %d, negatives %d, true-pos %d, false-pos %d, prefix-match %d, skipped %d, block-reads %d, misses %d\n",
		t.Gets, t.PrefixSeeks, t.TablesConsidered, t.FilterNegatives, t.FilterTruePositives,
		t.FilterFalsePositives, t.PrefixMatches, t.FilterSkipped, t.BlockReads, t.BlockCacheMisses)
	fmt.Fprintf(&b, "flushes %d (%d B), compactions %d (%d multi-level; read %d B, wrote %d B), write-amp %.2f\n",
		m.Flush.Count, m.Flush.BytesWritten, m.Compact.Count, m.Compact.MultiLevelCount,
		m.Compact.BytesRead, m.Compact.BytesWritten, m.WriteAmp)
	fmt.Fprintf(&b, "base level L%d, L0 read-amp %d, compaction debt %d B, %d compactions running\n",
		m.Compact.BaseLevel, m.Compact.L0ReadAmp, m.Compact.EstimatedDebt, m.Compact.InProgress)
	fmt.Fprintf(&b, "memtables %d (%d B), block cache %d B in %d blocks and %d B reserved by open tables (hits %d, misses %d)\n",
		m.MemTable.Count, m.MemTable.Size, m.BlockCache.Size, m.BlockCache.Count, m.BlockCache.Reserved,
		m.BlockCache.Hits, m.BlockCache.Misses)
	return b.String()
}
