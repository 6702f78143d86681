package kv

import (
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// recover rebuilds the store's state at Open: the Version from the
// MANIFEST, then the writes of every WAL at or above its log number, which
// are written out as L0 tables. It then starts a fresh WAL and memtable and
// a fresh MANIFEST recording it all, so the old WALs and MANIFEST become
// obsolete.
func (d *DB) recover() error {
	vs := &d.mu.versions
	exists, err := d.storeExists()
	if err != nil {
		return err
	}
	if exists {
		if err := vs.load(); err != nil {
			return err
		}
	}
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return fmt.Errorf("kv: listing %s: %w", d.dirname, err)
	}
	if err := d.checkTablesPresent(names); err != nil {
		return err
	}
	for _, name := range names {
		if _, n, ok := base.ParseFilename(name); ok {
			vs.markFileNumUsed(n)
		}
	}
	edit := &manifest.VersionEdit{ComparerName: d.cmp.Name}
	lastSeq, err := d.replayWALs(walNums(names, vs.logNum), edit)
	if err != nil {
		return err
	}
	return d.startFresh(edit, lastSeq)
}

// checkTablesPresent reports a table of the current Version whose file is
// missing from the directory listing.
func (d *DB) checkTablesPresent(names []string) error {
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	for level, files := range d.mu.versions.current.Levels {
		for _, f := range files {
			if name := base.MakeFilename(base.FileTypeTable, f.FileNum); !present[name] {
				return base.CorruptionErrorf("kv: table %s of L%d, named by the MANIFEST, is missing", name, level)
			}
		}
	}
	return nil
}

// replayWALs applies the batches of the given WALs, in order, to memtables,
// and writes each memtable out as an L0 table added to edit. It returns the
// last sequence number seen.
func (d *DB) replayWALs(nums []base.FileNum, edit *manifest.VersionEdit) (base.SeqNum, error) {
	lastSeq := d.mu.versions.lastSeq
	mem := newMemTable(d.cmp, 0)
	flush := func() error {
		if mem.empty() {
			return nil
		}
		files, err := d.writeL0(mem, nil, nil)
		if err != nil {
			return err
		}
		for _, f := range files {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: f})
		}
		mem = newMemTable(d.cmp, 0)
		return nil
	}
	apply := func(batch []byte) error {
		r, err := newBatchReader(batch)
		if err != nil {
			return base.CorruptionErrorf("%v", err)
		}
		if err := mem.apply(batch); err != nil {
			return base.CorruptionErrorf("%v", err)
		}
		if r.Count() > 0 {
			lastSeq = max(lastSeq, r.SeqNum()+base.SeqNum(r.Count())-1)
		}
		if mem.Size() >= d.opts.MemTableSize {
			return flush()
		}
		return nil
	}
	for _, num := range nums {
		if err := d.replayWAL(num, apply); err != nil {
			return 0, err
		}
	}
	return lastSeq, flush()
}

// startFresh opens the DB's first WAL and memtable and records the
// recovered state (edit: the tables written from replayed WALs) in a new
// MANIFEST, which CURRENT then names.
func (d *DB) startFresh(edit *manifest.VersionEdit, lastSeq base.SeqNum) error {
	vs := &d.mu.versions
	logNum := vs.nextFileNum()
	log, err := d.createWAL(logNum)
	if err != nil {
		return err
	}
	d.commit.log = log
	d.commit.logSeq = lastSeq
	d.visibleSeq.Store(uint64(lastSeq))
	edit.LogNum = logNum
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.mem = newMemTable(d.cmp, logNum)
	return vs.logAndApply(edit)
}
