package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// appendRecords continues the log file name, which must end cleanly (zeros
// may follow its last record), with recs, in the format the store writes
// it, and returns the offset of each.
func appendRecords(t *testing.T, fs vfs.FS, name string, recs ...[]byte) []int64 {
	t.Helper()
	size := logEnd(t, fs, name)
	f, err := fs.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, f)
	w := record.NewWriterAt(io.NewOffsetWriter(f, size), size)
	if typ, num, ok := base.ParseFilename(fs.PathBase(name)); ok && typ == base.FileTypeLog {
		// A WAL, written in recyclable chunks.
		w = record.NewRecyclableWriterAt(io.NewOffsetWriter(f, size), size, uint32(num))
	}
	var offs []int64
	for _, rec := range recs {
		off, err := w.WriteRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return offs
}

// logEnd returns the offset just past the last record of the log file
// name (a WAL may hold zeros past it).
func logEnd(t *testing.T, fs vfs.FS, name string) int64 {
	t.Helper()
	data := readFile(t, fs, name)
	r := record.NewReader(bytes.NewReader(data), name)
	if typ, num, ok := base.ParseFilename(fs.PathBase(name)); ok && typ == base.FileTypeLog {
		r = record.NewLogReader(bytes.NewReader(data), name, uint32(num), record.DetectFormat)
	}
	for {
		if _, err := r.Next(); err != nil {
			return r.End()
		}
	}
}

// encodedBatch returns the WAL record of a batch setting keys from seq on.
func encodedBatch(seq base.SeqNum, keys ...string) []byte {
	var b Batch
	for _, k := range keys {
		if err := b.Set([]byte(k), []byte("v-"+k)); err != nil {
			panic(err) // the test's own keys are valid
		}
	}
	b.setSeqNum(seq)
	return b.data
}

// liveWAL returns the name of the live WAL of a closed store in fs whose
// memtable holds writes since its last flush: the newest (the older ones
// are flushed WALs kept for recycling).
func liveWAL(t *testing.T, fs vfs.FS) string {
	t.Helper()
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, n := range names {
		if typ, _, ok := base.ParseFilename(n); ok && typ == base.FileTypeLog {
			logs = append(logs, n)
		}
	}
	if len(logs) == 0 {
		t.Fatal("found no WAL")
	}
	return slices.Max(logs)
}

// requireCorruptionAt checks that err wraps ErrCorruption and names the
// file and the byte offset.
func requireCorruptionAt(t *testing.T, err error, file string, off int64, what string) {
	t.Helper()
	if !errors.Is(err, ErrCorruption) {
		t.Fatalf("%s: got %v, want corruption", what, err)
	}
	if want := fmt.Sprintf("%s: offset %d", file, off); !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: error %q does not name %q", what, err, want)
	}
}

// TestRecovery_WALSeqNumsMustAscend replays WALs whose checksums are fine
// but whose batches repeat or go back in sequence number: each is
// corruption naming the WAL, the record's offset and the cause, and Open
// never panics. A live WAL copied under a new number is caught before its
// sequence numbers: its chunks carry the live WAL's number.
func TestRecovery_WALSeqNumsMustAscend(t *testing.T) {
	tests := []struct {
		name string
		// damage changes the closed store (whose WAL holds seqnums 1-3, and
		// whose tables hold 1-2 when flushed) and returns the file and
		// offset the error must name.
		flush  bool
		damage func(t *testing.T, fs vfs.FS, wal string) (string, int64)
		cause  string // what the error must say
	}{
		{"batch repeated in one WAL", false, func(t *testing.T, fs vfs.FS, wal string) (string, int64) {
			return wal, appendRecords(t, fs, "db/"+wal, encodedBatch(3, "c"))[0]
		}, "is not above"},
		{"batch going back in one WAL", false, func(t *testing.T, fs vfs.FS, wal string) (string, int64) {
			return wal, appendRecords(t, fs, "db/"+wal, encodedBatch(4, "d"), encodedBatch(2, "x", "y", "z"))[1]
		}, "is not above"},
		{"WAL copied twice", false, func(t *testing.T, fs vfs.FS, wal string) (string, int64) {
			writeFile(t, fs, "db/000900.log", readFile(t, fs, "db/"+wal))
			return "000900.log", 0
		}, "a copy of a live WAL"},
		{"WALs overlapping", false, func(t *testing.T, fs vfs.FS, wal string) (string, int64) {
			writeFile(t, fs, "db/000900.log", nil)
			return "000900.log", appendRecords(t, fs, "db/000900.log", encodedBatch(4, "d"), encodedBatch(3, "e", "f"))[1]
		}, "is not above"},
		{"batch the tables hold", true, func(t *testing.T, fs vfs.FS, wal string) (string, int64) {
			return wal, appendRecords(t, fs, "db/"+wal, encodedBatch(2, "b"))[0]
		}, "is not above"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Options{}
			d, fs := openMem(t, o)
			must(t, d.Set([]byte("a"), []byte("1"), Sync))
			must(t, d.Set([]byte("b"), []byte("2"), Sync))
			if tt.flush {
				must(t, d.Flush())
			}
			must(t, d.Set([]byte("c"), []byte("3"), Sync))
			must(t, d.Close())
			file, off := tt.damage(t, fs, liveWAL(t, fs))
			_, err := Open("db", o)
			requireCorruptionAt(t, err, file, off, "Open")
			if !strings.Contains(err.Error(), tt.cause) {
				t.Fatalf("error %q does not say %q", err, tt.cause)
			}
		})
	}
}

