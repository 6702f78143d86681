package kv_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestPortBatch_SnapshotBeforeAfter ports RocksDB's WriteBatch visibility
// checks (db_write_test) and Pebble's batch commit tests: a batch applied
// between two snapshots is seen whole at the later one and not at all at
// the earlier one, and by an open DB iterator only once refreshed; after
// a flush the snapshots still read the same.
func TestPortBatch_SnapshotBeforeAfter(t *testing.T) {
	db := pitOpen(t, nil)
	pbMust(t, db.Apply(pbBatch(t, db, "set a 0; set b 0; set c 0"), nil))
	before := db.NewSnapshot()
	defer before.Close()
	it := pitIter(t, db, nil)
	pbMust(t, db.Apply(pbBatch(t, db, "set a 1; del b; delrange c d; set c 1; set d 1"), kv.Sync))
	after := db.NewSnapshot()
	defer after.Close()
	pbMust(t, db.Set([]byte("e"), []byte("later"), nil))
	for _, step := range []string{"applied", "flushed"} {
		if step == "flushed" {
			pbMust(t, db.Flush())
		}
		pbWantScan(t, step+": before", before, "a=0 b=0 c=0")
		pbWantGets(t, step+": before", before, "a=0 b=0 c=0 d=-")
		pbWantScan(t, step+": after", after, "a=1 c=1 d=1")
		pbWantGets(t, step+": after", after, "a=1 b=- c=1 d=1 e=-")
	}
	pbWantIter(t, "an iterator opened before", it, "a=0 b=0 c=0")
	pbMust(t, it.Refresh())
	pbWantIter(t, "that iterator refreshed", it, "a=1 c=1 d=1 e=later")
}

// pbAtomicKeys are the keys every batch of TestPortBatch_ConcurrentApply
// writes.
const pbAtomicKeys = 8

// pbAtomicBatch returns writer w's batch number i: either the deletion
// of every key (a range deletion and, every third, point deletions) or
// a range deletion followed by a Set of every key to one value, so that
// a reader seeing part of a batch sees keys missing or values differ.
func pbAtomicBatch(t *testing.T, db *kv.DB, w, i int) *kv.Batch {
	b := db.NewBatch()
	pbMust(t, b.DeleteRange([]byte("k"), []byte("l")))
	for k := range pbAtomicKeys {
		key := fmt.Appendf(nil, "k%d", k)
		switch {
		case i%5 == 4 && i%3 == 0:
			pbMust(t, b.Delete(key))
		case i%5 != 4:
			pbMust(t, b.Set(key, fmt.Appendf(nil, "w%d-%d", w, i)))
		}
	}
	return b
}

// pbCheckWhole reports what is wrong with one read of the keys: they
// must be all absent, or all present with one value.
func pbCheckWhole(scan string) string {
	f := strings.Fields(scan)
	if len(f) == 0 {
		return ""
	}
	if len(f) != pbAtomicKeys {
		return fmt.Sprintf("%d of %d keys: %q", len(f), pbAtomicKeys, scan)
	}
	_, v0, _ := strings.Cut(f[0], "=")
	for _, p := range f {
		if _, v, _ := strings.Cut(p, "="); v != v0 {
			return fmt.Sprintf("values differ: %q", scan)
		}
	}
	return ""
}

