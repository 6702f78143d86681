package kv

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/iterator"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// maybeScheduleCompactionLocked starts background compactions while the
// picker finds ones worth doing that conflict with none running, up to
// Options.MaxConcurrentCompactions at once and as long as the picker
// wants another beside those running (compaction.Picker.WantsAnother).
// Compact pauses them. Once every acknowledged write is in a table (the
// memtable empty, none waiting to flush), L0 settles
// (compaction.Picker.PickOrSettle): from half Options.L0CompactionThreshold
// on, as in Pebble, when nothing else is due, so a store whose writes
// stopped keeps at most one L0 table under each key; unless
// Options.DisableL0Settling. Either picker compacts L0 by the cheaper of
// compacting into the base level and merging within L0.
func (d *DB) maybeScheduleCompactionLocked() {
	if d.opts.DisableAutomaticCompactions || d.opts.ReadOnly || d.mu.manual > 0 || d.mu.bgErr != nil || d.closed.Load() {
		return
	}
	v := d.mu.versions.current
	for len(d.mu.compacting) < d.opts.MaxConcurrentCompactions && d.picker.WantsAnother(v, d.mu.compacting) {
		var c *compaction.Compaction
		if !d.opts.DisableL0Settling && d.mu.mem.empty() && len(d.mu.imm) == 0 {
			c = d.picker.PickOrSettle(v, d.mu.compacting)
		} else {
			c = d.picker.Pick(v, d.mu.compacting)
		}
		if c == nil {
			return
		}
		d.mu.compacting = append(d.mu.compacting, c)
		d.bgWG.Add(1)
		go d.backgroundCompaction(c)
	}
}

// backgroundCompaction runs c, then looks for the next compaction.
func (d *DB) backgroundCompaction(c *compaction.Compaction) {
	defer d.bgWG.Done()
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.recoverLocked("compaction", func() {
		d.mu.compacting = slices.DeleteFunc(d.mu.compacting, func(x *compaction.Compaction) bool { return x == c })
	})
	err := d.compactLocked(c)
	d.mu.compacting = slices.DeleteFunc(d.mu.compacting, func(x *compaction.Compaction) bool { return x == c })
	if err != nil && !errors.Is(err, errCanceled) {
		d.setBackgroundErrorLocked(err)
	}
	d.workEndedLocked()
}

// compactLocked carries out c: moves its one input down when nothing needs
// rewriting, otherwise merges the inputs into new tables of the output
// level. The outputs replace the inputs in one MANIFEST edit; the input
// files are deleted once no Version holds them. d.mu is held on entry and
// exit, released while tables are written.
func (d *DB) compactLocked(c *compaction.Compaction) (err error) {
	info, start := d.compactionBegin(c), time.Now()
	var outputs []*manifest.FileMetadata
	defer func() { d.compactionEnd(info, outputs, start, err) }()
	edit := &manifest.VersionEdit{DeletedFiles: make(map[manifest.DeletedFileEntry]bool)}
	for level, f := range c.Tables() {
		edit.DeletedFiles[manifest.DeletedFileEntry{Level: level, FileNum: f.FileNum}] = true
	}
	if c.TrivialMove() {
		f := c.Inputs[0][0]
		outputs = []*manifest.FileMetadata{f}
		edit.NewFiles = []manifest.NewFileEntry{{Level: c.OutputLevel, Meta: f}}
		if err := d.mu.versions.logAndApply(edit); err != nil {
			return err
		}
		d.updateReadStateLocked()
		d.metrics.levels[c.OutputLevel].moves.Add(1)
		return nil
	}
	outputs, stats, err := d.runCompaction(c, info.JobID)
	if err != nil {
		return err
	}
	var written int64
	for _, f := range outputs {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: c.OutputLevel, Meta: f})
		written += int64(f.Size)
	}
	if err := d.mu.versions.logAndApply(edit); err != nil {
		return err
	}
	d.updateReadStateLocked()
	m := &d.metrics.levels[c.OutputLevel]
	m.compactions.Add(1)
	var movedEntries int64
	for _, f := range moving(c) {
		m.bytesIn.Add(int64(f.Size))
		movedEntries += int64(f.NumEntries)
	}
	m.bytesRead.Add(int64(c.InputBytes()))
	m.bytesWritten.Add(written)
	m.bytesCompacted.Add(written)
	d.metrics.compactions.Add(1)
	if len(c.Middle) > 0 {
		d.metrics.multiLevelCompactions.Add(1)
	}
	if c.OutputLevel == manifest.NumLevels-1 {
		d.picker.RecordBottomCompaction(movedEntries, stats.Shadowed+stats.TombstonesElided+stats.RangeDeleted)
	}
	return nil
}

