package kv_test

// Scenarios of Pebble v1.1.5's ingest_test.go (TestIngestMemtableOverlaps,
// TestIngest_UpdateSequenceNumber, TestIngestTargetLevel) and
// testdata/ingest, ingest_memtable_overlaps, ingest_update_seqnums and
// ingest_target_level, ported to bloomkv: which version of a key wins
// once tables are ingested over the memtable, the tables and snapshots,
// and where the tables go.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestPortIngest_MemtableOverlaps ports TestIngestMemtableOverlaps and
// testdata/ingest_memtable_overlaps: tables ingested over keys, point
// tombstones and a range tombstone still in the memtable flush it first
// (Pebble: when they overlap it; bloomkv: whenever it holds writes), and
// the ingested versions win; later writes win over them.
func TestPortIngest_MemtableOverlaps(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs, DisableAutomaticCompactions: true})
	must(t, err)
	for _, k := range []string{"a", "b", "c", "d"} {
		must(t, db.Set([]byte(k), []byte("mem"), kv.NoSync))
	}
	must(t, db.Delete([]byte("b"), kv.NoSync))
	must(t, db.DeleteRange([]byte("x"), []byte("z"), kv.NoSync))
	flushes := db.Metrics().Flush.Count
	writePortTable(t, fs, "ext/1.sst", sstable.WriterOptions{}, "b=ing", "c!")
	writePortTable(t, fs, "ext/2.sst", sstable.WriterOptions{}, "y=ing")
	must(t, db.Ingest([]string{"ext/1.sst", "ext/2.sst"}))
	if n := db.Metrics().Flush.Count; n != flushes+1 {
		t.Fatalf("%d flushes during the Ingest, want 1 (of the memtable)", n-flushes)
	}
	want := map[string]string{"a": "mem", "b": "ing", "d": "mem", "y": "ing"}
	checkContents(t, db, want, "after the Ingest")
	// Nothing in the memtable: no flush.
	writePortTable(t, fs, "ext/3.sst", sstable.WriterOptions{}, "a=ing2")
	must(t, db.Ingest([]string{"ext/3.sst"}))
	if n := db.Metrics().Flush.Count; n != flushes+1 {
		t.Fatalf("%d flushes for an Ingest over an empty memtable", n-flushes-1)
	}
	want["a"] = "ing2"
	must(t, db.Set([]byte("b"), []byte("later"), kv.NoSync))
	must(t, db.DeleteRange([]byte("x"), []byte("z"), kv.NoSync))
	want["b"] = "later"
	delete(want, "y")
	checkContents(t, db, want, "after later writes")
	checkReopened(t, db, fs, want)
}

// TestPortIngest_GlobalSeqNum ports testdata/ingest's snapshot and
// iterator cases: ingested keys are read at the Ingest's sequence number,
// above every earlier write; a snapshot or an iterator opened before does
// not see them, one opened after does.
func TestPortIngest_GlobalSeqNum(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs})
	must(t, err)
	defer mustClose(t, db)
	must(t, db.Set([]byte("a"), []byte("1"), kv.NoSync))
	must(t, db.Flush())
	must(t, db.Set([]byte("b"), []byte("1"), kv.NoSync))
	before := map[string]string{"a": "1", "b": "1"}
	snap := db.NewSnapshot()
	defer mustClose(t, snap)
	it, err := db.NewIter(nil)
	must(t, err)
	writePortTable(t, fs, "ext/1.sst", sstable.WriterOptions{}, "a=2", "b=2", "c=2")
	must(t, db.Ingest([]string{"ext/1.sst"}))
	after := map[string]string{"a": "2", "b": "2", "c": "2"}
	got := map[string]string{}
	for it.First(); it.Valid(); it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	must(t, it.Close())
	if d := diffMaps(got, before); d != "" {
		t.Fatalf("an iterator opened before the Ingest: %s", d)
	}
	if got, err := readAll(snap.NewIter); err != nil || diffMaps(got, before) != "" {
		t.Fatalf("a snapshot taken before the Ingest: %v %s", err, diffMaps(got, before))
	}
	if v, err := snap.Get([]byte("c")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("snapshot Get(c) = %q, %v; want ErrNotFound", v, err)
	}
	snap2 := db.NewSnapshot()
	defer mustClose(t, snap2)
	checkContents(t, db, after, "after the Ingest")
	// A second ingest of the same keys is read at a later number still.
	writePortTable(t, fs, "ext/2.sst", sstable.WriterOptions{}, "b=3")
	must(t, db.Ingest([]string{"ext/2.sst"}))
	if got, err := readAll(snap2.NewIter); err != nil || diffMaps(got, after) != "" {
		t.Fatalf("a snapshot taken between the Ingests: %v %s", err, diffMaps(got, after))
	}
	after["b"] = "3"
	checkContents(t, db, after, "after the second Ingest")
}

