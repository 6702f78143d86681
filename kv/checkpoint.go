package kv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
)

// Checkpoints, as in Pebble. A checkpoint is a directory holding a store
// of its own: the tables of one Version, hard-linked (copied where the FS
// cannot link), a fresh MANIFEST describing just that Version, and copies
// of the WALs of the memtables of that moment, the live one cut at the
// last write acknowledged then. It is built under a temporary name next
// to the target and renamed to it once every file in it is synced, so the
// target either does not exist or holds the whole copy; CURRENT is
// written last, so an interrupted temporary directory is no store either.
//
// The moment is taken holding the commit pipeline's mu: every write
// acknowledged before Checkpoint was called is in the WAL then, and none
// after it is in the part copied. The Version is referenced, so its
// tables stay, and the WALs to copy are not retired (recycled or
// deleted) until the copy is done (checkpointHold).

// checkpointTempSuffix names the directory a checkpoint is built in:
// the target's name with this suffix.
const checkpointTempSuffix = ".checkpoint-tmp"

// checkpointMarker is the file a checkpoint's temporary directory holds
// from its creation until the copy is complete: what tells a later
// Checkpoint to the same target the leftover of an interrupted one,
// which it removes, from a directory of the user's (a store, even) that
// happens to bear the temporary name, which it must not.
const checkpointMarker = "CHECKPOINT-INCOMPLETE"

// checkpointHold keeps WALs a checkpoint copies from being retired: while
// n > 0, the WALs of flushed memtables wait in held. It also lists the
// targets of the checkpoints in progress: two checkpoints to one target
// would build it in one temporary directory, each removing or
// overwriting the other's files. Guarded by d.mu.
type checkpointHold struct {
	n       int
	held    []base.FileNum
	targets map[string]struct{}
}

// checkpointState is the moment a checkpoint copies.
type checkpointState struct {
	version  *manifest.Version
	logNum   base.FileNum
	nextFile base.FileNum
	lastSeq  base.SeqNum
	manifest base.FileNum
	// recyclableLogNum is the store's (see versionSet.walFormat): the
	// checkpoint's WALs are copies of the store's, in the same format.
	recyclableLogNum base.FileNum
	wals             []walExtent
}

// walExtent is a WAL to copy and how much of it: size bytes, or all of it
// when size is negative.
type walExtent struct {
	num  base.FileNum
	size int64
}