// TestRecovery_ManifestContradictions appends edits whose checksums are
// fine but which contradict the MANIFEST before them: each is corruption
// naming the MANIFEST and the edit's offset.
func TestRecovery_ManifestContradictions(t *testing.T) {
	table := func(num base.FileNum, smallest, largest string, seq base.SeqNum) *manifest.FileMetadata {
		return &manifest.FileMetadata{FileNum: num, Size: 100,
			Smallest: base.MakeInternalKey([]byte(smallest), seq, base.KindSet),
			Largest:  base.MakeInternalKey([]byte(largest), seq, base.KindSet), SmallestSeqNum: seq, LargestSeqNum: seq}
	}
	tests := []struct {
		name string
		edit func(v *manifest.Version, next base.FileNum) *manifest.VersionEdit
		want string
	}{
		{"table added twice", func(v *manifest.Version, _ base.FileNum) *manifest.VersionEdit {
			return &manifest.VersionEdit{NewFiles: []manifest.NewFileEntry{{Level: 3, Meta: v.Levels[1][0]}}}
		}, "already present at L1"},
		{"deleting an absent table", func(v *manifest.Version, _ base.FileNum) *manifest.VersionEdit {
			return &manifest.VersionEdit{DeletedFiles: map[manifest.DeletedFileEntry]bool{{Level: 2, FileNum: v.Levels[1][0].FileNum}: true}}
		}, "which does not hold it"},
		{"file number at next", func(_ *manifest.Version, next base.FileNum) *manifest.VersionEdit {
			return &manifest.VersionEdit{NewFiles: []manifest.NewFileEntry{{Level: 0, Meta: table(next, "x", "y", 1)}}}
		}, "not below the next file number"},
		{"log number at next", func(_ *manifest.Version, next base.FileNum) *manifest.VersionEdit {
			return &manifest.VersionEdit{LogNum: next + 5}
		}, "not below the next file number"},
		{"seqnum above last", func(v *manifest.Version, _ base.FileNum) *manifest.VersionEdit {
			return &manifest.VersionEdit{NewFiles: []manifest.NewFileEntry{{Level: 0, Meta: table(v.Levels[1][0].FileNum-1, "x", "y", 1000)}}}
		}, "above the last seqnum"},
		{"overlap in L1", func(v *manifest.Version, _ base.FileNum) *manifest.VersionEdit {
			f := v.Levels[1][0]
			return &manifest.VersionEdit{NewFiles: []manifest.NewFileEntry{{Level: 1, Meta: table(f.FileNum-1, string(f.Largest.UserKey), "zz", 1)}}}
		}, "overlap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Options{DisableAutomaticCompactions: true, StaticLevels: true}
			d, fs := openCompacted(t, o)
			v := d.mu.versions.current
			if next := d.mu.versions.nextFile; len(v.Levels[1]) != 1 || v.Levels[1][0].FileNum != next-1 {
				// The edits name the number below it as one no table uses.
				t.Fatalf("want one L1 table numbered %s:\n%s", next-1, d.Metrics())
			}
			must(t, d.Close())
			manifestPath := currentManifest(t, fs)
			off := appendRecords(t, fs, manifestPath, tt.edit(v, manifestNextFileNum(t, fs, manifestPath)).Encode())[0]
			_, err := Open("db", o)
			if tt.name == "overlap in L1" {
				// The edit is sound on its own; the version it makes is not.
				if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), fmt.Sprintf("the last at offset %d", off)) {
					t.Fatalf("Open: %v", err)
				}
			} else {
				requireCorruptionAt(t, err, strings.TrimPrefix(manifestPath, "db/"), off, "Open")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

// TestRecovery_NewerTableFormat reads a table whose footer names a format
// version this build does not know: the error wraps ErrNewerFormat, not
// ErrCorruption.
func TestRecovery_NewerTableFormat(t *testing.T) {
	o := &Options{}
	d, fs := openMem(t, o)
	must(t, d.Set([]byte("a"), []byte("1"), Sync))
	must(t, d.Flush())
	name := "db/" + base.MakeFilename(base.FileTypeTable, d.mu.versions.current.Levels[0][0].FileNum)
	must(t, d.Close())
	data := readFile(t, fs, name)
	footer := data[len(data)-56:]
	binary.LittleEndian.PutUint32(footer[40:], sstable.FormatVersion+1)
	binary.LittleEndian.PutUint32(footer[44:], uint32(xxhash.Sum64(footer[:44])))
	writeFile(t, fs, name, data)
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	_, err = d.Get([]byte("a"))
	if !errors.Is(err, ErrNewerFormat) || errors.Is(err, ErrCorruption) {
		t.Fatalf("Get from a table of a newer format: %v", err)
	}
}

// TestRecovery_TableContradictsManifest moves a table to a key range it
// does not hold, by a MANIFEST edit that is sound on its own: reads of the
// table report corruption instead of trusting the wrong range.
func TestRecovery_TableContradictsManifest(t *testing.T) {
	o := &Options{DisableAutomaticCompactions: true, StaticLevels: true}
	d, fs := openCompacted(t, o)
	f := d.mu.versions.current.Levels[1][0]
	moved := &manifest.FileMetadata{FileNum: f.FileNum, Size: f.Size, Smallest: f.Smallest,
		Largest:        base.MakeInternalKey([]byte("k2"), f.Largest.SeqNum(), f.Largest.Kind()),
		SmallestSeqNum: f.SmallestSeqNum, LargestSeqNum: f.LargestSeqNum, NumEntries: f.NumEntries, FilterBytes: f.FilterBytes}
	must(t, d.Close())
	appendRecords(t, fs, currentManifest(t, fs), (&manifest.VersionEdit{
		DeletedFiles: map[manifest.DeletedFileEntry]bool{{Level: 1, FileNum: f.FileNum}: true},
		NewFiles:     []manifest.NewFileEntry{{Level: 1, Meta: moved}},
	}).Encode())
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	name := base.MakeFilename(base.FileTypeTable, f.FileNum)
	if _, err := d.Get([]byte("k1")); !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Get from a table the MANIFEST misdescribes: %v", err)
	}
	if _, err := iterAll(d); !errors.Is(err, ErrCorruption) {
		t.Fatalf("iterating a table the MANIFEST misdescribes: %v", err)
	}
}

// TestRecovery_SeqNumsExhausted replays a WAL whose batch claims the last
// sequence numbers: the store reads, and refuses writes it could not
// number, instead of wrapping around.
func TestRecovery_SeqNumsExhausted(t *testing.T) {
	o := &Options{}
	d, fs := openMem(t, o)
	must(t, d.Close())
	appendRecords(t, fs, "db/"+liveWAL(t, fs), encodedBatch(base.SeqNumMax-1, "a", "b"))
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	mustGet(t, d, "b", "v-b")
	if err := d.Set([]byte("c"), []byte("1"), Sync); !errors.Is(err, errSeqNumsExhausted) {
		t.Fatalf("Set past the last sequence number: %v", err)
	}
	mustNotFind(t, d, "c")
}

// openCompacted opens a store in memory under o holding k0..k4 (value
// "v"), compacted into one L1 table.
func openCompacted(t *testing.T, o *Options) (*DB, vfs.FS) {
	t.Helper()
	d, fs := openMem(t, o)
	for i := range 5 {
		if err := d.Set(fmt.Appendf(nil, "k%d", i), []byte("v"), Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	return d, fs
}

// TestRecovery_LostCurrent: a store whose CURRENT is lost, with its
// tables or a MANIFEST that records them, is refused with an error
// wrapping ErrCorruption that names such a file, and keeps every file:
// opened as new, it would start without its tables and delete them. A
// directory holding only what a first Open that crashed before writing
// CURRENT leaves (an empty WAL, a MANIFEST of an empty store) opens as a
// new store, and so does one of WALs alone, whose writes the new store
// replays.
func TestRecovery_LostCurrent(t *testing.T) {
	current := base.MakeFilename(base.FileTypeCurrent, 0)
	// lose removes CURRENT from the store of openCompacted, with one
	// write more in its WAL, and every file but the LOCK and those of
	// type keep; it returns the files left.
	lose := func(t *testing.T, keep base.FileType) (vfs.FS, []string) {
		d, fs := openCompacted(t, &Options{})
		must(t, d.Set([]byte("in-wal"), []byte("v"), Sync))
		must(t, d.Close())
		must(t, fs.Remove(fs.PathJoin("db", current)))
		names, err := fs.List("db")
		must(t, err)
		var kept []string
		for _, name := range names {
			if typ, _, ok := base.ParseFilename(name); ok && typ != keep && typ != base.FileTypeLock {
				must(t, fs.Remove(fs.PathJoin("db", name)))
			} else {
				kept = append(kept, name)
			}
		}
		slices.Sort(kept)
		return fs, kept
	}
	for _, tc := range []struct {
		name string
		keep base.FileType
	}{{"tables", base.FileTypeTable}, {"manifest", base.FileTypeManifest}} {
		keep := tc.keep
		t.Run(tc.name, func(t *testing.T) {
			fs, kept := lose(t, keep)
			_, err := Open("db", &Options{FS: fs})
			if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "CURRENT is lost") {
				t.Fatalf("Open without CURRENT: %v, want corruption saying CURRENT is lost", err)
			}
			named := false
			for _, name := range kept {
				if typ, _, _ := base.ParseFilename(name); typ == keep && strings.Contains(err.Error(), name) {
					named = true
				}
			}
			if !named {
				t.Fatalf("Open without CURRENT: %v, want it to name one of %v", err, kept)
			}
			after, err := fs.List("db")
			must(t, err)
			slices.Sort(after)
			if !slices.Equal(after, kept) {
				t.Fatalf("files after the refused Open: %v, want %v", after, kept)
			}
		})
	}
	t.Run("wals", func(t *testing.T) {
		fs, _ := lose(t, base.FileTypeLog)
		d, err := Open("db", &Options{FS: fs})
		if err != nil {
			t.Fatalf("Open of WALs alone: %v", err)
		}
		defer d.Close()
		if got, err := d.Get([]byte("in-wal")); err != nil || string(got) != "v" {
			t.Fatalf("the WAL's write after Open: %q, %v", got, err)
		}
	})
	t.Run("crashed-create", func(t *testing.T) {
		d, fs := openMem(t, &Options{})
		must(t, d.Close())
		must(t, fs.Remove(fs.PathJoin("db", current)))
		d, err := Open("db", &Options{FS: fs})
		if err != nil {
			t.Fatalf("Open of a store whose creation stopped before CURRENT: %v", err)
		}
		must(t, d.Set([]byte("k"), []byte("v"), Sync))
		must(t, d.Close())
	})
}

// TestRecovery_UnsealedWALBeforeWrites: a WAL is sealed and synced before
// the next one takes a write, so a live WAL that lacks its seal while a
// later one holds records was cut short or damaged, not left by a crash:
// Open refuses it with corruption naming that WAL, rather than replay the
// later WAL's writes over the ones lost. Intact, the same files open, with
// every write. Where the MANIFEST records the WAL's length (Close does,
// see TestRecovery_ClosedWALCut), that finds the cut first; without it
// (a WAL sealed at a memtable's rotation, or by an older version), the
// missing seal does.
func TestRecovery_UnsealedWALBeforeWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(offs []int64) int64 // where the live WAL is cut, given its records' offsets
	}{
		{"intact", nil},
		{"seal cut off", func(offs []int64) int64 { return offs[len(offs)-1] }},
		{"last batch cut short", func(offs []int64) int64 { return offs[len(offs)-2] + 5 }},
		{"cut to its first batch", func(offs []int64) int64 { return offs[1] }},
	} {
		for _, recorded := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/length-recorded=%v", tc.name, recorded), func(t *testing.T) {
				testUnsealedWALBeforeWrites(t, tc.cut, recorded)
			})
		}
	}
}

