package kv

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// Ingestion, as in Pebble. A table written outside the store by
// sstable.Writer holds its keys at sequence number 0. Ingest links (or
// copies) it into the store under a new file number and records it in the
// MANIFEST with one global sequence number (manifest.FileMetadata's
// GlobalSeqNum, read through sstable.ReaderOptions.GlobalSeqNum), above
// every earlier write: the file is never rewritten. The edit that adds the
// tables is the moment their keys become visible, all at once.
//
// Recovery replays the WALs from the MANIFEST's log number on and takes
// only writes above its last sequence number, so the ingest edit, which
// raises that number to the ingested tables', must find no write in the
// memtables: Ingest flushes them first when they hold any (Pebble flushes
// only a memtable the tables overlap). While it holds the commit
// pipeline's mu no write reserves, so the sequence number it takes is
// above every acknowledged write and below every later one.

// ErrIngestOverlap reports tables given to Ingest that are not sorted or
// overlap one another.
var ErrIngestOverlap = errors.New("kv: ingested tables must be sorted and must not overlap")

// ingestCounters count the ingests done, for Metrics.Ingest.
type ingestCounters struct {
	count, tables, bytes atomic.Int64
}

func (c *ingestCounters) add(tables []ingestTable) {
	c.count.Add(1)
	c.tables.Add(int64(len(tables)))
	for _, t := range tables {
		c.bytes.Add(int64(t.meta.Size))
	}
}

func (c *ingestCounters) load(m *Metrics) {
	m.Ingest.Count, m.Ingest.Tables, m.Ingest.Bytes = c.count.Load(), c.tables.Load(), c.bytes.Load()
}

// ingestTable is one table to ingest: where it is, what the MANIFEST will
// say of it, and where it goes.
type ingestTable struct {
	path  string
	meta  *manifest.FileMetadata
	level int
}

// Ingest adds the tables at paths, files of the store's FS written by
// sstable.Writer with every sequence number 0, to the store. paths must be
// in key order and the tables must not overlap one another; each must use
// the store's comparer. Their keys become visible at once, at one sequence
// number above every write acknowledged before Ingest was called: they
// shadow older versions of the same keys, and writes after Ingest returns
// shadow them. Snapshots taken before do not see them.
//
// Each table is hard-linked into the store where the FS allows, copied
// otherwise (the files at paths are left in place; a path that is a
// symbolic link is followed, and the file it leads to linked or copied,
// never the link), synced, so that a
// table written without a sync survives a crash once Ingest returns,
// and placed, as Pebble
// does, at the deepest level down from the base level whose tables it
// overlaps none of, none of the levels above overlapping it either; at L0
// when an L0 table overlaps it. The memtables are flushed first when they
// hold writes. A table's filters are kept when the store reads its policy
// and the comparer's Split matches the one they were built with;
// otherwise the table is ingested without a usable filter (lookups read
// its data blocks) and Options.Logger is told.
//
// Each table is read whole first and its blocks' checksums checked
// (sstable.Reader.VerifyChecksums), so that damaged bytes are met here
// and not by a later compaction, which would stop the store's writes. A
// missing, unreadable or damaged file (an error wrapping ErrCorruption),
// a table of another comparer or with sequence numbers other than 0, an
// empty table, and tables out of order or overlapping (ErrIngestOverlap)
// are refused with an error naming the file, and nothing is changed.
// After Close, Ingest returns ErrClosed. A failure to record the tables
// in the MANIFEST stops the DB, as a failed flush does. Ingest of no
// paths does nothing.
func (d *DB) Ingest(paths []string) error {
	d.fileCalls.RLock()
	defer d.fileCalls.RUnlock()
	if err := d.checkWritable(); err != nil {
		return err
	}
	if len(paths) == 0 {
		return nil
	}
	tables, err := d.loadIngestTables(paths)
	if err != nil {
		return err
	}
	if err := d.linkIngestTables(tables); err != nil {
		return err
	}
	return d.applyIngest(tables)
}

// loadIngestTables opens each table, checks it and describes it, and
// checks that the tables are sorted and disjoint.
func (d *DB) loadIngestTables(paths []string) ([]ingestTable, error) {
	tables := make([]ingestTable, len(paths))
	for i, path := range paths {
		m, err := d.loadIngestTable(path)
		if err != nil {
			return nil, err
		}
		tables[i] = ingestTable{path: path, meta: m}
		if i == 0 {
			continue
		}
		prev := tables[i-1]
		if !prev.meta.EndsBefore(d.cmp.Compare, m.Smallest.UserKey) {
			return nil, fmt.Errorf("%w: %s holds keys %q-%q, which do not all sort after %s's %q-%q",
				ErrIngestOverlap, path, m.Smallest.UserKey, m.Largest.UserKey,
				prev.path, prev.meta.Smallest.UserKey, prev.meta.Largest.UserKey)
		}
	}
	return tables, nil
}

