package kv_test

import (
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// pbWantIter checks a scan of an open iterator.
func pbWantIter(t *testing.T, what string, it *kv.Iterator, want string) {
	t.Helper()
	if got := pbScanIter(t, it); got != want {
		t.Errorf("%s: scan %q, want %q", what, got, want)
	}
}

// TestPortBatch_IndexedMutation ports Pebble's testdata/
// indexed_batch_mutation (points and range deletions; range keys left
// out) to bloomkv's rule: an iterator over an indexed batch sees the
// writes the batch held at NewIter; SetBounds and Clone keep that view
// (Pebble's SetOptions refreshes it, and its Clone may); Refresh moves
// it to the batch's writes so far over the DB's current state. Get sees
// every write at once.
func TestPortBatch_IndexedMutation(t *testing.T) {
	db := pitOpen(t, nil)
	b := db.NewIndexedBatch()
	pbOps(t, b, "set foo foo")
	i0 := pitIter(t, b, nil)
	pbWantIter(t, "i0", i0, "foo=foo")

	pbOps(t, b, "set bar bar")
	if i0.Prev(); i0.Valid() {
		t.Errorf("Prev of an exhausted iterator: at %q", i0.Key())
	}
	pbWantIter(t, "i0 after a Set to the batch", i0, "foo=foo")
	pbWantGets(t, "Get after a Set to the batch", b, "bar=bar foo=foo")
	i0.SetBounds(nil, nil)
	pbWantIter(t, "i0 after SetBounds", i0, "foo=foo")
	pbMust(t, i0.Refresh())
	pbWantIter(t, "i0 refreshed", i0, "bar=bar foo=foo")

	pbOps(t, b, "delrange f g")
	pbWantIter(t, "i0 after a DeleteRange to the batch", i0, "bar=bar foo=foo")
	pbWantGets(t, "Get after the DeleteRange", b, "foo=- bar=bar")
	i0.SetBounds([]byte("a"), []byte("z"))
	pbWantIter(t, "i0 after the DeleteRange and SetBounds", i0, "bar=bar foo=foo")
	i0.SetBounds(nil, nil)
	pbMust(t, i0.Refresh())
	if i0.SeekGE([]byte("foo")) {
		t.Errorf("i0 refreshed: SeekGE(foo) at %q", i0.Key())
	}
	if !i0.SeekLT([]byte("foo")) || string(i0.Key()) != "bar" {
		t.Errorf("i0 refreshed: SeekLT(foo) not at bar")
	}

	// Clones keep the view of the iterator they clone.
	b2 := db.NewIndexedBatch()
	pbOps(t, b2, "set foo foo")
	i1 := pitIter(t, b2, nil)
	pbOps(t, b2, "set bar bar; delrange f g")
	i2, err := i1.Clone()
	pbMust(t, err)
	defer i2.Close()
	pbWantIter(t, "i1", i1, "foo=foo")
	pbWantIter(t, "i2, a clone of i1", i2, "foo=foo")
	pbMust(t, i2.Refresh())
	pbWantIter(t, "i2 refreshed", i2, "bar=bar")
	pbWantIter(t, "i1 after its clone's Refresh", i1, "foo=foo")

	// A write to the DB: unseen by the open iterators, seen by a new one
	// and, as bloomkv refreshes a batch iterator over the DB's current
	// state, by a refreshed one (Pebble's SetOptions refreshes only the
	// batch: TestIndexedBatch_GlobalVisibility).
	pbMust(t, db.Apply(pbBatch(t, db, "set apple apple; set fig fig"), nil))
	pbWantIter(t, "i1 after a DB write", i1, "foo=foo")
	i5 := pitIter(t, b2, nil)
	pbWantIter(t, "a new iterator after a DB write", i5, "apple=apple bar=bar")
	pbMust(t, i1.Refresh())
	pbWantIter(t, "i1 refreshed after a DB write", i1, "apple=apple bar=bar")

	// A clone of an iterator made before the batch's range deletion does
	// not take the deletion the later iterators gathered.
	b3 := db.NewIndexedBatch()
	pbOps(t, b3, "set foo foo")
	j1 := pitIter(t, b3, nil)
	pbOps(t, b3, "delrange a z")
	pbWantIter(t, "an iterator after delrange a z", pitIter(t, b3, nil), "")
	j3, err := j1.Clone()
	pbMust(t, err)
	defer j3.Close()
	pbWantIter(t, "a clone from before the range deletion", j3, "apple=apple fig=fig foo=foo")
}

// TestPortBatch_IndexedIterStepsOldView moves an iterator over an
// indexed batch through the batch's keys while the batch changes under
// it: its steps keep showing the view of NewIter, forward and back.
func TestPortBatch_IndexedIterStepsOldView(t *testing.T) {
	db := pitOpen(t, nil)
	pbMust(t, db.Set([]byte("d"), []byte("db"), nil))
	b := db.NewIndexedBatch()
	pbOps(t, b, "set a 1; set c 3; set e 5")
	it := pitIter(t, b, nil)
	if !it.First() || string(it.Key()) != "a" {
		t.Fatal("First not at a")
	}
	pbOps(t, b, "set b 2; del c; delrange d e; set a 9")
	var got []string
	for ok := it.Next(); ok; ok = it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	for ok := it.Prev(); ok; ok = it.Prev() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	pbMust(t, it.Error())
	wantKeys(t, "steps after the batch changed", got, "c=3 d=db e=5 e=5 d=db c=3 a=1")
	pbMust(t, it.Refresh())
	pbWantIter(t, "refreshed", it, "a=9 b=2 e=5")
}

// TestPortBatch_IndexedGetOverDB ports Pebble's TestBatchGet (the batch
// over a DB) and RocksDB's WriteBatchWithIndex GetFromBatchAndDB: an
// indexed batch's reads see the DB's deletes and range deletions, and the
// writes to the DB made after the batch was created, under the batch's
// own writes, which shadow any of the DB's; after Apply the DB agrees.
func TestPortBatch_IndexedGetOverDB(t *testing.T) {
	db := pitOpen(t, nil)
	pbMust(t, db.Apply(pbBatch(t, db, "set a 0; set b 0; set c 0; set d 0; set e 0"), nil))
	pbMust(t, db.Flush())
	pbMust(t, db.Apply(pbBatch(t, db, "del b; delrange c e"), nil))
	b := db.NewIndexedBatch()
	pbOps(t, b, "set d 1")
	pbWantGets(t, "over the DB's deletions", b, "a=0 b=- c=- d=1 e=0")
	pbWantScan(t, "over the DB's deletions", b, "a=0 d=1 e=0")

	// Writes to the DB after the batch was made show through, except
	// where the batch wrote.
	pbMust(t, db.Set([]byte("b"), []byte("2"), nil))
	pbMust(t, db.DeleteRange([]byte("a"), []byte("e"), nil))
	pbMust(t, db.Set([]byte("f"), []byte("2"), nil))
	pbWantGets(t, "after later DB writes", b, "a=- b=- d=1 e=0 f=2")
	pbWantScan(t, "after later DB writes", b, "d=1 e=0 f=2")
	pbOps(t, b, "del f; delrange e f; set a 1")
	pbWantScan(t, "after more batch writes", b, "a=1 d=1")
	pbMust(t, db.Apply(b, nil))
	pbWantScan(t, "applied", db, "a=1 d=1")
	pbWantScan(t, "the batch, applied", b, "a=1 d=1")
}

// TestPortBatch_IndexedOverSnapshot checks Snapshot.NewIndexedBatch: its
// reads see its writes over the snapshot's state, never the DB's later
// writes (Refresh included); applied, its writes land on the DB's
// current state, so its range deletion covers the DB's keys written
// after the snapshot too.
func TestPortBatch_IndexedOverSnapshot(t *testing.T) {
	db := pitOpen(t, nil)
	pbMust(t, db.Apply(pbBatch(t, db, "set a 0; set b 0; set c 0"), nil))
	snap := db.NewSnapshot()
	defer snap.Close()
	pbMust(t, db.Apply(pbBatch(t, db, "set a 1; del b; set bb 1; set d 1"), nil))
	b := snap.NewIndexedBatch()
	pbOps(t, b, "set c 2")
	pbWantGets(t, "over the snapshot", b, "a=0 b=0 bb=- c=2 d=-")
	it := pitIter(t, b, nil)
	pbWantIter(t, "over the snapshot", it, "a=0 b=0 c=2")
	pbOps(t, b, "delrange b c")
	pbMust(t, it.Refresh())
	pbWantIter(t, "refreshed", it, "a=0 c=2")
	pbMust(t, db.Apply(b, nil))
	pbWantScan(t, "applied", db, "a=1 c=2 d=1")
	pbWantScan(t, "the snapshot", snap, "a=0 b=0 c=0")

	// Applied after its snapshot closed: its reads fail, its writes go.
	b2 := snap.NewIndexedBatch()
	pbOps(t, b2, "set s 1")
	pbMust(t, snap.Close())
	if _, err := b2.Get([]byte("s")); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("Get after the snapshot closed: %v, want ErrClosed", err)
	}
	pbMust(t, db.Apply(b2, nil))
	pbWantGets(t, "applied after its snapshot closed", db, "s=1")
}