func testUnsealedWALBeforeWrites(t *testing.T, cut func(offs []int64) int64, recorded bool) {
	d, fs := openMem(t, &Options{})
	for _, k := range []string{"a", "b", "c"} {
		must(t, d.Set([]byte(k), []byte("v-"+k), Sync))
	}
	must(t, d.Close())
	if !recorded {
		forgetClosedLog(t, fs)
	}
	wal := liveWAL(t, fs)
	data := readFile(t, fs, "db/"+wal)
	_, num, _ := base.ParseFilename(wal)
	r := record.NewLogReader(bytes.NewReader(data), wal, uint32(num), record.DetectFormat)
	var offs []int64
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		offs = append(offs, r.Offset())
		if isSeal(rec) && len(offs) != 4 {
			t.Fatalf("WAL %s: a seal at record %d, want it after the three writes", wal, len(offs))
		}
	}
	if len(offs) != 4 {
		t.Fatalf("WAL %s holds %d records, want three writes and a seal", wal, len(offs))
	}
	writeFile(t, fs, "db/000900.log", nil)
	appendRecords(t, fs, "db/000900.log", encodedBatch(4, "d"))
	if cut == nil {
		d, err := Open("db", &Options{FS: fs})
		must(t, err)
		defer d.Close()
		for _, k := range []string{"a", "b", "c", "d"} {
			if got, err := d.Get([]byte(k)); err != nil || string(got) != "v-"+k {
				t.Fatalf("Get(%q) = %q, %v", k, got, err)
			}
		}
		return
	}
	writeFile(t, fs, "db/"+wal, data[:cut(offs)])
	_, err := Open("db", &Options{FS: fs})
	why := "lacks its seal"
	if recorded && cut(offs) < offs[len(offs)-1] {
		why = "Close sealed and synced it"
	}
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), wal+": offset") ||
		!strings.Contains(err.Error(), why) {
		t.Fatalf("Open with %s cut and a later WAL written: %v, want corruption naming %s: %q", wal, err, wal, why)
	}
}

