package kv

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
)

// versionSet keeps the current Version and its persistent record: the
// MANIFEST, a log of VersionEdits (internal/record framing, one edit per
// record), and CURRENT, which names the MANIFEST in use. A new MANIFEST
// starts with one edit describing the whole Version; CURRENT is switched to
// it atomically (written to a temp file, synced, renamed, directory synced).
//
// All fields are guarded by d.mu. Writing the MANIFEST happens with d.mu
// released; the writing flag makes those writes take turns.
type versionSet struct {
	d       *DB
	current *manifest.Version
	// logNum is the oldest WAL still needed; nextFile the next unused file
	// number; lastSeq the last sequence number recorded in the MANIFEST:
	// the tables hold no write above it, the WALs from logNum on none at
	// or below it.
	logNum   base.FileNum
	nextFile base.FileNum
	lastSeq  base.SeqNum
	// recyclableLogNum is the first WAL from which every WAL is in
	// recyclable chunks; 0 until a MANIFEST or this DB's first WAL says
	// (see manifest.VersionEdit.RecyclableLogNum).
	recyclableLogNum base.FileNum
	// closedLogs are the WALs the last Close left live, sealed, with
	// their lengths (see manifest.VersionEdit.ClosedLogs); none if no
	// MANIFEST edit says.
	closedLogs []manifest.ClosedLog

	manifestNum  base.FileNum
	manifestFile vfs.File
	manifest     *record.Writer
	manifestSize int64
	// edits counts the edits appended to the MANIFEST after the snapshot
	// it starts with.
	edits   int
	writing bool
}

func (vs *versionSet) init(d *DB) {
	vs.d = d
	vs.current = &manifest.Version{}
	vs.current.Ref()
	vs.nextFile = 1
}

// nextFileNum allocates a file number.
func (vs *versionSet) nextFileNum() base.FileNum {
	n := vs.nextFile
	vs.nextFile++
	return n
}

// maxFileNum bounds the numbers of the files Open finds, and of those
// the MANIFEST names, its next file number included: a store
// allocating a million a second would take 290,000 years to reach it, and
// a file numbered at or above it (not one of the store's) would leave the
// counter, which takes the next number after the highest found, so little
// room that it could wrap around to 0 and reuse the numbers of live files.
const maxFileNum = base.FileNum(1 << 63)

// markFileNumUsed makes sure n is never allocated.
func (vs *versionSet) markFileNumUsed(n base.FileNum) {
	if vs.nextFile <= n {
		vs.nextFile = n + 1
	}
}

// logAndApply records edit in the MANIFEST and makes current + edit the
// current Version. It fills in NextFileNum, and raises LastSeqNum to the
// MANIFEST's: the caller sets it to the last sequence number of the writes
// the edit's new tables take from WALs (a flush), leaving it 0 when they
// take none (a compaction). Every WAL at or above the log number then
// holds only writes above it, which recovery checks. d.mu must be
// held; it is released while the MANIFEST is written. The caller publishes
// a new read state afterwards. On failure the Version is unchanged and the
// error should stop the DB: whether the edit reached the disk is unknown.
func (vs *versionSet) logAndApply(edit *manifest.VersionEdit) error {
	return vs.apply(edit, false)
}

// logAndApplyFresh is logAndApply, but records edit by starting a new
// MANIFEST, its snapshot of the new Version the only edit in it.
func (vs *versionSet) logAndApplyFresh(edit *manifest.VersionEdit) error {
	return vs.apply(edit, true)
}