// TestPortBatch_IndexedPrefix ports Pebble's batch iterator prefix
// seeks: SeekPrefixGE over an indexed batch sees the batch's writes and
// range deletions within the prefix, over the DB's tables.
func TestPortBatch_IndexedPrefix(t *testing.T) {
	db := pitOpen(t, &kv.Options{Comparer: pitSlashComparer()})
	pbMust(t, db.Apply(pbBatch(t, db, "set a/1 0; set a/2 0; set a/4 0; set b/1 0; set c/1 0"), nil))
	pbMust(t, db.Flush())
	b := db.NewIndexedBatch()
	pbOps(t, b, "set a/3 1; del a/1; delrange a/2 a/3; set b/2 1; delrange c/ c/z")
	it := pitIter(t, b, nil)
	for _, c := range []struct{ seek, want string }{
		{"a/", "a/3 a/4"}, {"a/3", "a/3 a/4"}, {"b/", "b/1 b/2"}, {"c/", ""}, {"d/", ""},
	} {
		var got []string
		for ok := it.SeekPrefixGE([]byte(c.seek)); ok; ok = it.Next() {
			got = append(got, string(it.Key()))
		}
		pbMust(t, it.Error())
		wantKeys(t, "SeekPrefixGE("+c.seek+")", got, c.want)
	}
}