// forgetClosedLog rewrites the MANIFEST of the store in fs's "db", which
// Close left as one edit, without the lengths of the WALs that Close
// recorded in it: the store is then as an older version, or a crash just
// after the WAL's close, leaves it.
func forgetClosedLog(t *testing.T, fs vfs.FS) {
	t.Helper()
	name := currentManifest(t, fs)
	edits := readManifestEdits(t, fs, name)
	if len(edits) != 1 || len(edits[0].ClosedLogs) == 0 {
		t.Fatalf("%s: %d edits, want one recording the WAL Close sealed: %+v", name, len(edits), edits)
	}
	edits[0].ClosedLogs = nil
	f, err := fs.Create(name)
	must(t, err)
	_, err = writeEdit(record.NewWriter(f), f, &edits[0])
	must(t, err)
	must(t, f.Close())
}

// TestRecovery_LogNumWALMissing: the WAL the MANIFEST's log number names
// is there from before the MANIFEST names it until the log number passes
// it, so a store without it lost it, and the writes it may hold: Open
// refuses it with corruption naming the WAL, rather than open without
// them. With the WAL there, the store opens with every write.
func TestRecovery_LogNumWALMissing(t *testing.T) {
	for _, remove := range []bool{false, true} {
		t.Run(fmt.Sprintf("removed=%v", remove), func(t *testing.T) {
			d, fs := openCompacted(t, &Options{})
			must(t, d.Set([]byte("in-wal"), []byte("v"), Sync))
			must(t, d.Close())
			wal := liveWAL(t, fs)
			if remove {
				must(t, fs.Remove("db/"+wal))
			}
			d, err := Open("db", &Options{FS: fs})
			if remove {
				if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "WAL "+wal) {
					t.Fatalf("Open without WAL %s: %v, want corruption naming it", wal, err)
				}
				return
			}
			must(t, err)
			defer d.Close()
			if got, err := d.Get([]byte("in-wal")); err != nil || string(got) != "v" {
				t.Fatalf("Get(in-wal) = %q, %v", got, err)
			}
		})
	}
}