// Checkpoint writes a consistent copy of the store into the directory
// destDir, which must not exist, while the store goes on serving reads and
// writes. Open it as any store: it holds every write acknowledged before
// Checkpoint was called, and of the writes made while it runs, a prefix
// of them, batches whole (in practice, none of them).
//
// Tables are hard-linked where the FS allows it and copied otherwise; the
// MANIFEST is written afresh with the current version alone, and the WALs
// of the memtables are copied, the live one up to its last acknowledged
// write. Every file is synced. The copy is built in destDir +
// ".checkpoint-tmp" and renamed to destDir at the end: a failure or a
// crash midway leaves no destDir, at most the temporary directory,
// marked as a checkpoint's (it holds a file named CHECKPOINT-INCOMPLETE,
// removed once the copy is in place), which the next Checkpoint to
// destDir removes. Missing parents of destDir are created.
//
// An existing destDir, or one another Checkpoint of this DB is writing,
// or anything at the temporary name but an empty or marked directory
// (the user's, not a leftover: a store, say), is refused with an error
// wrapping os.ErrExist, and nothing is written;
// so is an empty destDir, as Open refuses one, where it would otherwise
// build the copy in the current directory before failing to rename it.
// After Close, Checkpoint returns ErrClosed.
func (d *DB) Checkpoint(destDir string) error {
	d.fileCalls.RLock()
	defer d.fileCalls.RUnlock()
	if err := d.checkOpen(); err != nil {
		return err
	}
	if destDir == "" {
		return errors.New("kv: checkpoint: empty directory name")
	}
	// Cleaned, "ckpt/" names ckpt: the temporary directory goes beside
	// it, not inside it, and the directory synced is its parent.
	destDir = d.fs.PathJoin(destDir)
	if !d.claimCheckpointTarget(destDir) {
		return fmt.Errorf("kv: checkpoint: %s: %w (another checkpoint is writing it)", destDir, os.ErrExist)
	}
	defer d.releaseCheckpointTarget(destDir)
	if _, err := d.fs.Stat(destDir); err == nil {
		return fmt.Errorf("kv: checkpoint: %s: %w", destDir, os.ErrExist)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	st, err := d.captureCheckpoint()
	if err != nil {
		return err
	}
	defer d.releaseCheckpoint(st)
	tmp := destDir + checkpointTempSuffix
	if err := d.removeCheckpointLeftover(tmp); err != nil {
		return err
	}
	if err := d.writeCheckpoint(tmp, st); err != nil {
		d.fs.RemoveAll(tmp)
		return err
	}
	if err := d.fs.Rename(tmp, destDir); err != nil {
		d.fs.RemoveAll(tmp)
		return fmt.Errorf("kv: checkpoint: renaming %s to %s: %w", tmp, destDir, err)
	}
	if err := syncDir(d.fs, d.fs.PathDir(destDir)); err != nil {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	// The copy is whole and in place. Its mark goes last, so that no
	// moment leaves an unmarked temporary directory; should a crash come
	// first, it stays, a file the copy's Open passes over.
	if err := d.fs.Remove(d.fs.PathJoin(destDir, checkpointMarker)); err != nil {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	if err := syncDir(d.fs, destDir); err != nil {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	return nil
}

// removeCheckpointLeftover removes tmp, the temporary directory of a
// checkpoint, where an interrupted one left it: empty, or marked with
// checkpointMarker. Anything else at that name is not a checkpoint's to
// remove, and refused with an error wrapping os.ErrExist.
func (d *DB) removeCheckpointLeftover(tmp string) error {
	fi, err := d.fs.Stat(tmp)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	var names []string
	if fi.IsDir() {
		if names, err = d.fs.List(tmp); err != nil {
			return fmt.Errorf("kv: checkpoint: %w", err)
		}
	}
	if !fi.IsDir() || len(names) > 0 && !slices.Contains(names, checkpointMarker) {
		return fmt.Errorf("kv: checkpoint: %s, where the copy is built: %w, and is no interrupted checkpoint's leftover (it lacks %s): remove it, or choose another target",
			tmp, os.ErrExist, checkpointMarker)
	}
	if err := d.fs.RemoveAll(tmp); err != nil {
		return fmt.Errorf("kv: checkpoint: removing %s: %w", tmp, err)
	}
	return nil
}

// claimCheckpointTarget lists dir as the target of a checkpoint in
// progress, unless it is listed already, and reports whether it did.
func (d *DB) claimCheckpointTarget(dir string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := &d.mu.checkpoints
	if _, ok := h.targets[dir]; ok {
		return false
	}
	if h.targets == nil {
		h.targets = make(map[string]struct{})
	}
	h.targets[dir] = struct{}{}
	return true
}

// releaseCheckpointTarget drops dir from the targets in progress.
func (d *DB) releaseCheckpointTarget(dir string) {
	d.mu.Lock()
	delete(d.mu.checkpoints.targets, dir)
	d.mu.Unlock()
}

// captureCheckpoint takes, holding the commit pipeline's mu, the moment a
// checkpoint copies, references its Version and holds its WALs.
func (d *DB) captureCheckpoint() (*checkpointState, error) {
	st := &checkpointState{}
	err := d.commit.runExclusive(func() error {
		p := &d.commit
		if err := p.err.get(); err != nil {
			return err
		}
		live := walExtent{size: -1}
		if p.log != nil {
			if err := p.log.writeAll(); err != nil {
				return err
			}
			live = walExtent{num: p.log.num, size: p.log.w.Size()}
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		vs := &d.mu.versions
		// A MANIFEST being written changes its number with d.mu released:
		// wait for it to be done (it never waits for the pipeline's mu).
		for vs.writing {
			d.mu.cond.Wait()
		}
		if err := d.checkOpen(); err != nil {
			return err
		}
		st.version = vs.current
		st.version.Ref()
		st.logNum, st.nextFile, st.lastSeq, st.manifest = vs.logNum, vs.nextFile, vs.lastSeq, vs.manifestNum
		st.recyclableLogNum = vs.recyclableLogNum
		for l := range d.liveLogsLocked() {
			w := walExtent{num: l.num, size: -1}
			if l.num == live.num {
				w = live
			}
			st.wals = append(st.wals, w)
		}
		d.mu.checkpoints.n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// releaseCheckpoint drops the checkpoint's holds; the last one out
// retires the WALs flushed meanwhile.
func (d *DB) releaseCheckpoint(st *checkpointState) {
	d.mu.Lock()
	h := &d.mu.checkpoints
	h.n--
	var held []base.FileNum
	if h.n == 0 {
		held, h.held = h.held, nil
	}
	d.retireWALs(held)
	d.mu.Unlock()
	d.unrefVersion(st.version)
}

// holdRetiredWALs keeps nums from being retired while a checkpoint runs,
// and reports whether it did. d.mu is held.
func (d *DB) holdRetiredWALs(nums []base.FileNum) bool {
	h := &d.mu.checkpoints
	if h.n == 0 {
		return false
	}
	h.held = append(h.held, nums...)
	return true
}

// writeCheckpoint builds the checkpoint in dir: tables, WALs, MANIFEST,
// then CURRENT, each synced, and the directory synced after each stage.
func (d *DB) writeCheckpoint(dir string, st *checkpointState) error {
	if err := d.makeDir(dir); err != nil {
		return fmt.Errorf("kv: checkpoint: creating %s: %w", dir, err)
	}
	marker := d.fs.PathJoin(dir, checkpointMarker)
	if err := writeSyncedFile(d.fs, marker, ""); err != nil {
		return fmt.Errorf("kv: checkpoint: writing %s: %w", marker, err)
	}
	if err := syncDir(d.fs, dir); err != nil {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	for _, files := range st.version.Levels {
		for _, f := range files {
			name := base.MakeFilename(base.FileTypeTable, f.FileNum)
			if err := vfs.LinkOrCopy(d.fs, d.path(name), d.fs.PathJoin(dir, name)); err != nil {
				return fmt.Errorf("kv: checkpoint: linking or copying table %s: %w", name, err)
			}
		}
	}
	for _, w := range st.wals {
		if err := d.copyWAL(dir, w); err != nil {
			return err
		}
	}
	if err := d.writeCheckpointManifest(dir, st); err != nil {
		return err
	}
	if err := syncDir(d.fs, dir); err != nil {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	if err := writeSyncedFile(d.fs, d.fs.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0)),
		base.MakeFilename(base.FileTypeManifest, st.manifest)+"\n"); err != nil {
		return fmt.Errorf("kv: checkpoint: writing CURRENT: %w", err)
	}
	if err := syncDir(d.fs, dir); err != nil {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	return nil
}

// copyWAL copies the extent w of a WAL into dir and syncs it.
func (d *DB) copyWAL(dir string, w walExtent) error {
	name := base.MakeFilename(base.FileTypeLog, w.num)
	src, dst := d.path(name), d.fs.PathJoin(dir, name)
	var err error
	if w.size < 0 {
		err = vfs.Copy(d.fs, src, dst)
	} else {
		err = vfs.LimitedCopy(d.fs, src, dst, w.size)
	}
	if err != nil {
		return fmt.Errorf("kv: checkpoint: copying WAL %s: %w", name, err)
	}
	return nil
}

// writeCheckpointManifest writes the checkpoint's MANIFEST: one edit
// holding the whole Version and the counters taken with it.
func (d *DB) writeCheckpointManifest(dir string, st *checkpointState) error {
	edit := &manifest.VersionEdit{
		ComparerName: d.cmp.Name,
		LogNum:       st.logNum,
		NextFileNum:  st.nextFile,
		LastSeqNum:   st.lastSeq,
		// So that the checkpoint's Open checks its WALs as the store's
		// would: the first it needs is there, and each ends in its seal
		// before the next begins (see replayWALs).
		RecyclableLogNum: st.recyclableLogNum,
	}
	for level, files := range st.version.Levels {
		for _, f := range files {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: level, Meta: f})
		}
	}
	name := base.MakeFilename(base.FileTypeManifest, st.manifest)
	f, err := d.fs.Create(d.fs.PathJoin(dir, name))
	if err != nil {
		return fmt.Errorf("kv: checkpoint: creating %s: %w", name, err)
	}
	_, err = writeEdit(record.NewWriter(f), f, edit)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("kv: checkpoint: writing %s: %w", name, err)
	}
	return nil
}

// writeSyncedFile creates name holding s, synced.
func writeSyncedFile(fs vfs.FS, name, s string) error {
	f, err := fs.Create(name)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, s)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncFile syncs the file name, opened for reading: fsync flushes the
// file's data whatever the descriptor's mode.
func syncFile(fs vfs.FS, name string) error {
	f, err := fs.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir syncs directory dir, so the entries added to it survive a
// crash.
func syncDir(fs vfs.FS, dir string) error {
	f, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("opening directory %s: %w", dir, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