// TestPortBatch_IndexedResetAndClose checks an iterator open while its
// batch is reset or closed: it keeps its view; Refresh then shows the
// reset batch's reads (the DB alone) or fails with ErrNotIndexed once the
// batch is closed, as Refresh documents.
func TestPortBatch_IndexedResetAndClose(t *testing.T) {
	db := pitOpen(t, nil)
	pbMust(t, db.Set([]byte("d"), []byte("db"), nil))
	b := db.NewIndexedBatch()
	pbOps(t, b, "set a 1; delrange c e")
	it := pitIter(t, b, nil)
	b.Reset()
	pbWantIter(t, "after Reset", it, "a=1")
	pbMust(t, it.Refresh())
	pbWantIter(t, "after Reset, refreshed", it, "d=db")
	pbOps(t, b, "set z 1")
	pbMust(t, it.Refresh())
	b.Close()
	pbWantIter(t, "after Close", it, "d=db z=1")
	if err := it.Refresh(); !errors.Is(err, kv.ErrNotIndexed) {
		t.Errorf("Refresh after the batch's Close: %v, want ErrNotIndexed", err)
	}
}

// TestPortBatch_IndexedEdges ports goleveldb's TestBatch checks of
// argument reuse and empty keys, and Pebble's bounded batch iterators: a
// batch keeps copies of its arguments, an empty key is a key like any
// other (a range from it covers it), and a bounded iterator over an
// indexed batch cuts the batch's range deletions at its bounds.
func TestPortBatch_IndexedEdges(t *testing.T) {
	db := pitOpen(t, nil)
	pbMust(t, db.Apply(pbBatch(t, db, "set a 0; set c 0; set n 0; set o 0; set q 0"), nil))
	b := db.NewIndexedBatch()
	key, value := []byte("k"), []byte("v1")
	pbMust(t, b.Set(key, value))
	key[0], value[1] = 'x', '2'
	pbMust(t, b.Set(nil, []byte("empty")))
	pbWantGets(t, "arguments reused", b, "k=v1 x=-")
	if got := pbGet(t, b, ""); got != "empty" {
		t.Errorf("Get of the empty key: %q", got)
	}
	pbMust(t, b.DeleteRange(nil, []byte("b")))
	if got := pbGet(t, b, ""); got != "-" {
		t.Errorf("Get of the empty key after a range from it: %q", got)
	}
	pbOps(t, b, "delrange c j")
	it := pitIter(t, b, &kv.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("p")})
	pbWantIter(t, "bounded [b, p)", it, "k=v1 n=0 o=0")
	if !it.SeekLT([]byte("n")) || string(it.Key()) != "k" {
		t.Errorf("SeekLT(n) not at k")
	}
	if !it.SeekGE([]byte("d")) || string(it.Key()) != "k" {
		t.Errorf("SeekGE(d) not at k")
	}
	pbMust(t, db.Apply(b, nil))
	pbWantScan(t, "applied", db, "k=v1 n=0 o=0 q=0")
}