// TestRecovery_FlushErrorNamesWAL: when Open writes replayed writes to a
// table and that fails, the error names the WAL they came from.
func TestRecovery_FlushErrorNamesWAL(t *testing.T) {
	mem := vfs.NewMem()
	d, err := Open("db", &Options{FS: mem, MemTableSize: 1 << 20})
	must(t, err)
	for i := range 200 {
		must(t, d.Set(fmt.Appendf(nil, "k%04d", i), bytes.Repeat([]byte("v"), 100), NoSync))
	}
	wal := base.MakeFilename(base.FileTypeLog, d.commit.log.num)
	must(t, d.Close())
	failTables := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpCreate && strings.HasSuffix(path, ".sst") {
			return errorfs.ErrInjected
		}
		return nil
	})
	// A memtable smaller than the WAL's writes: the replay writes tables.
	_, err = Open("db", &Options{FS: errorfs.Wrap(mem, failTables), MemTableSize: 4 << 10})
	if !errors.Is(err, errorfs.ErrInjected) || !strings.Contains(err.Error(), "WAL "+strings.TrimSuffix(wal, ".log")) {
		t.Fatalf("Open failing to write a table of replayed writes: %v, want the injected error naming WAL %s", err, wal)
	}
}

// TestRecovery_ClosedWALCut: Close records in the MANIFEST the length of
// the WAL it sealed and synced, so the WAL of a closed store cut anywhere
// before its seal is corruption naming it, where it would read as a torn
// tail and lose synced writes; so is that WAL deleted. A refused Open
// changes no file. Cut within its seal, it loses nothing and opens. Once
// a later Open continues the WAL, a crash may tear what it appended.
func TestRecovery_ClosedWALCut(t *testing.T) {
	const keys = 20
	fs := vfs.NewStrictMem()
	d, err := Open("db", &Options{FS: fs})
	must(t, err)
	for i := range keys {
		must(t, d.Set([]byte(fmt.Sprintf("k%02d", i)), bytes.Repeat([]byte{byte(i)}, 40), NoSync))
	}
	wal := "db/" + d.commit.log.name
	must(t, d.Close())
	data := readFile(t, fs, wal)
	end := logEnd(t, fs, wal)
	sealAt := end - walSealSize
	manifestName := currentManifest(t, fs)
	manifestData := readFile(t, fs, manifestName)

	checkAll := func(d *DB) {
		t.Helper()
		for i := range keys {
			if v, err := d.Get([]byte(fmt.Sprintf("k%02d", i))); err != nil || !bytes.Equal(v, bytes.Repeat([]byte{byte(i)}, 40)) {
				t.Fatalf("k%02d: %x, %v", i, v, err)
			}
		}
	}
	refused := 0
	for cut := int64(0); cut <= end; cut++ {
		cfs := cloneStore(t, fs)
		writeFile(t, cfs, wal, data[:cut])
		d, err := Open("db", &Options{FS: cfs})
		if cut >= sealAt {
			if err != nil {
				t.Fatalf("WAL cut at %d, within its seal (%d-%d): %v", cut, sealAt, end, err)
			}
			checkAll(d)
			must(t, d.Close())
			continue
		}
		if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "Close sealed and synced it") {
			t.Fatalf("WAL cut at %d of %d: Open: %v, want corruption", cut, end, err)
		}
		refused++
		if got := readFile(t, cfs, wal); !bytes.Equal(got, data[:cut]) {
			t.Fatalf("WAL cut at %d: the refused Open changed it", cut)
		}
		if got := readFile(t, cfs, manifestName); !bytes.Equal(got, manifestData) {
			t.Fatalf("WAL cut at %d: the refused Open changed the MANIFEST", cut)
		}
	}
	if refused != int(sealAt) {
		t.Fatalf("%d cuts refused, want %d", refused, sealAt)
	}

	cfs := cloneStore(t, fs)
	must(t, cfs.Remove(wal))
	if _, err := Open("db", &Options{FS: cfs}); !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "is missing") {
		t.Fatalf("Open without the closed WAL: %v, want corruption", err)
	}

	// Continued by the next Open, closed without a write: no new edit.
	d, err = Open("db", &Options{FS: fs})
	must(t, err)
	if "db/"+d.commit.log.name != wal {
		t.Fatalf("Open writes to %s, want the closed WAL %s continued", d.commit.log.name, wal)
	}
	manifestName = currentManifest(t, fs)
	manifestData = readFile(t, fs, manifestName)
	must(t, d.Close())
	if got := readFile(t, fs, manifestName); !bytes.Equal(got, manifestData) {
		t.Fatalf("a Close without writes changed the MANIFEST: %d bytes, were %d", len(got), len(manifestData))
	}

	// Continued, then a crash tears what that Open appended.
	d, err = Open("db", &Options{FS: fs})
	must(t, err)
	must(t, d.Set([]byte("late"), bytes.Repeat([]byte("x"), 100), Sync))
	fs.SetIgnoreSyncs(true)
	must(t, d.Close())
	fs.ResetToSyncedState()
	fs.SetIgnoreSyncs(false)
	truncateFile(t, fs, wal, 10)
	d, err = Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatalf("Open after a crash tore a record appended to the closed WAL: %v", err)
	}
	defer mustClose(t, d)
	checkAll(d)
	mustNotFind(t, d, "late")
}

