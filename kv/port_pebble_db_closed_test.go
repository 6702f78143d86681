package kv_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestPortPebbleDBClosed ports Pebble's TestDBClosed: after Close every
// method of the DB, and of the snapshots, indexed batches and iterators
// it made, returns ErrClosed where Pebble panics; none panics.
func TestPortPebbleDBClosed(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	pbMust(t, db.Set([]byte("a"), []byte("a"), kv.NoSync))
	snap := db.NewSnapshot()
	ib := db.NewIndexedBatch()
	pbMust(t, ib.Set([]byte("b"), []byte("b")))
	it, err := db.NewIter(nil)
	pbMust(t, err)
	if err := db.Close(); !errors.Is(err, kv.ErrLeaked) {
		t.Fatalf("Close with a snapshot and an iterator open = %v, want ErrLeaked", err)
	}
	b := db.NewBatch()
	pbMust(t, b.Set([]byte("c"), []byte("c")))
	wantClosed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, kv.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", what, err)
		}
	}
	wantClosed("Close", db.Close())
	_, err = db.Get([]byte("a"))
	wantClosed("Get", err)
	_, err = db.GetAppend(nil, []byte("a"))
	wantClosed("GetAppend", err)
	wantClosed("Set", db.Set([]byte("a"), nil, kv.NoSync))
	wantClosed("Delete", db.Delete([]byte("a"), kv.Sync))
	wantClosed("DeleteRange", db.DeleteRange([]byte("a"), []byte("b"), kv.NoSync))
	wantClosed("Apply", db.Apply(b, kv.NoSync))
	wantClosed("Apply of an indexed batch", db.Apply(ib, kv.NoSync))
	wantClosed("Flush", db.Flush())
	wantClosed("Compact", db.Compact([]byte("a"), []byte("z")))
	wantClosed("Checkpoint", db.Checkpoint("cp"))
	wantClosed("Ingest", db.Ingest([]string{"x.sst"}))
	_, err = db.EstimateDiskUsage([]byte("a"), []byte("z"))
	wantClosed("EstimateDiskUsage", err)
	wantClosed("WaitIdle", db.WaitIdle(context.Background()))
	_, err = db.NewIter(nil)
	wantClosed("NewIter", err)
	_, err = db.NewSnapshot().Get([]byte("a"))
	wantClosed("a new snapshot's Get", err)
	_, err = db.NewIndexedBatch().Get([]byte("a"))
	wantClosed("a new indexed batch's Get", err)
	_, err = snap.Get([]byte("a"))
	wantClosed("Snapshot.Get", err)
	_, err = snap.NewIter(nil)
	wantClosed("Snapshot.NewIter", err)
	wantClosed("Snapshot.Close", snap.Close())
	_, err = ib.Get([]byte("a"))
	wantClosed("indexed Batch.Get", err)
	_, err = ib.NewIter(nil)
	wantClosed("indexed Batch.NewIter", err)
	if it.First() {
		t.Errorf("a leaked iterator's First after Close found %q", it.Key())
	}
	wantClosed("leaked Iterator.Error", it.Error())
	_ = db.Metrics() // must not panic
}