// apply records edit and applies it (see logAndApply), in a new MANIFEST
// if fresh is set or the current one is full.
func (vs *versionSet) apply(edit *manifest.VersionEdit, fresh bool) error {
	d := vs.d
	for vs.writing {
		d.mu.cond.Wait()
	}
	vs.writing = true
	defer func() {
		vs.writing = false
		d.mu.cond.Broadcast()
	}()
	if edit.LogNum != 0 && edit.LogNum < vs.logNum {
		return fmt.Errorf("kv: version edit moves the log number back from %s to %s", vs.logNum, edit.LogNum)
	}
	edit.NextFileNum = vs.nextFile
	edit.LastSeqNum = max(vs.lastSeq, edit.LastSeqNum)
	next, err := vs.current.Apply(d.cmp.Compare, edit)
	if err != nil {
		return fmt.Errorf("kv: applying version edit: %w", err)
	}
	rollover := fresh || vs.manifest == nil || vs.manifestSize >= d.opts.MaxManifestFileSize
	var newNum base.FileNum
	if rollover {
		newNum = vs.nextFileNum()
		edit.NextFileNum = vs.nextFile
	}
	d.unlockedDo(func() { // the FS is the user's, and may panic
		if rollover {
			err = vs.writeNewManifest(newNum, next, edit)
		} else {
			err = vs.appendEdit(edit)
		}
	})
	if err != nil {
		next.Release()
		return err
	}
	if edit.LogNum != 0 {
		vs.logNum = edit.LogNum
	}
	vs.recyclableLogNum = cmp.Or(vs.recyclableLogNum, edit.RecyclableLogNum)
	if len(edit.ClosedLogs) > 0 {
		vs.closedLogs = edit.ClosedLogs
	}
	vs.lastSeq = edit.LastSeqNum
	vs.install(next)
	return nil
}

// install makes v the current Version.
func (vs *versionSet) install(v *manifest.Version) {
	v.Ref()
	old := vs.current
	vs.current = v
	vs.d.unrefVersion(old)
}

// appendEdit writes one edit to the MANIFEST and syncs it.
func (vs *versionSet) appendEdit(edit *manifest.VersionEdit) error {
	name := base.MakeFilename(base.FileTypeManifest, vs.manifestNum)
	n, err := writeEdit(vs.manifest, vs.manifestFile, edit)
	vs.manifestSize += n
	vs.edits++
	if err != nil {
		return fmt.Errorf("kv: writing %s: %w", name, err)
	}
	return nil
}

// writeEdit appends edit to a MANIFEST, syncs it, then seals it and syncs
// the seal. The seal is an empty record (an empty edit, which changes
// nothing, to any reader of the format) after the edit: a torn tail of
// the MANIFEST ends recovery quietly, as a crash in mid-write, so without
// a valid record after it damage to the last edit, synced and acted on
// (its WAL deleted, its compaction's inputs removed), would be taken for
// one. The seal is written only once the edit is synced: the pages of a
// file not yet synced may reach the disk in any order, and an edit cut
// short by a crash during its sync, with its seal written out on a later
// page, would read as damage followed by valid data, corruption, and keep
// the store from opening. So a seal on the disk vouches for a synced
// edit, and only damage to the seal itself, or to an edit not yet
// sealed, which nothing acted on, reads as a torn tail.
func writeEdit(w *record.Writer, f vfs.File, edit *manifest.VersionEdit) (int64, error) {
	buf := edit.Encode()
	for _, rec := range [][]byte{buf, nil} {
		if _, err := w.WriteRecord(rec); err != nil {
			return 0, err
		}
		if err := w.Flush(); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
	}
	return int64(len(buf)), nil
}