// readManifestEdits returns the edits of the MANIFEST name in fs, its
// seals left out.
func readManifestEdits(t *testing.T, fs vfs.FS, name string) []manifest.VersionEdit {
	t.Helper()
	r := record.NewReader(bytes.NewReader(readFile(t, fs, name)), name)
	var edits []manifest.VersionEdit
	for rec, err := r.Next(); err == nil; rec, err = r.Next() {
		if len(rec) > 0 {
			var e manifest.VersionEdit
			must(t, e.Decode(rec))
			edits = append(edits, e)
		}
	}
	return edits
}

// manifestNextFileNum returns the next file number that the MANIFEST
// name in fs records last.
func manifestNextFileNum(t *testing.T, fs vfs.FS, name string) base.FileNum {
	t.Helper()
	var next base.FileNum
	for _, e := range readManifestEdits(t, fs, name) {
		next = max(next, e.NextFileNum)
	}
	if next == 0 {
		t.Fatalf("%s records no next file number", name)
	}
	return next
}

// currentManifest returns the path of the MANIFEST that CURRENT names in
// the store in fs's "db".
func currentManifest(t *testing.T, fs vfs.FS) string {
	t.Helper()
	return "db/" + strings.TrimSpace(string(readFile(t, fs, "db/CURRENT")))
}

// TestRecovery_ClosedManifestCut: Close leaves a MANIFEST of one edit,
// the whole Version, so a closed store's MANIFEST cut anywhere before its
// seal holds no edit and is corruption, where a MANIFEST of many edits
// cut between two would read as a torn tail: Open would take the older
// Version and delete the tables of the edits cut off, as a crash's
// leftovers. A refused Open keeps every file. Cut within the seal, it
// loses nothing and opens.
func TestRecovery_ClosedManifestCut(t *testing.T) {
	o := &Options{DisableAutomaticCompactions: true}
	d, fs := openCompacted(t, o)
	for i := range 5 {
		must(t, d.Set(fmt.Appendf(nil, "f%d", i), []byte("v"), Sync))
		must(t, d.Flush())
	}
	if n := len(d.mu.versions.current.Levels[0]); n != 5 {
		t.Fatalf("%d L0 tables, want 5", n)
	}
	if d.mu.versions.edits == 0 {
		t.Fatal("the MANIFEST holds no edit after its snapshot: the test would cut nothing Close rewrote")
	}
	must(t, d.Close())
	name := currentManifest(t, fs)
	data := readFile(t, fs, name)
	sealAt := int64(len(data)) - 7 // a legacy chunk header, no payload
	files, err := fs.List("db")
	must(t, err)
	slices.Sort(files)

	refused := 0
	for cut := int64(0); cut <= int64(len(data)); cut++ {
		cfs := cloneStore(t, fs)
		writeFile(t, cfs, name, data[:cut])
		d, err := Open("db", &Options{FS: cfs, DisableAutomaticCompactions: true})
		if cut >= sealAt {
			if err != nil {
				t.Fatalf("MANIFEST cut at %d, within its seal (%d-%d): %v", cut, sealAt, len(data), err)
			}
			for _, k := range []string{"k0", "k4", "f0", "f4"} {
				mustGet(t, d, k, "v")
			}
			must(t, d.Close())
			continue
		}
		if !errors.Is(err, ErrCorruption) {
			t.Fatalf("MANIFEST cut at %d of %d: Open: %v, want corruption", cut, len(data), err)
		}
		refused++
		after, err := cfs.List("db")
		must(t, err)
		slices.Sort(after)
		if !slices.Equal(after, files) {
			t.Fatalf("MANIFEST cut at %d: the refused Open left %v, want %v", cut, after, files)
		}
	}
	if refused != int(sealAt) {
		t.Fatalf("%d cuts refused, want %d", refused, sealAt)
	}
}

// TestRecovery_ClosedWALMissing: the WAL that Close sealed is refused
// missing even when an older WAL is live before it, which the log
// number's check finds present. The older one is a WAL that the next
// Open could not continue (a byte past its seal), so it wrote a new one.
func TestRecovery_ClosedWALMissing(t *testing.T) {
	o := &Options{}
	d, fs := openMem(t, o)
	must(t, d.Set([]byte("a"), []byte("1"), Sync))
	older := "db/" + d.commit.log.name
	must(t, d.Close())
	writeFile(t, fs, older, append(readFile(t, fs, older), 0x01))

	d, err := Open("db", o)
	must(t, err)
	closed := "db/" + d.commit.log.name
	if closed == older {
		t.Fatalf("Open continued %s, whose records are followed by a stray byte", older)
	}
	must(t, d.Set([]byte("b"), []byte("2"), Sync))
	must(t, d.Close())

	cfs := cloneStore(t, fs)
	must(t, cfs.Remove(closed))
	if _, err := Open("db", &Options{FS: cfs}); !errors.Is(err, ErrCorruption) ||
		!strings.Contains(err.Error(), "which Close sealed and synced") || !strings.Contains(err.Error(), "is missing") {
		t.Fatalf("Open without %s, behind %s: %v, want corruption naming it missing", closed, older, err)
	}
	d, err = Open("db", o)
	must(t, err)
	defer mustClose(t, d)
	mustGet(t, d, "a", "1")
	mustGet(t, d, "b", "2")
}