// TestPortPebbleDBConcurrentCommitCompactFlush ports Pebble's
// TestDBConcurrentCommitCompactFlush: writers commit while others compact
// and flush; every write is found afterwards.
func TestPortPebbleDBConcurrentCommitCompactFlush(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	n := 200
	if testing.Short() {
		n = 50
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := db.Set([]byte(fmt.Sprintf("k%03d", i)), []byte("v"), kv.NoSync)
			switch {
			case err != nil:
			case i%3 == 0:
				err = db.Compact([]byte("k"), []byte("l"))
			case i%3 == 1:
				err = db.Flush()
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		pbMust(t, err)
	}
	for i := 0; i < n; i++ {
		if got := pbGet(t, db, fmt.Sprintf("k%03d", i)); got != "v" {
			t.Fatalf("Get(k%03d) = %q", i, got)
		}
	}
}

// TestPortPebbleDBConcurrentCompactClose ports Pebble's
// TestDBConcurrentCompactClose: Close while compactions run waits for
// them, or they end with ErrClosed; nothing panics, and the store
// reopens whole.
func TestPortPebbleDBConcurrentCompactClose(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{L0CompactionThreshold: 2, MemTableSize: 64 << 10}
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for r := 0; r < rounds; r++ {
		db := ldbOpen(t, fs, o)
		for j := 0; j < 4; j++ {
			pbMust(t, db.Set([]byte(fmt.Sprintf("k%02d-%d", r, j)), []byte("v"), kv.NoSync))
			pbMust(t, db.Flush())
		}
		done := make(chan error, 1)
		go func() { done <- db.Compact([]byte("k"), []byte("l")) }()
		pbMust(t, db.Close())
		if err := <-done; err != nil && !errors.Is(err, kv.ErrClosed) {
			t.Fatalf("round %d: Compact racing Close = %v", r, err)
		}
	}
	db := ldbOpen(t, fs, o)
	defer ldbClose(t, db)
	pbWantGets(t, "reopened", db, "k00-0=v k04-3=v")
}

// TestPortPebbleDBApplyBatchNilDB ports Pebble's TestDBApplyBatchNilDB: a
// batch made without a DB (Pebble's newBatch(nil)) applies to any DB.
func TestPortPebbleDBApplyBatchNilDB(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	var none *kv.DB
	b := none.NewBatch()
	pbMust(t, b.Set([]byte("a"), []byte("1")))
	pbMust(t, db.Apply(b, kv.NoSync))
	pbWantGets(t, "applied", db, "a=1")
}

// TestPortPebbleDBApplyBatchMismatch ports Pebble's
// TestDBApplyBatchMismatch: an indexed batch of one DB applied to another
// is refused (Pebble panics; bloomkv returns an error, see DB.Apply) and
// writes nothing; a plain batch may go to any DB.
func TestPortPebbleDBApplyBatchMismatch(t *testing.T) {
	srcDB := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, srcDB)
	applyDB := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, applyDB)
	ib := srcDB.NewIndexedBatch()
	pbMust(t, ib.Set([]byte("a"), []byte("1")))
	if err := applyDB.Apply(ib, kv.NoSync); err == nil {
		t.Errorf("Apply of another DB's indexed batch succeeded")
	}
	pbWantGets(t, "refused", applyDB, "a=-")
	pbMust(t, srcDB.Apply(ib, kv.NoSync))
	pbWantGets(t, "source", srcDB, "a=1")
	b := srcDB.NewBatch()
	pbMust(t, b.Set([]byte("b"), []byte("2")))
	pbMust(t, applyDB.Apply(b, kv.NoSync))
	pbWantGets(t, "plain batch", applyDB, "b=2")
}

// TestPortPebbleDBCloseCleanerRace ports Pebble's TestCloseCleanerRace:
// an iterator that outlives a compaction holds its tables; closing it
// just before the DB, which queues their deletion, races the cleaner's
// goroutine with Close. Close must neither fail nor leave them behind for
// long: the next Open removes what was left.
func TestPortPebbleDBCloseCleanerRace(t *testing.T) {
	fs := vfs.NewMem()
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	for r := 0; r < rounds; r++ {
		db := ldbOpen(t, fs, nil)
		pbMust(t, db.Set([]byte("a"), []byte("a"), kv.NoSync))
		pbMust(t, db.Set([]byte("b"), []byte("b"), kv.NoSync))
		pbMust(t, db.Flush())
		it, err := db.NewIter(nil)
		pbMust(t, err)
		pbMust(t, db.Compact([]byte("a"), []byte("b")))
		pbMust(t, it.Close())
		pbMust(t, db.Close())
	}
	db := ldbOpen(t, fs, nil)
	defer ldbClose(t, db)
	pbMust(t, db.WaitIdle(context.Background()))
	live := ldbTables(db)
	names, err := fs.List("db")
	pbMust(t, err)
	files := 0
	for _, n := range names {
		if len(n) > 4 && n[len(n)-4:] == ".sst" {
			files++
		}
	}
	if files != live {
		t.Errorf("%d table files on disk, %d live: %v", files, live, names)
	}
	pbWantGets(t, "reopened", db, "a=a b=b")
}