// writeNewManifest starts MANIFEST num with a snapshot of v (which already
// includes edit) carrying edit's counters, points CURRENT at it, and drops
// the previous MANIFEST.
func (vs *versionSet) writeNewManifest(num base.FileNum, v *manifest.Version, edit *manifest.VersionEdit) error {
	d := vs.d
	name := base.MakeFilename(base.FileTypeManifest, num)
	snap := &manifest.VersionEdit{
		ComparerName: d.cmp.Name,
		LogNum:       max(edit.LogNum, vs.logNum),
		NextFileNum:  edit.NextFileNum,
		LastSeqNum:   edit.LastSeqNum,
		// Every MANIFEST says it once known, so no later one forgets it.
		RecyclableLogNum: cmp.Or(vs.recyclableLogNum, edit.RecyclableLogNum),
	}
	closed := edit.ClosedLogs
	if len(closed) == 0 {
		closed = vs.closedLogs
	}
	for _, c := range closed {
		if c.Num >= snap.LogNum { // else flushed: no longer read
			snap.ClosedLogs = append(snap.ClosedLogs, c)
		}
	}
	for level, files := range v.Levels {
		for _, f := range files {
			snap.NewFiles = append(snap.NewFiles, manifest.NewFileEntry{Level: level, Meta: f})
		}
	}
	f, err := d.fs.Create(d.path(name))
	if err != nil {
		return fmt.Errorf("kv: creating %s: %w", name, err)
	}
	w := record.NewWriter(f)
	size, err := writeEdit(w, f, snap)
	if err == nil {
		err = vs.setCurrent(num)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("kv: writing %s: %w", name, err)
	}
	oldNum, oldFile := vs.manifestNum, vs.manifestFile
	vs.manifestNum, vs.manifestFile, vs.manifest, vs.manifestSize, vs.edits = num, f, w, size, 0
	if oldFile != nil {
		oldFile.Close()
		d.cleaner.deleteFile(d, base.FileTypeManifest, oldNum)
	}
	return nil
}

// setCurrent points CURRENT at MANIFEST num atomically. The temp file is
// named by the manifest's own number, which no other file uses.
func (vs *versionSet) setCurrent(num base.FileNum) error {
	d := vs.d
	tmp := d.path(base.MakeFilename(base.FileTypeTemp, num))
	f, err := d.fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, base.MakeFilename(base.FileTypeManifest, num)+"\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.fs.Rename(tmp, d.path(base.MakeFilename(base.FileTypeCurrent, 0)))
	}
	if err == nil {
		err = d.dataDir.Sync()
	}
	if err != nil {
		d.fs.Remove(tmp)
		return fmt.Errorf("kv: setting CURRENT: %w", err)
	}
	return nil
}

// load reads CURRENT and replays the MANIFEST it names into current,
// logNum, nextFile and lastSeq; manifestNum names it until a new one is
// written (a read-only DB writes none, and its checkpoints take that
// number). An edit that does not decode, or that contradicts the edits
// before it (see manifest.Builder), is corruption naming the MANIFEST and
// the edit's offset. A torn last record (a crash while appending) ends
// the log.
func (vs *versionSet) load() error {
	d := vs.d
	num, err := vs.readCurrent()
	if err != nil {
		return err
	}
	name := base.MakeFilename(base.FileTypeManifest, num)
	f, err := d.fs.Open(d.path(name))
	switch {
	case errors.Is(err, os.ErrNotExist):
		// A store never removes the MANIFEST CURRENT names (it switches
		// CURRENT first): damage to CURRENT, or a lost MANIFEST.
		return base.CorruptionErrorf("kv: CURRENT: offset 0: names %s, which does not exist: %w", name, err)
	case err != nil:
		return fmt.Errorf("kv: opening %s named by CURRENT: %w", name, err)
	}
	defer f.Close()
	b := manifest.NewBuilder(vs.current, d.cmp.Compare)
	b.RequireCounters()
	r := record.NewReader(f, name)
	n := 0
	for ; ; n++ {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("kv: reading %s: %w", name, err)
		}
		if err := vs.replayEdit(b, rec, recordPos{name, r.Offset()}); err != nil {
			return err
		}
	}
	if n == 0 {
		return base.CorruptionErrorf("kv: %s: offset 0: holds no version edit", name)
	}
	v, err := b.Build()
	if err != nil {
		return base.CorruptionErrorf("kv: %s: the version its %d edits build (the last at offset %d): %w", name, n, r.Offset(), err)
	}
	for _, files := range v.Levels {
		for _, f := range files {
			emptyKeysNonNil(f)
		}
	}
	vs.install(v)
	vs.manifestNum = num
	vs.markFileNumUsed(num)
	return nil
}

