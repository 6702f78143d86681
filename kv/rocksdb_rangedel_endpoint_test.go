package kv_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
)

// rdCount returns the number of keys a forward scan of the DB shows, and
// checks a backward scan shows as many.
func rdCount(t *testing.T, db *kv.DB) int {
	t.Helper()
	it, err := db.NewIter(nil)
	must1(t, err)
	defer it.Close()
	fwd, bwd := 0, 0
	for ok := it.First(); ok; ok = it.Next() {
		fwd++
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		bwd++
	}
	must1(t, it.Error())
	if fwd != bwd {
		t.Fatalf("forward scan saw %d keys, backward %d", fwd, bwd)
	}
	return fwd
}

// TestRocksDB_RangeDel_KeyAtOverlappingEndpointReappears ports
// KeyAtOverlappingEndpointReappears (and DeletedMergeOperandReappearsIterPrev):
// RocksDB stacks merge operands of one key over several tables; here a
// snapshot after each version keeps many versions of one key, over tables
// whose bounds may meet at that key, all covered by a tombstone. No
// version may reappear after compactions, and each snapshot keeps
// reading the version it saw.
func TestRocksDB_RangeDel_KeyAtOverlappingEndpointReappears(t *testing.T) {
	const files, perFile = 4, 8
	rng := rand.New(rand.NewPCG(301, 4))
	db, _ := rdOpen(t, nil)
	ldbSet(t, db, "key", "dummy")
	ldbSet(t, db, "zzz", "below") // keeps the dummy off the bottom's edge
	ldbCompact(t, db, "", "")
	type seen struct {
		s *kv.Snapshot
		v string
	}
	var snaps []seen
	for i := 0; i < files; i++ {
		for j := 0; j < perFile; j++ {
			v := rdValue(rng, 1<<10)
			ldbSet(t, db, "key", v)
			snaps = append(snaps, seen{rdSnapshot(t, db), v})
		}
		if i == files-1 {
			rdDeleteRange(t, db, "key", "key_")
		}
		ldbFlush(t, db)
	}
	check := func(what string) {
		t.Helper()
		ldbWant(t, db, "key", "NOT_FOUND")
		if keys := rdScan(t, db, nil); len(keys) != 1 || keys[0] != "zzz" {
			t.Fatalf("%s: scan = %q, want [zzz]", what, keys)
		}
		it, err := db.NewIter(nil)
		must1(t, err)
		if it.Last() && it.Prev() {
			t.Fatalf("%s: Prev from zzz found %q", what, it.Key())
		}
		must1(t, it.Close())
		for i, s := range snaps {
			if got := ldbGet(t, s.s, "key"); got != s.v {
				t.Fatalf("%s: snapshot %d reads %s, want %s", what, i, ldbShort(got), ldbShort(s.v))
			}
		}
	}
	check("in L0")
	ldbCompact(t, db, "a", "l")
	check("compacted once")
	ldbCompact(t, db, "", "")
	check("compacted twice")
}