// loadIngestTable opens the table at path with the store's comparer and
// filter policies, checks its blocks' checksums and returns its
// description, sequence numbers still 0.
func (d *DB) loadIngestTable(path string) (*manifest.FileMetadata, error) {
	f, err := d.fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kv: ingest: opening %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("kv: ingest: %s: %w", path, err)
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{Comparer: d.cmp, Filters: d.filters, FileName: path})
	if err != nil {
		return nil, fmt.Errorf("kv: ingest: %w", err)
	}
	defer r.Close()
	p := r.Properties()
	switch {
	case p.LargestSeqNum != 0:
		return nil, fmt.Errorf("kv: ingest: %s holds sequence numbers up to %d; a table to ingest is written with 0", path, p.LargestSeqNum)
	case p.NumEntries == 0 && len(r.RangeDels()) == 0:
		return nil, fmt.Errorf("kv: ingest: %s holds no keys", path)
	}
	// Every block's checksum is checked now: damage met later, by a
	// compaction, would stop every write of the store.
	if err := r.VerifyChecksums(); err != nil {
		return nil, fmt.Errorf("kv: ingest: %w", err)
	}
	d.warnUnreadFilter(path, p)
	smallest, largest := r.Bounds()
	m := &manifest.FileMetadata{
		Size:        uint64(st.Size()),
		Smallest:    smallest.Clone(),
		Largest:     largest.Clone(),
		NumEntries:  p.NumEntries,
		FilterBytes: p.FilterSize,
	}
	emptyKeysNonNil(m)
	return m, nil
}

// warnUnreadFilter tells Options.Logger when the store will not read the
// table's filters (see sstable.ReaderOptions.Filters): its policy is not
// one the store knows, or its filters hold other key prefixes.
func (d *DB) warnUnreadFilter(path string, p *sstable.Properties) {
	switch {
	case d.opts.DisableFilters:
	case p.FilterPolicyName == "":
		d.logf("kv: ingest: %s has no filter; lookups in it read a data block", path)
	case d.filters[p.FilterPolicyName] == nil:
		d.logf("kv: ingest: %s has filters of policy %q, which the store does not read: its filters are dropped", path, p.FilterPolicyName)
	case p.FilterSplitName != d.cmp.SplitName:
		d.logf("kv: ingest: %s has filters of key prefixes %q, the store's comparer splits by %q: its filters are dropped",
			path, p.FilterSplitName, d.cmp.SplitName)
	}
}

// logf logs a message to Options.Logger, if there is one.
func (d *DB) logf(format string, args ...any) {
	if d.opts.Logger != nil {
		d.opts.Logger.Infof(format, args...)
	}
}

// linkIngestTables gives each table a file number and links or copies it
// into the store, syncs it, then syncs the directory. A linked file is
// the caller's: written by something other than sstable.Writer, or with
// its sync failed unnoticed, its data may still be only in memory, and
// the MANIFEST is about to name it. On failure it removes the files it
// created: unrecorded in the MANIFEST, they are not the store's (and the
// next Open deletes any a crash leaves).
func (d *DB) linkIngestTables(tables []ingestTable) error {
	var err error
	n := 0
	for ; n < len(tables) && err == nil; n++ {
		t := tables[n]
		d.mu.Lock()
		t.meta.FileNum = d.mu.versions.nextFileNum()
		d.mu.Unlock()
		name := base.MakeFilename(base.FileTypeTable, t.meta.FileNum)
		var src string
		if src, err = ingestSource(d.fs, t.path); err != nil {
			err = fmt.Errorf("kv: ingest: resolving %s: %w", t.path, err)
		} else if err = vfs.LinkOrCopy(d.fs, src, d.path(name)); err != nil {
			err = fmt.Errorf("kv: ingest: linking or copying %s to %s: %w", t.path, name, err)
		} else if err = syncFile(d.fs, d.path(name)); err != nil {
			err = fmt.Errorf("kv: ingest: syncing %s: %w", name, err)
		}
	}
	if err == nil {
		if err = d.dataDir.Sync(); err != nil {
			err = fmt.Errorf("kv: ingest: syncing %s: %w", d.dirname, err)
		}
	}
	if err != nil {
		for _, t := range tables[:n] {
			d.fs.Remove(d.path(base.MakeFilename(base.FileTypeTable, t.meta.FileNum)))
		}
	}
	return err
}

// ingestSource returns the path of the file to link into the store for
// the table at path: on the operating system's files (vfs.Default), path
// with its symbolic links resolved. link(2) does not follow a symbolic
// link: linking one would make the store's table a link to the caller's
// file, lost when the caller removes it, or, for a relative link, a link
// to nothing.
func ingestSource(fs vfs.FS, path string) (string, error) {
	if vfs.Root(fs) != vfs.Default {
		return path, nil
	}
	return filepath.EvalSymlinks(path)
}

// applyIngest records the linked tables in the MANIFEST, at the next
// sequence number, holding the commit pipeline's mu, once the memtables
// are empty. It holds off Compact meanwhile, so that no manual compaction
// is picked whose output could overlap a table placed below L0. On
// failure before the edit is written the linked files are removed. Either
// way it reports the ingestion to the listener (TableIngested).
func (d *DB) applyIngest(tables []ingestTable) error {
	d.manualMu.Lock()
	defer d.manualMu.Unlock()
	// Flush outside the commit pipeline first, so writes go on while it
	// runs; what arrives meanwhile is flushed under the pipeline's mu,
	// below.
	err := d.Flush()
	edited := false
	if err == nil {
		err = d.commit.runExclusive(func() error {
			return d.ingestExclusive(tables, &edited)
		})
	}
	if err != nil && !edited {
		for _, t := range tables {
			d.fs.Remove(d.path(base.MakeFilename(base.FileTypeTable, t.meta.FileNum)))
		}
	}
	d.tableIngested(tables, edited, err)
	return err
}

