package kv

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestWALFormat_LegacyStore: the golden WALs, legacy, from a store whose
// MANIFEST says nothing of their format, are read, continued in their
// format, and read again after reopens; the MANIFEST then records that
// WALs are recyclable from the first this store writes so.
func TestWALFormat_LegacyStore(t *testing.T) {
	wals, model := goldenWALs(t)
	fs := vfs.NewMem()
	fs.MkdirAll("db", 0o755)
	for i, name := range goldenWALNames {
		writeFile(t, fs, "db/"+name, wals[i])
	}
	o := &Options{FS: fs}
	for round := range 3 {
		d, err := Open("db", o)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if got, want := d.mu.versions.recyclableLogNum, d.commit.log.num+1; got != want {
			t.Fatalf("round %d: WALs recyclable from %s, want %s (the legacy WAL %s is continued)", round, got, want, d.commit.log.num)
		}
		if err := d.Set([]byte("new"), []byte{byte('0' + round)}, Sync); err != nil {
			t.Fatal(err)
		}
		model["new"] = string([]byte{byte('0' + round)})
		got, err := iterAll(d)
		if err != nil {
			t.Fatal(err)
		}
		if formatModel(got) != formatModel(model) {
			t.Fatalf("round %d: the store holds\n%s\nwant\n%s", round, formatModel(got), formatModel(model))
		}
		d.Close()
	}
}

// TestWALFormat_UnmarkedRecyclableStore: a store whose WAL is recyclable
// but whose MANIFEST does not say so (as stores of earlier versions) is
// read with the format detected: a flipped first type byte is still
// corruption at offset 0, and an intact store is marked at Open.
func TestWALFormat_UnmarkedRecyclableStore(t *testing.T) {
	wals, _ := goldenWALs(t)
	wal := sealedRecyclableWAL(t, wals[0], 4)
	build := func(wal []byte) vfs.FS {
		fs := vfs.NewMem()
		fs.MkdirAll("db", 0o755)
		var buf bytes.Buffer
		w := record.NewWriter(&buf)
		e := manifest.VersionEdit{ComparerName: sstable.DefaultComparer.Name, LogNum: 4, NextFileNum: 5}
		w.WriteRecord(e.Encode())
		w.Flush()
		writeFile(t, fs, "db/MANIFEST-000003", buf.Bytes())
		writeFile(t, fs, "db/CURRENT", []byte("MANIFEST-000003\n"))
		writeFile(t, fs, "db/000004.log", wal)
		return fs
	}
	for _, bit := range []int{0, 1, 2} {
		_, err := Open("db", &Options{FS: build(flipBit(wal, 6, bit))})
		if err == nil || !strings.Contains(err.Error(), "000004.log: offset 0:") {
			t.Fatalf("bit %d of the first type byte flipped: Open: %v, want corruption at offset 0", bit, err)
		}
		requireNamedCorruption(t, err, "first type byte", "000004.log")
	}
	d, err := Open("db", &Options{FS: build(wal)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := d.mu.versions.recyclableLogNum; got != 4 {
		t.Fatalf("WALs recyclable from %s, want 000004", got)
	}
}
