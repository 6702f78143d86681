package kv_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// scanPairs scans it forward from First and returns "key=value" pairs.
func scanPairs(t *testing.T, it *kv.Iterator) []string {
	t.Helper()
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return got
}

func wantKeys(t *testing.T, what string, got []string, want string) {
	t.Helper()
	if strings.Join(got, " ") != want {
		t.Fatalf("%s: %q, want %q", what, strings.Join(got, " "), want)
	}
}

// TestIterator_Refresh checks that a refreshed iterator over the DB sees
// the sets, deletes and range deletions made since, keeps its bounds
// (those of SetBounds too), is left unpositioned, and that its clone
// keeps the old view.
func TestIterator_Refresh(t *testing.T) {
	db := openMemDB(t)
	defer mustClose(t, db)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		must(t, db.Set([]byte(k), []byte("1"), kv.NoSync))
	}
	it, err := db.NewIter(&kv.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("z")})
	must(t, err)
	defer mustClose(t, it)
	wantKeys(t, "before", scanPairs(t, it), "b=1 c=1 d=1 e=1")

	must(t, db.Set([]byte("c"), []byte("2"), kv.NoSync))
	must(t, db.Delete([]byte("b"), kv.NoSync))
	must(t, db.DeleteRange([]byte("d"), []byte("e"), kv.NoSync))
	must(t, db.Set([]byte("f"), []byte("1"), kv.NoSync))
	must(t, db.Set([]byte("a0"), []byte("1"), kv.NoSync)) // below the bound
	wantKeys(t, "not refreshed", scanPairs(t, it), "b=1 c=1 d=1 e=1")
	clone, err := it.Clone()
	must(t, err)
	defer mustClose(t, clone)

	it.SeekGE([]byte("c"))
	must(t, it.Refresh())
	if it.Valid() || it.Key() != nil {
		t.Fatalf("valid at %q after Refresh", it.Key())
	}
	wantKeys(t, "refreshed", scanPairs(t, it), "c=2 e=1 f=1")
	wantKeys(t, "the clone", scanPairs(t, clone), "b=1 c=1 d=1 e=1")

	it.SetBounds([]byte("a"), []byte("d"))
	must(t, db.Flush())
	must(t, db.Set([]byte("b"), []byte("3"), kv.NoSync))
	must(t, db.Compact(nil, []byte("z")))
	must(t, it.Refresh())
	wantKeys(t, "refreshed after SetBounds, a flush and a compaction", scanPairs(t, it), "a=1 a0=1 b=3 c=2")
	must(t, clone.Refresh())
	wantKeys(t, "the clone refreshed", scanPairs(t, clone), "b=3 c=2 e=1 f=1")
}

// TestIterator_Refresh_ReleasesTables checks that an iterator holds the
// tables of its view until Refresh moves it off them: a compaction's
// inputs stay on disk while it reads them, and are deleted once it is
// refreshed.
func TestIterator_Refresh_ReleasesTables(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs, DisableAutomaticCompactions: true})
	must(t, err)
	defer mustClose(t, db)
	for _, k := range []string{"a", "b"} {
		must(t, db.Set([]byte(k), []byte("1"), kv.NoSync))
		must(t, db.Flush())
	}
	it, err := db.NewIter(nil)
	must(t, err)
	defer mustClose(t, it)
	before := kv.TableFiles(t, fs, "db")
	must(t, db.Compact(nil, []byte("z")))
	held := kv.TableFiles(t, fs, "db")
	must(t, it.Refresh())
	must(t, db.WaitIdle(context.Background())) // the cleaner deletes in the background
	after := kv.TableFiles(t, fs, "db")
	t.Logf("tables: %v before the compaction, %v while held, %v after Refresh", before, held, after)
	for _, f := range before {
		if !slices.Contains(held, f) {
			t.Fatalf("table %s deleted while the iterator reads it", f)
		}
		if slices.Contains(after, f) {
			t.Fatalf("table %s still on disk after Refresh", f)
		}
	}
	if len(before) != 2 || len(after) != 1 {
		t.Fatalf("%d tables before the compaction, %d after Refresh; want 2 and 1", len(before), len(after))
	}
	wantKeys(t, "refreshed", scanPairs(t, it), "a=1 b=1")
}

