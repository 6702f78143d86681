package kv

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
)

// listDir returns the names in fs's "db", sorted.
func listDir(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// TestRecovery_ManifestFileNumsPastRange appends to a closed store's
// MANIFEST an edit naming a file number at or past maxFileNum, as a
// damaged or crafted MANIFEST may (RocksDB's and Pebble's tests of a next
// file number that jumps): Open refuses it as corruption naming the
// MANIFEST and the edit's offset, and leaves the files as they were. It
// once took the next file number 2^64-1, wrapped the counter around to 0
// and wrote MANIFEST-000001 and 000000.log over the numbers of the
// store's files; and took 2^63 to allocate numbers the next Open refuses.
func TestRecovery_ManifestFileNumsPastRange(t *testing.T) {
	table := func(num base.FileNum) *manifest.FileMetadata {
		return &manifest.FileMetadata{FileNum: num, Size: 100,
			Smallest: base.MakeInternalKey([]byte("x"), 1, base.KindSet),
			Largest:  base.MakeInternalKey([]byte("y"), 1, base.KindSet), SmallestSeqNum: 1, LargestSeqNum: 1}
	}
	tests := []struct {
		name string
		edit *manifest.VersionEdit
		want string
	}{
		{"next at the top", &manifest.VersionEdit{NextFileNum: math.MaxUint64}, "next file number 18446744073709551615"},
		{"next below the top", &manifest.VersionEdit{NextFileNum: math.MaxUint64 - 1}, "next file number 18446744073709551614"},
		{"next at the bound", &manifest.VersionEdit{NextFileNum: maxFileNum}, "next file number 9223372036854775808"},
		{"log number", &manifest.VersionEdit{LogNum: math.MaxUint64}, "log number 18446744073709551615"},
		{"added table", &manifest.VersionEdit{NewFiles: []manifest.NewFileEntry{{Level: 6, Meta: table(math.MaxUint64)}}},
			"added table 18446744073709551615"},
		{"closed log", &manifest.VersionEdit{ClosedLogs: []manifest.ClosedLog{{Num: maxFileNum, Size: 10}}},
			"closed log 9223372036854775808"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Options{}
			d, fs := openMem(t, o)
			must(t, d.Set([]byte("a"), []byte("1"), Sync))
			must(t, d.Flush())
			must(t, d.Set([]byte("b"), []byte("2"), Sync))
			must(t, d.Close())
			manifestPath := currentManifest(t, fs)
			off := appendRecords(t, fs, manifestPath, tt.edit.Encode())[0]
			before := listDir(t, fs)
			_, err := Open("db", o)
			requireCorruptionAt(t, err, strings.TrimPrefix(manifestPath, "db/"), off, "Open")
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "past any number a store allocates") {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
			if after := listDir(t, fs); !slices.Equal(before, after) {
				t.Fatalf("a refused Open changed the files:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// TestRecovery_ManifestNextFileNumBelowBound opens a store whose MANIFEST
// says the next file number is the last below maxFileNum: it opens, and
// the files it writes take numbers from there.
func TestRecovery_ManifestNextFileNumBelowBound(t *testing.T) {
	o := &Options{}
	d, fs := openMem(t, o)
	must(t, d.Close())
	appendRecords(t, fs, currentManifest(t, fs), (&manifest.VersionEdit{NextFileNum: maxFileNum - 1}).Encode())
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	if next := d.mu.versions.nextFile; next < maxFileNum-1 {
		t.Fatalf("next file number %d, below the MANIFEST's %d", uint64(next), uint64(maxFileNum-1))
	}
}

// TestRecovery_ManifestLastSeqNumAfterTables rewrites a closed store's
// MANIFEST so that its table comes in an edit without a last sequence
// number, and a later edit sets one below the table's seqnums: Open
// refuses it as corruption naming the MANIFEST. It once opened, with the
// table's writes above the last sequence number, unseen by every read,
// and new writes numbered below them.
func TestRecovery_ManifestLastSeqNumAfterTables(t *testing.T) {
	checkManifestSnapRewritten(t, func(snap *manifest.VersionEdit) [][]byte {
		snap.LastSeqNum = 0
		return [][]byte{snap.Encode(), (&manifest.VersionEdit{LastSeqNum: 1}).Encode()}
	}, "holding seqnum 5, above the last seqnum 1")
}

// TestRecovery_ManifestCountersMissing rewrites a closed store's MANIFEST
// without the last sequence number, or without the next file number,
// that every MANIFEST a store writes carries: a table of seqnums above
// 0, or any table, then contradicts it, and Open refuses the MANIFEST as
// corruption (as LevelDB and Pebble refuse one lacking either). Without
// a last sequence number it once opened with the table's writes unseen
// by every read.
func TestRecovery_ManifestCountersMissing(t *testing.T) {
	t.Run("last seqnum", func(t *testing.T) {
		checkManifestSnapRewritten(t, func(snap *manifest.VersionEdit) [][]byte {
			snap.LastSeqNum = 0
			return [][]byte{snap.Encode()}
		}, "no edit sets the last seqnum, and table 000004:[a#5,SET-a#5,SET] holds seqnum 5")
	})
	t.Run("next file number", func(t *testing.T) {
		checkManifestSnapRewritten(t, func(snap *manifest.VersionEdit) [][]byte {
			snap.NextFileNum = 0
			return [][]byte{snap.Encode()}
		}, "no edit sets the next file number")
	})
}

// checkManifestSnapRewritten writes 5 versions of one key into a store,
// flushes and closes it, and rewrites its MANIFEST, one edit of one
// table, as the records rewrite returns from that edit: Open must refuse
// it as corruption naming the MANIFEST and saying want, and change no
// file.
func checkManifestSnapRewritten(t *testing.T, rewrite func(snap *manifest.VersionEdit) [][]byte, want string) {
	t.Helper()
	o := &Options{}
	d, fs := openMem(t, o)
	for range 5 {
		must(t, d.Set([]byte("a"), []byte("old"), Sync))
	}
	must(t, d.Flush())
	must(t, d.Close())
	name := currentManifest(t, fs)
	edits := readManifestEdits(t, fs, name)
	if len(edits) != 1 || len(edits[0].NewFiles) != 1 || edits[0].LastSeqNum != 5 {
		t.Fatalf("want a MANIFEST of one edit, one table and last seqnum 5: %v", edits)
	}
	f, err := fs.Create(name)
	must(t, err)
	w := record.NewWriter(f)
	for _, rec := range rewrite(&edits[0]) {
		_, err := w.WriteRecord(rec)
		must(t, err)
	}
	must(t, w.Flush())
	must(t, f.Close())
	before := listDir(t, fs)
	_, err = Open("db", o)
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), strings.TrimPrefix(name, "db/")) ||
		!strings.Contains(err.Error(), want) {
		t.Fatalf("Open: %v; want corruption naming %s and saying %q", err, name, want)
	}
	if after := listDir(t, fs); !slices.Equal(before, after) {
		t.Fatalf("a refused Open changed the files:\nbefore %v\nafter  %v", before, after)
	}
}

// TestRecovery_ManifestBadEdits appends to a closed store's MANIFEST
// edits that are checksummed whole but that no store writes (after
// RocksDB's and LevelDB's version edit tests): a table at level 7, an
// unknown tag, a table whose smallest key sorts after its largest, two
// overlapping L1 tables in one edit, a table deleted twice. Open refuses
// each as corruption naming the MANIFEST, never panics, and leaves the
// files as they were.
func TestRecovery_ManifestBadEdits(t *testing.T) {
	uv := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return b
	}
	table := func(num base.FileNum, smallest, largest string) *manifest.FileMetadata {
		return &manifest.FileMetadata{FileNum: num, Size: 100,
			Smallest: base.MakeInternalKey([]byte(smallest), 1, base.KindSet),
			Largest:  base.MakeInternalKey([]byte(largest), 1, base.KindSet), SmallestSeqNum: 1, LargestSeqNum: 1}
	}
	tests := []struct {
		name string
		recs func(v *manifest.Version) [][]byte
		want string
	}{
		{"deleted at level 7", func(v *manifest.Version) [][]byte {
			return [][]byte{uv(5, 7, uint64(v.Levels[1][0].FileNum))}
		}, "level 7 out of range"},
		{"added at level 9", func(*manifest.Version) [][]byte {
			return [][]byte{uv(6, 9, 1)}
		}, "level 9 out of range"},
		{"unknown tag", func(*manifest.Version) [][]byte { return [][]byte{uv(100, 1)} }, "unknown tag 100"},
		{"inverted keys", func(*manifest.Version) [][]byte {
			return [][]byte{(&manifest.VersionEdit{NewFiles: []manifest.NewFileEntry{{Level: 2, Meta: table(2, "z", "a")}}}).Encode()}
		}, "smallest key sorts after its largest"},
		{"overlap in one edit", func(*manifest.Version) [][]byte {
			return [][]byte{(&manifest.VersionEdit{NewFiles: []manifest.NewFileEntry{
				{Level: 3, Meta: table(1, "m", "p")}, {Level: 3, Meta: table(2, "o", "r")}}}).Encode()}
		}, "overlap"},
		{"deleted twice", func(v *manifest.Version) [][]byte {
			del := (&manifest.VersionEdit{DeletedFiles: map[manifest.DeletedFileEntry]bool{{Level: 1, FileNum: v.Levels[1][0].FileNum}: true}}).Encode()
			return [][]byte{del, del}
		}, "which does not hold it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Options{DisableAutomaticCompactions: true, StaticLevels: true}
			d, fs := openCompacted(t, o)
			if len(d.mu.versions.current.Levels[1]) != 1 {
				t.Fatalf("want one L1 table:\n%s", d.Metrics())
			}
			recs := tt.recs(d.mu.versions.current)
			must(t, d.Close())
			name := currentManifest(t, fs)
			appendRecords(t, fs, name, recs...)
			before := listDir(t, fs)
			_, err := Open("db", o)
			if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), strings.TrimPrefix(name, "db/")) ||
				!strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open: %v; want corruption naming %s and saying %q", err, name, tt.want)
			}
			if after := listDir(t, fs); !slices.Equal(before, after) {
				t.Fatalf("a refused Open changed the files:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}