// TestRocksDB_RangeDel_UntruncatedTombstoneDoesNotDeleteNewerKey ports
// UntruncatedTombstoneDoesNotDeleteNewerKey: a tombstone over the whole
// key range sits in every bottom table (a snapshot keeps it), the left
// tables holding many versions of one key, the right ones distinct keys.
// Keys overwritten on the right, compacted to the bottom once the
// snapshots are gone (their sequence numbers zeroed), must not be deleted
// by the tombstone of another table.
func TestRocksDB_RangeDel_UntruncatedTombstoneDoesNotDeleteNewerKey(t *testing.T) {
	const files, perFile, overwritten = 4, 16, 5
	const maxKey = files * perFile
	rng := rand.New(rand.NewPCG(301, 5))
	db, _ := rdOpen(t, nil)
	var snaps []*kv.Snapshot
	for i := 0; i < files; i++ {
		for j := 0; j < perFile; j++ {
			k := ldbKey(1 + i*perFile + j)
			if i < files/2 {
				k = ldbKey(0)
				snaps = append(snaps, db.NewSnapshot()) // keeps every version
			}
			ldbSet(t, db, k, rdValue(rng, 512))
		}
		if i == files-1 {
			snaps = append(snaps, db.NewSnapshot())
			rdDeleteRange(t, db, ldbKey(0), ldbKey(maxKey+1))
		}
		ldbFlush(t, db)
	}
	if n := rdCount(t, db); n != 0 {
		t.Fatalf("%d keys seen, want all covered", n)
	}
	ldbCompact(t, db, "", "")
	if n := ldbTables(db); n < files {
		t.Fatalf("%d tables (%s), want at least %d", n, ldbLevels(db), files)
	}
	model := map[string]string{}
	for i := maxKey; i > maxKey-overwritten; i-- {
		model[ldbKey(i)] = rdValue(rng, 512)
		ldbSet(t, db, ldbKey(i), model[ldbKey(i)])
	}
	ldbFlush(t, db)
	if n := rdCount(t, db); n != overwritten {
		t.Fatalf("%d keys seen, want %d", n, overwritten)
	}
	for _, s := range snaps {
		must1(t, s.Close())
	}
	ldbCompact(t, db, ldbKey(maxKey-overwritten+1), ldbKey(maxKey))
	if n := db.Metrics().Levels[0].NumFiles; n != 0 {
		t.Fatalf("L0 tables = %d after compaction", n)
	}
	rdCheck(t, db, model, []string{ldbKey(0), ldbKey(1)}, "after compacting the overwritten keys")
	ldbCompact(t, db, "", "")
	rdCheck(t, db, model, []string{ldbKey(0), ldbKey(1)}, "after compacting all")
	if got := ldbEntries(db); got != overwritten {
		t.Fatalf("entries = %d, want %d", got, overwritten)
	}
}

// TestRocksDB_RangeDel_ValidLevelSubcompactionBoundaries ports
// ValidLevelSubcompactionBoundaries and
// CompactionTreatsSplitInputLevelDeletionAtomically: automatic, concurrent
// compactions over static levels move tables holding parts of range
// tombstones [95, 105) and [295, 305) down through L1 and L2 while writes
// go on; the store must end holding exactly the model.
func TestRocksDB_RangeDel_ValidLevelSubcompactionBoundaries(t *testing.T) {
	const perFile, files = 100, 4
	rng := rand.New(rand.NewPCG(301, 6))
	o := rdOptions()
	o.DisableAutomaticCompactions = false
	o.StaticLevels = true
	o.L0CompactionThreshold = files
	o.LBaseMaxBytes = 16 << 10
	o.MaxConcurrentCompactions = 3
	o.MemTableSize = 1 << 20
	db, _ := rdOpen(t, o)
	model := map[string]string{}
	for i := 0; i < 2; i++ {
		for j := 0; j < files; j++ {
			if i > 0 {
				mid := (j + (1 - j%2)) * perFile
				rdDeleteRange(t, db, ldbKey(mid-5), ldbKey(mid+5))
				for k := mid - 5; k < mid+5; k++ {
					delete(model, ldbKey(k))
				}
			}
			for k := 0; k < perFile; k++ {
				key := ldbKey(j*perFile + k)
				model[key] = rdValue(rng, 100)
				ldbSet(t, db, key, model[key])
			}
			ldbSet(t, db, "", "")
			model[""] = ""
			ldbFlush(t, db)
		}
		must1(t, db.WaitIdle(context.Background()))
	}
	m := db.Metrics()
	if m.Levels[1].NumFiles == 0 || m.Levels[2].NumFiles == 0 {
		t.Fatalf("levels %s, want tables in L1 and L2", ldbLevels(db))
	}
	rdCheck(t, db, model, []string{ldbKey(95), ldbKey(104), ldbKey(300)}, "after compactions")
	ldbCompact(t, db, "", "")
	rdCheck(t, db, model, []string{ldbKey(95), ldbKey(104), ldbKey(300)}, "compacted")
}