// TestPortBatch_ConcurrentApply ports RocksDB's DBWriteTest concurrent
// writers and Pebble's commit pipeline tests to bloomkv's promise:
// batches applied concurrently are each seen whole or not at all, by
// iterators, by snapshots' Gets and by refreshed iterators, while the
// memtable fills and is flushed.
func TestPortBatch_ConcurrentApply(t *testing.T) {
	writers, batches := 3, 600
	if testing.Short() {
		batches = 100
	}
	db := pitOpen(t, &kv.Options{MemTableSize: 64 << 10})
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for w := range writers {
		wg.Go(func() {
			for i := range batches {
				opts := kv.NoSync
				if w == 0 && i%4 == 0 {
					opts = kv.Sync
				}
				if err := db.Apply(pbAtomicBatch(t, db, w, i), opts); err != nil {
					errs <- err.Error()
					return
				}
			}
		})
	}
	var reads atomic.Int64
	var rg sync.WaitGroup
	for r := range 2 {
		rg.Go(func() {
			it, err := db.NewIter(nil)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer it.Close()
			for !done.Load() {
				var msg string
				if r == 0 {
					if err := it.Refresh(); err != nil {
						errs <- err.Error()
						return
					}
					msg = pbCheckWhole(strings.Join(scanPairs(t, it), " "))
				} else {
					msg = pbCheckWhole(pbSnapshotGets(t, db))
				}
				if msg != "" {
					errs <- msg
					return
				}
				reads.Add(1)
			}
		})
	}
	wg.Wait()
	done.Store(true)
	rg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	t.Logf("%d reads", reads.Load())
	if msg := pbCheckWhole(pbScan(t, db)); msg != "" {
		t.Errorf("at the end: %s", msg)
	}
}

// pbSnapshotGets reads every key of TestPortBatch_ConcurrentApply with
// Get at one snapshot, as a scan would show them.
func pbSnapshotGets(t *testing.T, db *kv.DB) string {
	s := db.NewSnapshot()
	defer s.Close()
	var out []string
	for k := range pbAtomicKeys {
		key := fmt.Sprintf("k%d", k)
		if v := pbGet(t, s, key); v != "-" {
			out = append(out, key+"="+v)
		}
	}
	return strings.Join(out, " ")
}

// TestPortBatch_SyncSurvivesPowerLoss ports RocksDB's DBWriteTest sync
// and Pebble's batch recovery: a batch applied with Sync is back whole
// after the machine loses everything not synced; a NoSync batch applied
// after it is back whole or not at all.
func TestPortBatch_SyncSurvivesPowerLoss(t *testing.T) {
	mem := vfs.NewStrictMem()
	db := ldbOpen(t, mem, nil)
	pbMust(t, db.Apply(pbBatch(t, db, "set a 1; set b 1; delrange b c; set c 1"), kv.NoSync))
	pbMust(t, db.Apply(pbBatch(t, db, "set a 2; del c; set d 2; delrange e f; set e 2"), kv.Sync))
	pbMust(t, db.Apply(pbBatch(t, db, "set a 3; set b 3; set f 3"), kv.NoSync))
	mem.SetIgnoreSyncs(true) // the crash: nothing Close writes lasts
	db.Close()
	mem.ResetToSyncedState()
	mem.SetIgnoreSyncs(false)
	db = ldbOpen(t, mem, nil)
	defer db.Close()
	switch got := pbScan(t, db); got {
	case "a=2 d=2 e=2", "a=3 b=3 d=2 e=2 f=3":
	default:
		t.Errorf("after the power loss: %q, want the Sync batch whole, the NoSync one whole or not at all", got)
	}
}