// runCompaction merges c's inputs into new tables of c.OutputLevel and
// returns them, not yet installed, with what the merge counted. d.mu is
// held on entry and exit.
func (d *DB) runCompaction(c *compaction.Compaction, job int) ([]*manifest.FileMetadata, compaction.RunStats, error) {
	cfg := compaction.RunConfig{
		Snapshots:             d.mu.snaps.seqNums(),
		ElideTombstone:        c.ElideTombstone(d.mu.versions.current, d.cmp.Compare),
		ElideRangeTombstone:   c.ElideRangeTombstone(d.mu.versions.current, d.cmp.Compare),
		ZeroSeqNums:           c.ZeroSeqNums(d.mu.versions.current, d.cmp.Compare),
		TargetFileSize:        d.opts.TargetFileSize,
		Grandparents:          c.Grandparents,
		MaxGrandparentOverlap: c.MaxGrandparentOverlap,
	}
	filter := d.compactionFilterLocked(c)
	d.mu.Unlock()
	defer d.mu.Lock()
	var iters []base.InternalIterator
	for _, f := range c.Tables() {
		ts, err := d.tableCache.rangeDels(f)
		var it base.InternalIterator
		if err == nil {
			it, err = d.tableCache.newCompactionIter(f)
		}
		if err != nil {
			for _, it := range iters {
				it.Close()
			}
			return nil, compaction.RunStats{}, fmt.Errorf("kv: compaction %s: %w", c, err)
		}
		cfg.RangeDels = append(cfg.RangeDels, ts...)
		iters = append(iters, it)
	}
	input := &cancelIter{
		InternalIterator: iterator.NewMerging(d.cmp.Compare, iters...),
		canceled:         d.cancelCheck(),
	}
	outputs, stats, err := d.runOutputs(input, cfg, filter, job, "compaction")
	if err != nil {
		return nil, stats, fmt.Errorf("kv: compaction %s: %w", c, err)
	}
	return outputs, stats, nil
}

// compactionFilterLocked returns the filter policy of c's output tables.
// A merge within L0 replaces its inputs with one run of their entries, as
// a flush of that many entries would add one.
func (d *DB) compactionFilterLocked(c *compaction.Compaction) bloompolicy.FilterPolicy {
	if c.StartLevel == 0 && c.OutputLevel == 0 {
		var entries int64
		for _, f := range c.Inputs[0] {
			entries += int64(f.NumEntries)
		}
		return d.tableFilterLocked(0, c.Inputs[0], entries)
	}
	return d.tableFilterLocked(c.OutputLevel, moving(c), 0)
}

// moving returns the input tables of c that come down into its output
// level from the levels above: none when c rewrites a level in place.
func moving(c *compaction.Compaction) []*manifest.FileMetadata {
	if c.StartLevel == c.OutputLevel {
		return nil
	}
	return append(slices.Clip(c.Inputs[0]), c.Middle...)
}

// Compact compacts the key range [start, end] (nil: unbounded) down the
// tree: it flushes the memtable, then runs the compactions of the picker's
// manual walk (compaction.Manual): for each level from L0 down to the
// deepest level holding keys of the range, that level's tables in the
// range merge into the next level, and the range is rewritten in that
// deepest level if nothing was merged into it. Afterwards the range's keys
// sit in one level, without the shadowed versions no snapshot needs, and
// without tombstones where nothing older remains below, and the files the
// compactions replaced are deleted, unless an open iterator still reads
// them. Background compactions pause meanwhile. Writes made while it runs
// are not waited for: it moves on from a level once none of its tables
// in the range holds a key written before Compact began, so a writer that
// never pauses does not keep it from returning; tables flushed meanwhile
// may stay in L0.
//
// Both ends are inclusive: a table holding end itself is compacted. That
// differs from DeleteRange, whose end is exclusive, and matches Pebble
// v1.1.5, whose DB.Compact(start, end) compacts the tables overlapping
// [start, end] (its end key sorts after every version of end). So
// Compact(start, end) after DeleteRange(start, end) covers every deleted
// key; it may also rewrite the tables holding end. Compaction works in
// whole tables, so keys beyond either end may be rewritten as well.
//
// start sorting after end is an error, as in Pebble, and nothing is
// flushed or compacted. (Pebble refuses start = end too; here, ends
// being inclusive, Compact(k, k) compacts the tables holding k.)
func (d *DB) Compact(start, end []byte) error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	if err := d.checkKeyRange("Compact", start, end); err != nil {
		return err
	}
	if err := d.Flush(); err != nil {
		return err
	}
	d.manualMu.Lock()
	defer d.manualMu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.manual++
	defer func() {
		d.mu.manual--
		d.workEndedLocked()
	}()
	for len(d.mu.compacting) > 0 {
		d.mu.cond.Wait()
	}
	m := d.picker.NewManual(d.mu.versions.current, start, end)
	for c := m.Next(d.mu.versions.current); c != nil; c = m.Next(d.mu.versions.current) {
		if err := d.runManualLocked(c); err != nil {
			return err
		}
	}
	d.unlockedDo(d.cleaner.waitIdle)
	return nil
}

// checkKeyRange refuses a key range [start, end] (nil: unbounded) whose
// start sorts after its end, naming the call in the error.
func (d *DB) checkKeyRange(call string, start, end []byte) error {
	if start != nil && end != nil && d.cmp.Compare(start, end) > 0 {
		return fmt.Errorf("kv: %s: start %q sorts after end %q", call, start, end)
	}
	return nil
}

// runManualLocked runs one compaction of Compact in the caller's goroutine.
func (d *DB) runManualLocked(c *compaction.Compaction) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if d.mu.bgErr != nil {
		return d.mu.bgErr
	}
	d.mu.compacting = append(d.mu.compacting, c)
	err := d.compactLocked(c)
	d.mu.compacting = slices.DeleteFunc(d.mu.compacting, func(x *compaction.Compaction) bool { return x == c })
	d.mu.cond.Broadcast()
	switch {
	case errors.Is(err, errCanceled):
		return ErrClosed
	case err != nil:
		d.setBackgroundErrorLocked(err)
	}
	return err
}