// TestPortIngest_UpdateSequenceNumber ports TestIngest_UpdateSequenceNumber
// and testdata/ingest_update_seqnums: each Ingest takes a sequence number
// above the last, which the store keeps across a reopen, so a write after
// the reopen shadows the ingested version, and an ingest after that
// shadows the write.
func TestPortIngest_UpdateSequenceNumber(t *testing.T) {
	fs := vfs.NewMem()
	open := func() *kv.DB {
		db, err := kv.Open("db", &kv.Options{FS: fs})
		must(t, err)
		return db
	}
	db := open()
	for i, v := range []string{"1", "2", "3"} {
		p := "ext/" + v + ".sst"
		writePortTable(t, fs, p, sstable.WriterOptions{}, "k="+v, "u"+v+"=x")
		must(t, db.Ingest([]string{p}))
		if i == 1 {
			must(t, db.Close())
			db = open()
		}
	}
	want := map[string]string{"k": "3", "u1": "x", "u2": "x", "u3": "x"}
	checkContents(t, db, want, "after three Ingests")
	must(t, db.Close())
	db = open()
	must(t, db.Set([]byte("k"), []byte("w"), kv.NoSync))
	want["k"] = "w"
	checkContents(t, db, want, "after a write following a reopen")
	must(t, db.Close())
	db = open()
	writePortTable(t, fs, "ext/4.sst", sstable.WriterOptions{}, "k=4")
	must(t, db.Ingest([]string{"ext/4.sst"}))
	want["k"] = "4"
	checkContents(t, db, want, "after an Ingest following the reopen")
	checkReopened(t, db, fs, want)
}

// TestPortIngest_RangeDel ports testdata/ingest's range-deletion cases: a
// range tombstone in an ingested table deletes the store's older keys in
// its span, in the memtable and in every level, but not the table's own
// keys, which share its sequence number, nor keys written after.
func TestPortIngest_RangeDel(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs, DisableAutomaticCompactions: true})
	must(t, err)
	want := map[string]string{}
	for _, k := range []string{"a", "c", "e", "g"} {
		must(t, db.Set([]byte(k), []byte("L6"), kv.NoSync))
	}
	must(t, db.Compact(nil, nil))
	for _, k := range []string{"b", "d", "f"} {
		must(t, db.Set([]byte(k), []byte("L0"), kv.NoSync))
	}
	must(t, db.Flush())
	must(t, db.Set([]byte("c"), []byte("mem"), kv.NoSync))
	must(t, db.Set([]byte("h"), []byte("mem"), kv.NoSync))
	writePortTable(t, fs, "ext/1.sst", sstable.WriterOptions{}, "[b,g)", "c=ing", "d!", "e=ing")
	must(t, db.Ingest([]string{"ext/1.sst"}))
	maps.Copy(want, map[string]string{"a": "L6", "c": "ing", "e": "ing", "g": "L6", "h": "mem"})
	checkContents(t, db, want, "after the Ingest")
	must(t, db.Set([]byte("b"), []byte("later"), kv.NoSync))
	want["b"] = "later"
	checkContents(t, db, want, "after a later write")
	must(t, db.Compact(nil, nil))
	checkContents(t, db, want, "after compacting")
	checkReopened(t, db, fs, want)
}

