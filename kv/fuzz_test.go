package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// FuzzOpenWALs replays two WALs, whole files of several batches, through
// Open on a fresh MemFS, twice: as the WALs of a store without a MANIFEST
// (their format detected, as for an older store) and of one whose
// MANIFEST says they are recyclable (as a store this version wrote). It is
// seeded from the golden WALs (and from them copied twice, truncated, and
// swapped), from them in recyclable chunks and sealed, as Close leaves
// them, and from the single-bit flips the sweeps try
// (bitflip_wal_test.go): the first chunk's type byte, the last batch.
func FuzzOpenWALs(f *testing.F) {
	var wals [][]byte
	for _, name := range goldenWALNames {
		data, err := readFS(vfs.Default, vfs.Default.PathJoin(goldenWALDir, name))
		if err != nil {
			f.Fatal(err)
		}
		wals = append(wals, data)
	}
	f.Add(wals[0], wals[1])
	f.Add(wals[0], wals[0])
	f.Add(wals[1], wals[0])
	f.Add(wals[0][:len(wals[0])-9], wals[1])
	f.Add([]byte{}, wals[1])
	sealed := [][]byte{sealedRecyclableWAL(f, wals[0], 1), sealedRecyclableWAL(f, wals[1], 2)}
	f.Add(sealed[0], sealed[1])
	// As a memtable switch leaves them: the second WAL marked, then with
	// the mark alone, and after an emptied first.
	marked := markedRecyclableWAL(f, wals[1], 2)
	f.Add(sealed[0], marked)
	markEnd := len(marked) - len(sealedRecyclableWAL(f, wals[1], 2))
	f.Add(sealed[0], marked[:markEnd])
	f.Add([]byte{}, marked[:markEnd])
	for _, bit := range []int{0, 1, 2} {
		f.Add(flipBit(wals[0], 6, bit), wals[1])
		f.Add(flipBit(sealed[0], 6, bit), sealed[1])
	}
	f.Add(sealed[0], flipBit(sealed[1], len(sealed[1])-walSealSize-3, 4))
	f.Add(flipBit(sealed[0], len(sealed[0])-4, 0), sealed[1])
	f.Fuzz(func(t *testing.T, wal1, wal2 []byte) {
		for _, recyclable := range []bool{false, true} {
			fs := vfs.NewMem()
			fs.MkdirAll("db", 0o755)
			writeFile(t, fs, "db/"+goldenWALNames[0], wal1)
			writeFile(t, fs, "db/"+goldenWALNames[1], wal2)
			if recyclable {
				writeRecyclableManifest(t, fs)
			}
			checkOpenAnyBytes(t, fs, MinMemTableSize<<(len(wal1)%8))
		}
	})
}

// sealedRecyclableWAL returns the records of the legacy log data as WAL
// logNum writes them: recyclable chunks, and a seal holding the last
// sequence number of its batches.
func sealedRecyclableWAL(t testing.TB, data []byte, logNum uint32) []byte {
	return recyclableWAL(t, data, logNum, false)
}

// markedRecyclableWAL returns sealedRecyclableWAL's WAL started by the
// mark of a WAL switch (see markSwitch), holding the sequence number
// before its first batch's.
func markedRecyclableWAL(t testing.TB, data []byte, logNum uint32) []byte {
	return recyclableWAL(t, data, logNum, true)
}

func recyclableWAL(t testing.TB, data []byte, logNum uint32, marked bool) []byte {
	r := record.NewReader(bytes.NewReader(data), "golden")
	var recs [][]byte
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, bytes.Clone(rec))
	}
	var buf bytes.Buffer
	w := record.NewRecyclableWriterAt(&buf, 0, logNum)
	if marked && len(recs) > 0 {
		mark := sealRecord(base.SeqNum(binary.LittleEndian.Uint64(recs[0])) - 1)
		w.WriteRecord(mark[:])
	}
	var last base.SeqNum
	for _, rec := range recs {
		w.WriteRecord(rec)
		if n := binary.LittleEndian.Uint32(rec[8:12]); n > 0 {
			last = base.SeqNum(binary.LittleEndian.Uint64(rec)) + base.SeqNum(n) - 1
		}
	}
	seal := sealRecord(last)
	w.WriteRecord(seal[:])
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeRecyclableManifest writes to fs the MANIFEST (and CURRENT) of an
// empty store whose WALs, from 000001.log on, are recyclable.
func writeRecyclableManifest(t testing.TB, fs vfs.FS) {
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	e := manifest.VersionEdit{ComparerName: sstable.DefaultComparer.Name, LogNum: 1, NextFileNum: 4, RecyclableLogNum: 1}
	w.WriteRecord(e.Encode())
	w.WriteRecord(nil)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fs, "db/MANIFEST-000003", buf.Bytes())
	writeFile(t, fs, "db/CURRENT", []byte("MANIFEST-000003\n"))
}

// flipBit returns a copy of data with bit of byte off flipped.
func flipBit(data []byte, off, bit int) []byte {
	data = bytes.Clone(data)
	data[off] ^= 1 << bit
	return data
}