// TestRecovery_ClosedWALsAllRecorded: Close records the length of every
// WAL it leaves live, not only the one it sealed last: those of the
// memtables waiting for a flush (a store's first, small memtables wait
// for each other), sealed at their rotation, and, after a reopen, those
// the recovered memtable was replayed from. Any of them missing, or cut
// before its seal, is corruption naming it, where a WAL among others
// missing, or cut with only empty WALs after it, would lose synced
// writes without a word. A refused Open changes no file; a WAL cut
// within its seal loses nothing and opens.
func TestRecovery_ClosedWALsAllRecorded(t *testing.T) {
	o := &Options{MemTableSize: 4 << 20}
	d, fs := openMem(t, o)
	var n int
	for range 3 {
		fillMemTable(t, d, &n)
	}
	must(t, d.Set([]byte("last"), []byte("v"), Sync))
	d.mu.Lock()
	imm := len(d.mu.imm)
	d.mu.Unlock()
	if imm != 3 {
		t.Fatalf("%d memtables wait for a flush, want the 3 ramp memtables", imm)
	}
	checkAll := func(d *DB) {
		t.Helper()
		for i := 1; i <= n; i++ {
			if _, err := d.Get(evenKey(i)); err != nil {
				t.Fatalf("Get(%s): %v", evenKey(i), err)
			}
		}
		mustGet(t, d, "last", "v")
	}
	must(t, d.Close())
	checkRecorded(t, fs, 4, checkAll)

	// Reopened, the WALs are replayed into one memtable that keeps them
	// and continues the last: Close records the replayed ones' lengths.
	d, err := Open("db", o)
	must(t, err)
	must(t, d.Set([]byte("later"), []byte("v"), Sync))
	must(t, d.Close())
	checkRecorded(t, fs, 4, func(d *DB) {
		t.Helper()
		checkAll(d)
		mustGet(t, d, "later", "v")
	})
}

// checkRecorded checks that the closed store in fs's "db" records wals
// WALs, each with the length of its records, and that Open refuses each
// of them missing or cut before its seal, changing no file, and opens the
// last cut within its seal, the store then passing check (the others'
// seals come before records in later WALs).
func checkRecorded(t *testing.T, fs vfs.FS, wals int, check func(*DB)) {
	t.Helper()
	edits := readManifestEdits(t, fs, currentManifest(t, fs))
	if len(edits) != 1 || len(edits[0].ClosedLogs) != wals {
		t.Fatalf("the closed store's MANIFEST: %d edits, want one recording %d WALs: %v", len(edits), wals, edits)
	}
	files, err := fs.List("db")
	must(t, err)
	slices.Sort(files)
	for i, c := range edits[0].ClosedLogs {
		name := "db/" + base.MakeFilename(base.FileTypeLog, c.Num)
		if end := logEnd(t, fs, name); end != c.Size {
			t.Fatalf("%s: %d bytes of records, recorded %d", name, end, c.Size)
		}
		refused := func(cfs vfs.FS, want, how string) {
			t.Helper()
			_, err := Open("db", &Options{FS: cfs})
			if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), base.MakeFilename(base.FileTypeLog, c.Num)) ||
				!strings.Contains(err.Error(), want) {
				t.Fatalf("Open with %s %s: %v, want corruption naming it", name, how, err)
			}
			after, err := cfs.List("db")
			must(t, err)
			slices.Sort(after)
			if how != "missing" && !slices.Equal(after, files) {
				t.Fatalf("the refused Open with %s %s left %v, want %v", name, how, after, files)
			}
		}
		cfs := cloneStore(t, fs)
		must(t, cfs.Remove(name))
		refused(cfs, "is missing", "missing")
		data := readFile(t, fs, name)
		for _, cut := range []int64{0, c.Size / 2, c.Size - walSealSize - 1} {
			cfs := cloneStore(t, fs)
			writeFile(t, cfs, name, data[:cut])
			refused(cfs, "Close sealed and synced it", fmt.Sprintf("cut at %d of %d", cut, c.Size))
		}
		cfs = cloneStore(t, fs)
		writeFile(t, cfs, name, data[:c.Size-walSealSize])
		if i < len(edits[0].ClosedLogs)-1 {
			// Records follow in a later WAL: the seal was synced before
			// they were written.
			refused(cfs, "lacks its seal", "cut within its seal, before another WAL's records")
			continue
		}
		d, err := Open("db", &Options{FS: cfs})
		if err != nil {
			t.Fatalf("Open with %s cut within its seal: %v", name, err)
		}
		check(d)
		must(t, d.Close())
	}
}