// TestPortBatch_TornRecord ports RocksDB's WriteBatchTest.Corruption and
// goleveldb's torn batch: the WAL of a store whose process died after a
// NoSync Apply of a batch spanning several WAL blocks, cut at points all
// through the batch's record, recovers the batch whole (cut at its end)
// or not at all (cut within it), never part of it.
func TestPortBatch_TornRecord(t *testing.T) {
	mem := vfs.NewMem()
	db := ldbOpen(t, mem, nil)
	defer db.Close()
	pbMust(t, db.Apply(pbBatch(t, db, "set a 1; set z 1"), kv.NoSync))
	log := pcFile(t, mem, ".log")
	start := len(readFSFile(t, mem, "db/"+log))
	b := db.NewBatch()
	value := strings.Repeat("v", 1000)
	const n = 100 // about 100 KB: several 32 KiB blocks
	for i := range n {
		pbMust(t, b.Set(fmt.Appendf(nil, "k%03d", i), []byte(value)))
	}
	pbMust(t, b.DeleteRange([]byte("a"), []byte("b")))
	pbMust(t, db.Apply(b, kv.NoSync))
	if l := pcFile(t, mem, ".log"); l != log {
		t.Fatalf("the batch went to WAL %s, not %s", l, log)
	}
	end := len(readFSFile(t, mem, "db/"+log))
	cuts := []int{start + 1, start + 7, start + 11, end - 1, end}
	step := 1 + (end-start)/30
	if testing.Short() {
		step = 1 + (end-start)/6
	}
	for c := start + 20; c < end; c += step {
		cuts = append(cuts, c)
	}
	for blk := (start/32768 + 1) * 32768; blk < end; blk += 32768 {
		cuts = append(cuts, blk-1, blk, blk+1, blk+7, blk+8)
	}
	for _, cut := range cuts {
		crashed := vfs.NewMem()
		if _, err := vfs.Clone(mem, crashed, "db", "db"); err != nil {
			t.Fatal(err)
		}
		pcCut(t, crashed, log, cut)
		re := ldbOpen(t, crashed, nil)
		got := pbScan(t, re)
		pbMust(t, re.Close())
		whole := cut == end
		switch {
		case whole && (strings.Count(got, "=") != n+1 || strings.HasPrefix(got, "a=")):
			t.Errorf("cut at the record's end (%d): %d keys, want the batch whole", cut, strings.Count(got, "="))
		case !whole && got != "a=1 z=1":
			t.Errorf("cut at %d, within the record [%d, %d): %d keys, want none of the batch",
				cut, start, end, strings.Count(got, "="))
		}
	}
}

// TestPortBatch_ProcessCrash ports RocksDB's DBWriteTest process-crash
// checks (a NoSync write survives the process) to bloomkv's two
// promises: the store copied as a dead process leaves it (written bytes,
// synced or not; the WAL's flusher may be writing) after each NoSync Apply holds every batch applied so far
// in the default mode, and with BackgroundWALWrites a prefix of them,
// each whole.
func TestPortBatch_ProcessCrash(t *testing.T) {
	const batches, keys = 12, 20
	for _, background := range []bool{false, true} {
		t.Run(fmt.Sprintf("background=%v", background), func(t *testing.T) {
			mem := vfs.NewMem()
			// No flush: vfs.Clone of a store's directory while a flush
			// adds a table and a MANIFEST edit is no state a crash leaves.
			o := &kv.Options{BackgroundWALWrites: background}
			db := ldbOpen(t, mem, o)
			defer db.Close()
			for i := range batches {
				b := db.NewBatch()
				for k := range keys {
					pbMust(t, b.Set(fmt.Appendf(nil, "b%02d-%02d", i, k), make([]byte, 300)))
				}
				pbMust(t, b.Set([]byte("last"), fmt.Appendf(nil, "%02d", i)))
				pbMust(t, db.Apply(b, kv.NoSync))
				crashed := vfs.NewMem()
				if _, err := vfs.Clone(mem, crashed, "db", "db"); err != nil {
					t.Fatal(err)
				}
				re := ldbOpen(t, crashed, o)
				n, msg := pbWholeBatches(t, re, batches, keys)
				pbMust(t, re.Close())
				switch {
				case msg != "":
					t.Fatalf("after Apply %d: %s", i, msg)
				case !background && n != i+1:
					t.Fatalf("after Apply %d: %d batches recovered, want all", i, n)
				}
			}
		})
	}
}

// pbWholeBatches returns how many of TestPortBatch_ProcessCrash's
// batches db holds, and what is wrong if they are not a prefix of whole
// batches with "last" naming the last one.
func pbWholeBatches(t *testing.T, db *kv.DB, batches, keys int) (int, string) {
	t.Helper()
	n := 0
	for i := range batches {
		found := 0
		for k := range keys {
			if pbGet(t, db, fmt.Sprintf("b%02d-%02d", i, k)) != "-" {
				found++
			}
		}
		switch {
		case found == keys && n == i:
			n++
		case found != 0:
			return n, fmt.Sprintf("batch %d: %d of %d keys, after %d whole batches", i, found, keys, n)
		}
	}
	last, want := pbGet(t, db, "last"), fmt.Sprintf("%02d", n-1)
	if n == 0 {
		want = "-"
	}
	if last != want {
		return n, fmt.Sprintf("last = %s with %d batches", last, n)
	}
	return n, ""
}