// FuzzOpenManifest opens a store whose MANIFEST is the fuzzer's, over the
// golden MANIFEST's tables. It is seeded from the golden MANIFEST.
func FuzzOpenManifest(f *testing.F) {
	manifestName, tables := goldenManifestFiles(f)
	data, err := readFS(vfs.Default, vfs.Default.PathJoin(goldenManifestDir, manifestName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)-3])
	f.Add(append(bytes.Clone(data), data...))
	// The bit flips the sweeps try (bitflip_manifest_test.go), in the
	// golden MANIFEST and in it sealed as this version writes one.
	sealed := sealedManifest(f, data)
	for _, m := range [][]byte{data, sealed} {
		for _, bit := range []int{0, 2, 7} {
			f.Add(flipBit(m, 6, bit))
			f.Add(flipBit(m, len(m)-9, bit))
		}
	}
	f.Add(sealed)
	f.Fuzz(func(t *testing.T, manifest []byte) {
		fs := goldenManifestFS(t, manifestName, tables)
		writeFile(t, fs, "db/"+manifestName, manifest)
		checkOpenAnyBytes(t, fs, MinMemTableSize)
	})
}

// sealedManifest returns the edits of MANIFEST data each followed by a
// seal, as this version writes them.
func sealedManifest(t testing.TB, data []byte) []byte {
	r := record.NewReader(bytes.NewReader(data), "golden")
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		w.WriteRecord(rec)
		w.WriteRecord(nil)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkOpenAnyBytes opens the store in fs, whose files hold any bytes.
// Open must succeed or fail with an error wrapping ErrCorruption or
// ErrNewerFormat (or refuse another comparer's store), never panic. An
// opened store must read consistently: iteration ordered both ways, Get
// agreeing with it, errors wrapping the same sentinels; and it must take a
// write (unless the WAL used up the sequence numbers) and reopen with it. The memtable size decides whether Open keeps
// replayed WALs in memory or writes them to tables.
func checkOpenAnyBytes(t *testing.T, fs vfs.FS, memTableSize int64) {
	o := &Options{FS: fs, MemTableSize: memTableSize}
	d, err := Open("db", o)
	if err != nil {
		requireBadBytesError(t, err, "Open")
		return
	}
	got, err := checkReads(t, d)
	if err != nil {
		requireBadBytesError(t, err, "reading")
		must(t, d.Close())
		return
	}
	if err := d.Set([]byte("\xff-fuzz"), []byte("after"), Sync); err != nil {
		must(t, d.Close())
		if errors.Is(err, errSeqNumsExhausted) {
			return
		}
		t.Fatalf("Set after a successful Open: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	d, err = Open("db", o)
	if err != nil {
		t.Fatalf("reopening a store that opened: %v", err)
	}
	defer mustClose(t, d)
	again, err := checkReads(t, d)
	if err != nil {
		t.Fatalf("reading after reopening: %v", err)
	}
	got["\xff-fuzz"] = "after"
	if formatModel(again) != formatModel(got) {
		t.Fatalf("contents changed over a reopen:\n%s\nwant\n%s", formatModel(again), formatModel(got))
	}
}

// checkReads reads the whole store forward, backward and by Get, checking
// they agree and the order is strict, and returns its contents.
func checkReads(t *testing.T, d *DB) (map[string]string, error) {
	it, err := d.NewIter(nil)
	if err != nil {
		return nil, err
	}
	defer mustClose(t, it)
	var keys, vals []string
	for it.First(); it.Valid(); it.Next() {
		if n := len(keys); n > 0 && keys[n-1] >= string(it.Key()) {
			t.Fatalf("iteration out of order: %q then %q", keys[n-1], it.Key())
		}
		keys, vals = append(keys, string(it.Key())), append(vals, string(it.Value()))
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	i := len(keys)
	for it.Last(); it.Valid(); it.Prev() {
		i--
		if i < 0 || keys[i] != string(it.Key()) || vals[i] != string(it.Value()) {
			t.Fatalf("backward iteration disagrees with forward at %q", it.Key())
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if i != 0 {
		t.Fatalf("backward iteration saw %d keys, forward %d", len(keys)-i, len(keys))
	}
	m := make(map[string]string, len(keys))
	for i, k := range keys {
		v, err := d.Get([]byte(k))
		if err != nil {
			return nil, err
		}
		if string(v) != vals[i] {
			t.Fatalf("Get(%q) = %q, iteration shows %q", k, v, vals[i])
		}
		m[k] = vals[i]
	}
	return m, nil
}

// requireBadBytesError fails the test unless err is one bad bytes may
// cause.
func requireBadBytesError(t *testing.T, err error, what string) {
	t.Helper()
	if errors.Is(err, ErrCorruption) || errors.Is(err, ErrNewerFormat) ||
		strings.Contains(err.Error(), "the store was written with comparer") {
		return
	}
	t.Fatalf("%s: error wraps neither ErrCorruption nor ErrNewerFormat: %v", what, err)
}