// TestRecovery_CrashedWALMissing: a WAL's seal holds the last sequence
// number assigned when it was written, and so does the mark that starts
// the WAL after it, so a WAL missing between two others is corruption in
// a crashed store too, where no Close recorded the WALs: the replay would
// otherwise go on to the next WAL and drop the missing one's writes
// without a word. (The first WAL missing is the log number's, refused
// already.) The store whole opens with every synced write.
func TestRecovery_CrashedWALMissing(t *testing.T) {
	fs := vfs.NewStrictMem()
	o := &Options{FS: fs, MemTableSize: 4 << 20}
	d, err := Open("db", o)
	must(t, err)
	var n int
	for range 3 {
		fillMemTable(t, d, &n)
	}
	d.mu.Lock()
	var wals []string
	for _, m := range d.mu.imm {
		wals = append(wals, "db/"+base.MakeFilename(base.FileTypeLog, m.logs[0].num))
	}
	d.mu.Unlock()
	if len(wals) != 3 {
		t.Fatalf("%d memtables wait for a flush, want the 3 ramp memtables", len(wals))
	}
	// A synced write in the last WAL: a WAL missing with only empty WALs
	// after it has no batch to give it away.
	must(t, d.Set([]byte("last"), []byte("v"), Sync))
	fs.SetIgnoreSyncs(true)
	must(t, d.Close())
	fs.ResetToSyncedState()
	fs.SetIgnoreSyncs(false)

	for i, missing := range wals {
		cfs := cloneStore(t, fs)
		must(t, cfs.Remove(missing))
		_, err := Open("db", &Options{FS: cfs, MemTableSize: 4 << 20})
		why := "the WAL between them is missing"
		if i == 0 {
			why = "the first whose writes the MANIFEST says are not in tables, is missing" // the log number's
		}
		if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), why) {
			t.Fatalf("Open of the crashed store without %s: %v, want corruption: %q", missing, err, why)
		}
	}
	d, err = Open("db", o)
	must(t, err)
	defer mustClose(t, d)
	for i := 1; i <= n; i++ {
		if _, err := d.Get(evenKey(i)); err != nil {
			t.Fatalf("Get(%s), written before the last rotation: %v", evenKey(i), err)
		}
	}
	mustGet(t, d, "last", "v")
}

// TestRecovery_CrashedWALCut: a WAL that a memtable switch sealed and
// synced, cut short, emptied or missing in a crashed store, is
// corruption, though the WAL after it holds nothing but the mark of the
// switch: without the mark that WAL's end reads as a crash's torn tail,
// and its writes were lost without a word. The copy whole opens with
// every write.
func TestRecovery_CrashedWALCut(t *testing.T) {
	fs := vfs.NewStrictMem()
	d, err := Open("db", &Options{FS: fs, MemTableSize: 4 << 20})
	must(t, err)
	defer mustClose(t, d)
	// Two memtables of 100 writes, each switched from by hand: the WAL
	// of the third holds the mark alone. The two wait for a flush
	// together, until they add up to half of MemTableSize.
	value := make([]byte, 1<<10)
	var nums []base.FileNum
	for m := range 2 {
		for i := range 100 {
			must(t, d.Set(evenKey(100*m+i), value, NoSync))
		}
		d.mu.Lock()
		nums = append(nums, d.mu.mem.logNum())
		d.mu.Unlock()
		must(t, d.commit.runExclusive(func() error {
			d.mu.Lock()
			defer d.mu.Unlock()
			return d.rotateMemTableLocked()
		}))
	}
	d.mu.Lock()
	imm, last := len(d.mu.imm), d.mu.mem.logNum()
	d.mu.Unlock()
	if imm != 2 {
		t.Fatalf("%d memtables wait for a flush, want 2", imm)
	}
	// A crash of the process: the files as they are, synced or not.
	crashed := cloneStore(t, fs)
	if marked := walRecords(t, crashed, last); len(marked) != 1 {
		t.Fatalf("WAL %s holds %d records, want the mark of the switch alone", last, len(marked))
	}

	wal := "db/" + base.MakeFilename(base.FileTypeLog, nums[1])
	_, ends := walRecordEnds(t, crashed, nums[1])
	for _, c := range []struct {
		name string
		cut  func(fs vfs.FS)
		why  string
	}{
		{"cut within its records", func(fs vfs.FS) { cutTo(t, fs, wal, ends[len(ends)/2]) }, "which lacks its seal"},
		{"cut before its seal", func(fs vfs.FS) { cutTo(t, fs, wal, ends[len(ends)-2]) }, "which lacks its seal"},
		{"emptied", func(fs vfs.FS) { cutTo(t, fs, wal, 0) }, "holds no record"},
		{"missing", func(fs vfs.FS) { must(t, fs.Remove(wal)) }, "the WAL between them is missing"},
	} {
		cfs := cloneStore(t, crashed)
		c.cut(cfs)
		_, err := Open("db", &Options{FS: cfs, MemTableSize: 4 << 20})
		if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), c.why) {
			t.Fatalf("Open of the crashed store with %s %s: %v, want corruption: %q", wal, c.name, err, c.why)
		}
	}
	c, err := Open("db", &Options{FS: cloneStore(t, crashed), MemTableSize: 4 << 20})
	must(t, err)
	defer mustClose(t, c)
	for i := range 200 {
		mustGet(t, c, string(evenKey(i)), string(value))
	}
}

// cutTo cuts file name of fs to its first n bytes.
func cutTo(t *testing.T, fs vfs.FS, name string, n int64) {
	t.Helper()
	writeFile(t, fs, name, readFile(t, fs, name)[:n])
}