// TestPortIngest_ReadOnly: Ingest into a store opened read-only returns
// ErrReadOnly and changes no file.
func TestPortIngest_ReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs})
	must(t, err)
	must(t, db.Set([]byte("a"), []byte("1"), kv.Sync))
	must(t, db.Close())
	writePortTable(t, fs, "ext/1.sst", sstable.WriterOptions{}, "b=1")
	ro, err := kv.Open("db", &kv.Options{FS: fs, ReadOnly: true})
	must(t, err)
	defer mustClose(t, ro)
	before := storeFiles(t, fs, "db")
	if err := ro.Ingest([]string{"ext/1.sst"}); !errors.Is(err, kv.ErrReadOnly) {
		t.Fatalf("Ingest into a read-only store = %v, want ErrReadOnly", err)
	}
	if !maps.Equal(storeFiles(t, fs, "db"), before) {
		t.Fatal("Ingest into a read-only store changed its files")
	}
	checkContents(t, ro, map[string]string{"a": "1"}, "after the refused Ingest")
}

// createGateFS stalls the n-th creation of a table in the store's
// directory once armed: it signals stalled and waits for resume.
type createGateFS struct {
	vfs.FS
	left            atomic.Int32 // creations to let through, then stall; < 0: disarmed
	stalled, resume chan struct{}
}

func (fs *createGateFS) Create(name string) (vfs.File, error) {
	if strings.HasSuffix(name, ".sst") && strings.HasPrefix(name, "db/") && fs.left.Add(-1) == -1 {
		close(fs.stalled)
		<-fs.resume
	}
	return fs.FS.Create(name)
}

// TestPortIngest_TargetLevel ports testdata/ingest_target_level's cases
// beyond TestDB_Ingest_TargetLevel's: overlap is judged by a table's key
// range (Pebble v1.1.5 looks for keys, so it would sink a table into a
// gap between keys; bloomkv documents ranges), and, with an L0→Lbase
// compaction in flight, a table overlapping its inputs goes to L0 and one
// overlapping nothing to the bottom, without waiting for it.
func TestPortIngest_TargetLevel(t *testing.T) {
	fs := &createGateFS{FS: vfs.NewMem(), stalled: make(chan struct{}), resume: make(chan struct{})}
	fs.left.Store(1 << 30)
	db, err := kv.Open("db", &kv.Options{FS: fs, StaticLevels: true})
	must(t, err)
	defer mustClose(t, db)
	want := map[string]string{}
	ingest := func(name string, wantLevels []int, entries ...string) {
		t.Helper()
		writePortTable(t, fs, "ext/"+name, sstable.WriterOptions{}, entries...)
		must(t, db.Ingest([]string{"ext/" + name}))
		for _, e := range entries {
			k, v, _ := strings.Cut(e, "=")
			want[k] = v
		}
		if got := levelFiles(db.Metrics()); !slices.Equal(got, wantLevels) {
			t.Fatalf("after ingesting %s: tables per level %v, want %v", name, got, wantLevels)
		}
	}
	ingest("m-z.sst", []int{0, 0, 0, 0, 0, 0, 1}, "m=1", "z=1")
	ingest("p.sst", []int{0, 0, 0, 0, 0, 1, 1}, "p=1") // between m and z
	// A second L0 table over a..c makes L0 due for compaction (at read
	// amplification 2 of the default threshold of 4); the first table
	// created after the flush's own is the compaction's output: stall it.
	release := sync.OnceFunc(func() { close(fs.resume) })
	defer release()
	for i := range 2 {
		must(t, db.WaitIdle(context.Background()))
		if i == 1 {
			fs.left.Store(1)
		}
		must(t, db.Set([]byte("a"), []byte("mem"), kv.NoSync))
		must(t, db.Set([]byte("c"), []byte("mem"), kv.NoSync))
		must(t, db.Flush())
	}
	want["a"], want["c"] = "mem", "mem"
	<-fs.stalled
	ingest("b.sst", []int{3, 0, 0, 0, 0, 1, 1}, "b=1")
	ingest("x.sst", []int{3, 0, 0, 0, 0, 2, 1}, "x=1") // within m-z, past p
	ingest("d.sst", []int{3, 0, 0, 0, 0, 2, 2}, "d=1")
	release()
	must(t, db.Flush())
	checkContents(t, db, want, "after the compaction")
}