// TestRocksDB_RangeDel_IngestedTombstone ports Pebble's ingest scenarios
// with range deletions (testdata/ingest): an ingested table's tombstone
// deletes the store's older keys in its range, not the table's own point
// keys, which share its sequence number; later writes shadow both.
func TestRocksDB_RangeDel_IngestedTombstone(t *testing.T) {
	db, fs := rdOpen(t, nil)
	for _, k := range []string{"a", "b", "c", "d"} {
		ldbSet(t, db, k, "old")
	}
	ldbFlush(t, db)
	f, err := fs.Create("ext.sst")
	must1(t, err)
	w := sstable.NewWriter(f, sstable.WriterOptions{})
	must1(t, w.Add(sstable.MakeInternalKey([]byte("b"), 0, sstable.KindSet), []byte("ingested")))
	must1(t, w.AddRangeDel(sstable.RangeTombstone{Start: []byte("a"), End: []byte("d"), Seq: 0}))
	must1(t, w.Close())
	snap := rdSnapshot(t, db)
	must1(t, db.Ingest([]string{"ext.sst"}))
	want := map[string]string{"b": "ingested", "d": "old"}
	rdCheck(t, db, want, []string{"a", "c"}, "after Ingest")
	rdCheck(t, snap, map[string]string{"a": "old", "b": "old", "c": "old", "d": "old"}, nil, "snapshot")
	ldbSet(t, db, "c", "new")
	want["c"] = "new"
	ldbCompact(t, db, "", "")
	rdCheck(t, db, want, []string{"a"}, "compacted")
}

// TestRocksDB_RangeDel_SeeksAcrossTombstones ports Pebble's iterator
// tests over range tombstones (testdata/iterator_seek, range_del): long
// keys, tombstones straddling table boundaries and iterator bounds, in
// the memtable, L0 and the bottom; SeekGE and SeekLT at every key, with
// Next and Prev from there, must land where the model says.
func TestRocksDB_RangeDel_SeeksAcrossTombstones(t *testing.T) {
	const n = 120
	rng := rand.New(rand.NewPCG(301, 7))
	db, _ := rdOpen(t, nil)
	model := map[string]string{}
	set := func(i int) {
		model[rdKey(i, true)] = rdValue(rng, 64)
		ldbSet(t, db, rdKey(i, true), model[rdKey(i, true)])
	}
	del := func(lo, hi int) {
		rdDeleteRange(t, db, rdKey(lo, true), rdKey(hi, true))
		for i := lo; i < hi; i++ {
			delete(model, rdKey(i, true))
		}
	}
	for i := 0; i < n; i++ {
		set(i)
	}
	ldbCompact(t, db, "", "")
	del(10, 40)
	ldbFlush(t, db)
	for i := 30; i < 50; i += 2 {
		set(i)
	}
	del(45, 90)
	ldbFlush(t, db)
	set(60)
	del(100, 119)
	for round := 0; round < 2; round++ {
		rdCheck(t, db, model, []string{rdKey(10, true), rdKey(118, true)}, "seeks")
		rdCheckSeeks(t, db, model, n)
		ldbCompact(t, db, rdKey(40, true), rdKey(70, true))
	}
}

// rdCheckSeeks checks SeekGE and SeekLT at every key i < n of rdKey's long
// keys, and one Next or Prev after them, against model.
func rdCheckSeeks(t *testing.T, db *kv.DB, model map[string]string, n int) {
	t.Helper()
	it, err := db.NewIter(nil)
	must1(t, err)
	defer it.Close()
	key := func(ok bool) string {
		if !ok {
			return "<none>"
		}
		return string(it.Key())
	}
	nextFrom := func(i, step int) (string, string) {
		var found []string
		for j := i; j >= 0 && j < n && len(found) < 2; j += step {
			if _, ok := model[rdKey(j, true)]; ok {
				found = append(found, rdKey(j, true))
			}
		}
		for len(found) < 2 {
			found = append(found, "<none>")
		}
		return found[0], found[1]
	}
	for i := 0; i < n; i++ {
		k := []byte(rdKey(i, true))
		w1, w2 := nextFrom(i, 1)
		if g1 := key(it.SeekGE(k)); g1 != w1 || (g1 != "<none>" && key(it.Next()) != w2) {
			t.Fatalf("SeekGE(%d) then Next: %s, want %s then %s", i, rdTrim(g1), rdTrim(w1), rdTrim(w2))
		}
		w1, w2 = nextFrom(i-1, -1)
		if g1 := key(it.SeekLT(k)); g1 != w1 || (g1 != "<none>" && key(it.Prev()) != w2) {
			t.Fatalf("SeekLT(%d) then Prev: %s, want %s then %s", i, rdTrim(g1), rdTrim(w1), rdTrim(w2))
		}
	}
	must1(t, it.Error())
}

// rdTrim drops the shared prefix of rdKey's long keys, for messages.
func rdTrim(k string) string { return strings.TrimLeft(k, "p") }