// ingestExclusive empties the memtables, assigns the tables the next
// sequence number and their levels, and applies the edit; edited is set
// once the edit may have reached the MANIFEST. From choosing the levels
// to installing the edit no compaction starts (d.mu.manual), so none
// picked on the older version writes over a table placed below L0.
func (d *DB) ingestExclusive(tables []ingestTable, edited *bool) error {
	if err := d.commit.err.get(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return err
	}
	if err := d.flushAllLocked(); err != nil {
		return err
	}
	d.mu.manual++
	defer func() {
		d.mu.manual--
		d.workEndedLocked()
	}()
	seq := d.commit.logSeq + 1
	if seq > base.SeqNumMax {
		return fmt.Errorf("%w: %d is the last sequence number", errSeqNumsExhausted, d.commit.logSeq)
	}
	v := d.mu.versions.current
	baseLevel := d.picker.Shape(v, d.mu.compacting).BaseLevel
	edit := &manifest.VersionEdit{LastSeqNum: seq}
	for i := range tables {
		m := tables[i].meta
		m.Smallest.Trailer = base.MakeTrailer(seq, m.Smallest.Kind())
		if !m.Largest.IsExclusiveSentinel() {
			m.Largest.Trailer = base.MakeTrailer(seq, m.Largest.Kind())
		}
		m.SmallestSeqNum, m.LargestSeqNum, m.GlobalSeqNum = seq, seq, seq
		tables[i].level = d.ingestTargetLevelLocked(v, baseLevel, m)
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: tables[i].level, Meta: m})
	}
	*edited = true
	if err := d.mu.versions.logAndApply(edit); err != nil {
		d.setBackgroundErrorLocked(err)
		return err
	}
	// Publish the tables before their sequence number: a reader that sees
	// the number sees them.
	d.updateReadStateLocked()
	d.commit.logSeq = seq
	d.visibleSeq.Store(uint64(seq))
	d.metrics.ingests.add(tables)
	return nil
}

// flushAllLocked makes the memtable immutable if it holds writes and waits
// until no memtable holds any. It runs under the commit pipeline's mu, so
// no write arrives meanwhile. d.mu is held; it is released while waiting.
//
// A memtable holds a write from the moment the write reserved room in it
// (batchBytes, written under the pipeline's mu, which the caller holds),
// before its batch is inserted: a Sync write inserts only once the WAL is
// synced. Such a write must be flushed, and so published (the flush waits
// for that), before the ingest takes a later sequence number: published
// after the ingest, it would move the visible sequence number back below
// the ingest's, hiding the ingested keys, and recovery would skip it, as
// numbered below the MANIFEST's last sequence number.
func (d *DB) flushAllLocked() error {
	if d.mu.mem.holdsWrites() {
		if err := d.rotateMemTableLocked(); err != nil {
			return err
		}
	}
	d.forceFlushLocked(d.mu.mem.logNum())
	for len(d.mu.imm) > 0 {
		switch {
		case d.mu.bgErr != nil:
			return d.mu.bgErr
		case d.closed.Load():
			return ErrClosed
		}
		d.mu.cond.Wait()
	}
	return nil
}

// ingestTargetLevelLocked returns the level an ingested table m goes to,
// as Pebble's ingestTargetLevel chooses it: L0 if it overlaps an L0
// table; otherwise, from the base level down, the deepest level before
// the first one holding a table it overlaps or receiving the output of a
// running compaction whose key range overlaps it (0 if that is the base
// level itself). Overlap is judged by the tables' key ranges, not their
// keys.
func (d *DB) ingestTargetLevelLocked(v *manifest.Version, baseLevel int, m *manifest.FileMetadata) int {
	cmp := d.cmp.Compare
	lo, hi := m.Smallest.UserKey, m.Largest.UserKey
	if len(v.Overlaps(0, cmp, lo, hi)) > 0 {
		return 0
	}
	target := 0
	for level := baseLevel; level < manifest.NumLevels; level++ {
		if len(v.Overlaps(level, cmp, lo, hi)) > 0 || d.compactionOutputOverlapsLocked(level, lo, hi) {
			break
		}
		target = level
	}
	return target
}

// compactionOutputOverlapsLocked reports whether a running compaction
// writes into level over a key range that overlaps [lo, hi].
func (d *DB) compactionOutputOverlapsLocked(level int, lo, hi []byte) bool {
	cmp := d.cmp.Compare
	for _, c := range d.mu.compacting {
		if c.OutputLevel == level && cmp(c.Smallest, hi) <= 0 && cmp(lo, c.Largest) <= 0 {
			return true
		}
	}
	return false
}