// replayEdit decodes one MANIFEST record, found at where (file and offset),
// checks it against the edits before it, and takes its counters.
func (vs *versionSet) replayEdit(b *manifest.Builder, rec []byte, where recordPos) error {
	e := &manifest.VersionEdit{}
	if err := e.Decode(rec); err != nil {
		return fmt.Errorf("kv: %s: %w", where, err)
	}
	if e.ComparerName != "" && e.ComparerName != vs.d.cmp.Name {
		return fmt.Errorf("kv: invalid options: Options.Comparer %q: %s: the store was written with comparer %q, not %q, and must be opened with it",
			vs.d.cmp.Name, where, e.ComparerName, vs.d.cmp.Name)
	}
	what, n := maxEditFileNum(e)
	if err := checkFileNum(where, what, n); err != nil {
		return err
	}
	if err := b.Accumulate(e); err != nil {
		return base.CorruptionErrorf("kv: %s: %w", where, err)
	}
	vs.logNum = max(vs.logNum, e.LogNum)
	vs.markFileNumUsed(max(e.NextFileNum, 1) - 1)
	vs.lastSeq = max(vs.lastSeq, e.LastSeqNum)
	vs.recyclableLogNum = cmp.Or(e.RecyclableLogNum, vs.recyclableLogNum)
	if len(e.ClosedLogs) > 0 {
		vs.closedLogs = e.ClosedLogs
	}
	for _, nf := range e.NewFiles {
		vs.markFileNumUsed(nf.Meta.FileNum)
	}
	return nil
}

// checkFileNum reports, as corruption at where (a file, or a record's
// position, as %s prints it), a file number n (what names it) at or above
// maxFileNum.
func checkFileNum(where any, what string, n base.FileNum) error {
	if n < maxFileNum {
		return nil
	}
	return base.CorruptionErrorf("kv: %s: %s %d, past any number a store allocates (the counter would wrap around to reuse numbers)",
		where, what, uint64(n))
}

// maxEditFileNum returns the largest file number edit e names, and what
// it is. The next file number counts: the store allocates it next. Like a
// file found numbered at or above maxFileNum, one the MANIFEST names there
// would leave the counter room to wrap around to the numbers of live
// files, or have it allocate numbers the next Open refuses.
func maxEditFileNum(e *manifest.VersionEdit) (what string, n base.FileNum) {
	what, n = "next file number", e.NextFileNum
	raise := func(w string, m base.FileNum) {
		if m > n {
			what, n = w, m
		}
	}
	raise("log number", e.LogNum)
	raise("recyclable log number", e.RecyclableLogNum)
	for _, c := range e.ClosedLogs {
		raise("closed log", c.Num)
	}
	for d := range e.DeletedFiles {
		raise("deleted table", d.FileNum)
	}
	for _, nf := range e.NewFiles {
		raise("added table", nf.Meta.FileNum)
	}
	return what, n
}

// walFormat returns what the store knows of the chunk format of WAL num:
// recyclable when the MANIFEST says every WAL from a number at or below
// num on is; to be detected otherwise (a WAL of a store written before
// MANIFESTs said so, perhaps legacy).
func (vs *versionSet) walFormat(num base.FileNum) record.LogFormat {
	if vs.recyclableLogNum != 0 && num >= vs.recyclableLogNum {
		return record.RecyclableFormat
	}
	return record.DetectFormat
}

// readCurrent returns the number of the MANIFEST that CURRENT names.
func (vs *versionSet) readCurrent() (base.FileNum, error) {
	d := vs.d
	f, err := d.fs.Open(d.path(base.MakeFilename(base.FileTypeCurrent, 0)))
	if err != nil {
		return 0, fmt.Errorf("kv: opening CURRENT: %w", err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return 0, fmt.Errorf("kv: reading CURRENT: %w", err)
	}
	s, ok := strings.CutSuffix(string(buf), "\n")
	typ, num, ok2 := base.ParseFilename(s)
	if !ok || !ok2 || typ != base.FileTypeManifest {
		return 0, base.CorruptionErrorf("kv: CURRENT: offset 0: holds %q, not a MANIFEST name", buf)
	}
	return num, nil
}

// close closes the MANIFEST.
func (vs *versionSet) close() {
	if vs.manifestFile != nil {
		vs.manifestFile.Close()
		vs.manifestFile = nil
	}
}