// TestIterator_Refresh_Snapshot checks that an iterator over a snapshot
// keeps the snapshot's view when refreshed, and that once the snapshot
// is closed Refresh fails with ErrClosed and leaves the iterator where
// it was.
func TestIterator_Refresh_Snapshot(t *testing.T) {
	db := openMemDB(t)
	defer mustClose(t, db)
	must(t, db.Set([]byte("a"), []byte("1"), kv.NoSync))
	snap := db.NewSnapshot()
	it, err := snap.NewIter(nil)
	must(t, err)
	defer mustClose(t, it)
	must(t, db.Set([]byte("a"), []byte("2"), kv.NoSync))
	must(t, db.Set([]byte("b"), []byte("2"), kv.NoSync))
	must(t, db.Flush())
	must(t, db.Compact(nil, []byte("z")))
	must(t, it.Refresh())
	wantKeys(t, "refreshed over the snapshot", scanPairs(t, it), "a=1")

	must(t, snap.Close())
	it.First()
	if err := it.Refresh(); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Refresh after the snapshot closed: %v, want ErrClosed", err)
	}
	if !it.Valid() || string(it.Key()) != "a" || string(it.Value()) != "1" {
		t.Fatalf("a failed Refresh moved the iterator: valid %v at %q", it.Valid(), it.Key())
	}
}

// TestIterator_Refresh_IndexedBatch checks that a refreshed iterator over
// an indexed batch sees the batch's writes made since, over the DB's
// writes made since; and that once the batch is closed (it loses its
// index) Refresh fails with ErrNotIndexed.
func TestIterator_Refresh_IndexedBatch(t *testing.T) {
	db := openMemDB(t)
	defer mustClose(t, db)
	must(t, db.Set([]byte("a"), []byte("db"), kv.NoSync))
	b := db.NewIndexedBatch()
	must(t, b.Set([]byte("b"), []byte("batch")))
	it, err := b.NewIter(nil)
	must(t, err)
	defer mustClose(t, it)
	must(t, b.Set([]byte("c"), []byte("batch")))
	must(t, b.DeleteRange([]byte("a"), []byte("b")))
	must(t, db.Set([]byte("d"), []byte("db"), kv.NoSync))
	wantKeys(t, "not refreshed", scanPairs(t, it), "a=db b=batch")
	must(t, it.Refresh())
	wantKeys(t, "refreshed", scanPairs(t, it), "b=batch c=batch d=db")

	b.Reset()
	must(t, b.Set([]byte("e"), []byte("batch")))
	must(t, it.Refresh())
	wantKeys(t, "refreshed after Reset", scanPairs(t, it), "a=db d=db e=batch")

	b.Close()
	if err := it.Refresh(); !errors.Is(err, kv.ErrNotIndexed) {
		t.Fatalf("Refresh after the batch closed: %v, want ErrNotIndexed", err)
	}
}

// TestIterator_Refresh_Closed checks that Refresh of a closed iterator,
// or of one whose DB is closed, fails with ErrClosed.
func TestIterator_Refresh_Closed(t *testing.T) {
	db := openMemDB(t)
	it, err := db.NewIter(nil)
	must(t, err)
	must(t, it.Close())
	if err := it.Refresh(); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Refresh of a closed iterator: %v, want ErrClosed", err)
	}
	it, err = db.NewIter(nil)
	must(t, err)
	if err := db.Close(); !errors.Is(err, kv.ErrLeaked) {
		t.Fatalf("Close with an iterator open: %v, want ErrLeaked", err)
	}
	if err := it.Refresh(); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Refresh after DB.Close: %v, want ErrClosed", err)
	}
	if err := it.Close(); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Close after DB.Close: %v, want ErrClosed", err)
	}
}

// openMemDB opens a store with default options on a fresh in-memory FS.
func openMemDB(t testing.TB) *kv.DB {
	t.Helper()
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem()})
	must(t, err)
	return db
}
