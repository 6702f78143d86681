package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestRocksDBBasic_PinnableSlice ports DBBasicTest's PinnableSlice tests
// (GetPinnable with a caller's buffer): GetAppend appends the value to
// the caller's bytes, keeps them, reuses a buffer with room, reports a
// missing key with dst unchanged; the value read stays what it was
// through later writes, a flush and a compaction; and a Get's result,
// changed by the caller, does not change the store.
func TestRocksDBBasic_PinnableSlice(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{BlockSize: 256})
	defer ldbClose(t, db)
	big := strings.Repeat("b", 1000)
	ldbSet(t, db, "foo", "v1")
	ldbSet(t, db, "big", big)
	s := db.NewSnapshot()
	defer s.Close()
	for stage := range 3 {
		buf := make([]byte, 0, 4096)
		buf = append(buf, "hdr:"...)
		got, err := db.GetAppend(buf, []byte("foo"))
		if err != nil || string(got) != "hdr:v1" || &got[0] != &buf[:1][0] {
			t.Fatalf("stage %d: GetAppend = %q, %v; want hdr:v1 in the caller's buffer", stage, got, err)
		}
		got2, err := db.GetAppend(got, []byte("big"))
		if err != nil || string(got2) != "hdr:v1"+big {
			t.Fatalf("stage %d: second GetAppend = %s, %v", stage, ldbShort(string(got2)), err)
		}
		missing, err := db.GetAppend(got2, []byte("nope"))
		if !errors.Is(err, kv.ErrNotFound) || !bytes.Equal(missing, got2) {
			t.Fatalf("stage %d: GetAppend of a missing key = %d bytes, %v", stage, len(missing), err)
		}
		v, err := db.Get([]byte("big"))
		must1(t, err)
		v[0] = 'X' // the caller's to change
		ldbSet(t, db, "foo", "v2")
		ldbSet(t, db, "big", "small")
		switch stage {
		case 0:
			ldbFlush(t, db)
		case 1:
			ldbCompact(t, db, "", "")
		}
		if string(got2) != "hdr:v1"+big {
			t.Fatalf("stage %d: a value read changed with later writes", stage)
		}
		ldbWant(t, db, "big", "small")
		sv, err := s.GetAppend(nil, []byte("big"))
		if err != nil || string(sv) != big {
			t.Fatalf("stage %d: snapshot GetAppend = %s, %v", stage, ldbShort(string(sv)), err)
		}
		ldbSet(t, db, "foo", "v1")
		ldbSet(t, db, "big", big)
	}
}

// TestRocksDBBasic_IterRefreshBigValue ports DBIteratorTest's Refresh
// tests with values past the block size (DBTest2's big-value iterator
// scenarios): an iterator keeps its view while values are overwritten,
// keys added and deleted, and memtables flushed; after Refresh it sees
// all of that, in both directions, and a value read before Refresh
// stays readable as a copy.
func TestRocksDBBasic_IterRefreshBigValue(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{MemTableSize: 64 << 10, BlockSize: 512})
	defer ldbClose(t, db)
	rng := rand.New(rand.NewPCG(301, 6))
	model := map[string]string{}
	for i := range 20 {
		k := rdKey(i, i%2 == 1)
		model[k] = ldbRandom(rng, 8<<10)
		ldbSet(t, db, k, model[k])
	}
	it, err := db.NewIter(nil)
	must1(t, err)
	defer it.Close()
	old := rbIterContents(t, it)
	rdCheck(t, db, model, nil, "written")
	for i := range 30 {
		k := rdKey(i, i%2 == 1)
		switch {
		case i%4 == 0:
			ldbDelete(t, db, k)
			delete(model, k)
		default:
			model[k] = ldbRandom(rng, 5<<10+i)
			ldbSet(t, db, k, model[k])
		}
	}
	waitLDB(t, db)
	if got := rbIterContents(t, it); got != old {
		t.Fatal("an iterator's view changed before Refresh")
	}
	must1(t, it.Refresh())
	want := ldbContents(t, db)
	if got := rbIterContents(t, it); got != want {
		t.Fatalf("after Refresh the iterator shows %d bytes, the DB %d", len(got), len(want))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		if string(it.Value()) != model[string(it.Key())] {
			t.Fatalf("after Refresh, backward: %s has the wrong value", ldbShort(string(it.Key())))
		}
	}
}

// rbIterContents returns what it shows scanning forward.
func rbIterContents(t *testing.T, it *kv.Iterator) string {
	t.Helper()
	var b strings.Builder
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Fprintf(&b, "(%s->%s)", it.Key(), it.Value())
	}
	must1(t, it.Error())
	return b.String()
}

// TestRocksDBBasic_ConcurrentFlushWAL ports DBTest2.ConcurrentFlushWAL
// (and DBWALTest's SyncWAL with concurrent writers): while writers
// commit NoSync writes, a Sync write makes durable every write
// acknowledged before it; after a power loss, each writer's writes that
// survive are a prefix of its acknowledged ones, and include all that a
// completed Sync covered. Run with and without BackgroundWALWrites.
func TestRocksDBBasic_ConcurrentFlushWAL(t *testing.T) {
	for _, bg := range []bool{false, true} {
		t.Run(fmt.Sprintf("bg=%v", bg), func(t *testing.T) { rbConcurrentFlushWAL(t, bg) })
	}
}

func rbConcurrentFlushWAL(t *testing.T, bg bool) {
	const writers = 4
	mem := vfs.NewStrictMem()
	fs := newCrashFS(mem)
	o := &kv.Options{BackgroundWALWrites: bg, MemTableSize: 1 << 20}
	db := ldbOpen(t, fs, o)
	var acked [writers]atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if db.Set([]byte(fmt.Sprintf("w%d-%06d", w, i)), []byte("v"), kv.NoSync) != nil {
					return
				}
				acked[w].Store(int64(i + 1))
			}
		}()
	}
	var durable [writers]int64
	syncs := 50
	if testing.Short() {
		syncs = 15
	}
	for i := range syncs {
		var floor [writers]int64
		for w := range writers {
			floor[w] = acked[w].Load()
		}
		must1(t, db.Set([]byte(fmt.Sprintf("sync%03d", i)), []byte("s"), kv.Sync))
		durable = floor
	}
	if durable == [writers]int64{} {
		t.Fatal("no NoSync write was acknowledged before a Sync")
	}
	fs.arm(fs.count()) // the power goes off
	stop.Store(true)
	wg.Wait()
	_ = db.Close()
	mem.ResetToSyncedState()
	db = ldbOpen(t, mem, o)
	defer ldbClose(t, db)
	ldbWant(t, db, fmt.Sprintf("sync%03d", syncs-1), "s")
	for w := range writers {
		keys := rdScan(t, db, &kv.IterOptions{LowerBound: []byte(fmt.Sprintf("w%d-", w)),
			UpperBound: []byte(fmt.Sprintf("w%d.", w))})
		for i, k := range keys {
			if k != fmt.Sprintf("w%d-%06d", w, i) {
				t.Fatalf("writer %d: recovered key %d is %s: not a prefix of its writes", w, i, k)
			}
		}
		if int64(len(keys)) < durable[w] {
			t.Fatalf("writer %d: %d writes recovered, %d were acknowledged before a Sync", w, len(keys), durable[w])
		}
	}
}
