package kv_test

// The port_batch_*_test.go files port the behavioural batch scenarios of
// Pebble v1.1.5 (batch_test.go, testdata/batch_get, batch_range_ops,
// indexed_batch_mutation), goleveldb's leveldb/batch_test.go and
// RocksDB's db/write_batch_test.cc and db/db_write_test.cc to bloomkv's
// API. Pebble's Commit becomes DB.Apply, its SetOptions (which refreshes
// an indexed batch iterator's view of the batch) becomes Refresh, as
// bloomkv's SetBounds keeps the view; merges, range keys, LogData and
// deferred ops, which bloomkv has not, are left out. Each test names
// what it ports.

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// pbGetter is what pbGet reads: a DB, a Snapshot or an indexed Batch.
type pbGetter interface {
	Get(key []byte) ([]byte, error)
}

// pbGet returns the value of key in r, "-" when it is not found.
func pbGet(t *testing.T, r pbGetter, key string) string {
	t.Helper()
	v, err := r.Get([]byte(key))
	if errors.Is(err, kv.ErrNotFound) {
		return "-"
	}
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return string(v)
}

// pbWantGets checks pbGet of each "key=value" (value "-": not found).
func pbWantGets(t *testing.T, what string, r pbGetter, want string) {
	t.Helper()
	for _, kvp := range strings.Fields(want) {
		k, v, _ := strings.Cut(kvp, "=")
		if got := pbGet(t, r, k); got != v {
			t.Errorf("%s: Get(%q) = %q, want %q", what, k, got, v)
		}
	}
}

// pbScan returns r's contents, forward, as "k=v k=v", checking that a
// backward scan shows the same.
func pbScan(t *testing.T, r pitNewIter) string {
	t.Helper()
	it, err := r.NewIter(nil)
	if err != nil {
		t.Fatalf("NewIter: %v", err)
	}
	defer it.Close()
	return pbScanIter(t, it)
}

// pbScanIter is pbScan of an open iterator.
func pbScanIter(t *testing.T, it *kv.Iterator) string {
	t.Helper()
	fwd := scanPairs(t, it)
	var back []string
	for ok := it.Last(); ok; ok = it.Prev() {
		back = append([]string{string(it.Key()) + "=" + string(it.Value())}, back...)
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	f, b := strings.Join(fwd, " "), strings.Join(back, " ")
	if f != b {
		t.Fatalf("forward scan %q, backward %q", f, b)
	}
	return f
}

// pbWantScan checks pbScan of r.
func pbWantScan(t *testing.T, what string, r pitNewIter, want string) {
	t.Helper()
	if got := pbScan(t, r); got != want {
		t.Errorf("%s: scan %q, want %q", what, got, want)
	}
}

// pbMust fails the test on err.
func pbMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// pbOps adds the writes of a script to b: "set k v", "del k",
// "delrange a b", separated by ";".
func pbOps(t *testing.T, b *kv.Batch, script string) {
	t.Helper()
	for op := range strings.SplitSeq(script, ";") {
		f := strings.Fields(op)
		var err error
		switch {
		case len(f) == 3 && f[0] == "set":
			err = b.Set([]byte(f[1]), []byte(f[2]))
		case len(f) == 2 && f[0] == "del":
			err = b.Delete([]byte(f[1]))
		case len(f) == 3 && f[0] == "delrange":
			err = b.DeleteRange([]byte(f[1]), []byte(f[2]))
		default:
			t.Fatalf("bad op %q", op)
		}
		pbMust(t, err)
	}
}

// TestPortBatch_Empty ports Pebble's TestBatchEmpty and RocksDB's
// WriteBatchTest.Empty: each kind of write makes a batch non-empty,
// Reset empties it, and an empty batch applied writes nothing and takes
// no sequence number (a later batch still sees nothing new).
func TestPortBatch_Empty(t *testing.T) {
	db := pitOpen(t, nil)
	for _, op := range []string{"set a 1", "del a", "delrange a b", "set  ", "delrange  "} {
		b := db.NewBatch()
		if !b.Empty() || b.Count() != 0 || b.Len() != 12 {
			t.Fatalf("new batch: Empty %v, Count %d, Len %d", b.Empty(), b.Count(), b.Len())
		}
		var err error
		switch f := strings.Split(op, " "); f[0] {
		case "set":
			err = b.Set([]byte(f[1]), []byte(f[2]))
		case "del":
			err = b.Delete([]byte(f[1]))
		case "delrange":
			err = b.DeleteRange([]byte(f[1]), []byte(f[2]))
		}
		pbMust(t, err)
		if b.Empty() || b.Count() != 1 {
			t.Errorf("after %q: Empty %v, Count %d", op, b.Empty(), b.Count())
		}
		b.Reset()
		if !b.Empty() || b.Count() != 0 || b.Len() != 12 {
			t.Errorf("after %q and Reset: Empty %v, Count %d, Len %d", op, b.Empty(), b.Count(), b.Len())
		}
		b.Close()
	}
	for _, b := range []*kv.Batch{db.NewBatch(), db.NewIndexedBatch(), {}} {
		pbMust(t, db.Apply(b, kv.Sync))
		pbMust(t, db.Apply(b, kv.NoSync))
	}
	pbWantScan(t, "after empty batches", db, "")
	// An empty indexed batch reads the DB; a clone of its iterator too,
	// and a clone of a closed iterator fails.
	pbMust(t, db.Set([]byte("x"), []byte("1"), nil))
	ib := db.NewIndexedBatch()
	it := pitIter(t, ib, nil)
	c, err := it.Clone()
	pbMust(t, err)
	defer c.Close()
	pbMust(t, it.Close())
	if _, err := it.Clone(); err == nil {
		t.Error("Clone of a closed iterator: no error")
	}
	if got := pbScanIter(t, c); got != "x=1" {
		t.Errorf("clone of an empty indexed batch's iterator: %q", got)
	}
}

// TestPortBatch_Len ports Pebble's TestBatchLen and RocksDB's
// WriteBatchTest.Multiple (Count): the encoded size grows by each
// record's bytes as doc.go draws them. A DEL record carries an empty
// value's length byte, which Pebble's lacks: 44 where Pebble has 43.
func TestPortBatch_Len(t *testing.T) {
	b := pitOpen(t, nil).NewBatch()
	step := func(what string, err error, wantLen, wantCount int) {
		t.Helper()
		pbMust(t, err)
		if b.Len() != wantLen || b.Count() != wantCount {
			t.Errorf("after %s: Len %d, Count %d, want %d, %d", what, b.Len(), b.Count(), wantLen, wantCount)
		}
	}
	step("nothing", nil, 12, 0)
	step("Set", b.Set([]byte("test-key"), []byte("test-value")), 33, 1)
	step("Delete", b.Delete([]byte("test-key")), 44, 2)
	step("DeleteRange", b.DeleteRange([]byte("a"), []byte("bb")), 50, 3)
	step("Set of 200 bytes", b.Set([]byte("k"), bytes.Repeat([]byte("v"), 200)), 50+1+1+1+2+200, 4)
}

// TestPortBatch_EveryKind ports RocksDB's WriteBatchTest.Multiple and
// goleveldb's TestBatch (a batch of puts and deletes replayed in order):
// a batch with each kind applied, read by Get and iterators, before and
// after a flush and a reopen.
func TestPortBatch_EveryKind(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	pbMust(t, db.Apply(pbBatch(t, db, "set baz 0; set c 3; set e 5; set z 9"), kv.NoSync))
	b := pbBatch(t, db, "set foo bar; del baz; set boo bar; delrange c e; set d 4; del nope")
	if b.Count() != 6 {
		t.Fatalf("Count %d, want 6", b.Count())
	}
	pbMust(t, db.Apply(b, kv.Sync))
	const want = "boo=bar d=4 e=5 foo=bar z=9"
	check := func(what string) {
		t.Helper()
		pbWantScan(t, what, db, want)
		pbWantGets(t, what, db, "baz=- c=- d=4 nope=- foo=bar")
	}
	check("applied")
	pbMust(t, db.Flush())
	check("flushed")
	db = ldbReopen(t, db, fs, nil)
	defer db.Close()
	check("reopened")
}

// pbBatch returns a plain batch of db holding script's writes (pbOps).
func pbBatch(t *testing.T, db *kv.DB, script string) *kv.Batch {
	t.Helper()
	b := db.NewBatch()
	pbOps(t, b, script)
	return b
}

// TestPortBatch_AppliedTwice applies one batch twice. bloomkv's Apply
// stamps the batch with fresh sequence numbers each time (nothing says a
// batch is spent once applied, and Pebble refuses a second Commit only
// to guard its deferred state): the second Apply writes the same writes
// again, over what came between, so they win again.
func TestPortBatch_AppliedTwice(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	b := pbBatch(t, db, "set a 1; delrange b c; set b2 x")
	pbMust(t, db.Apply(b, kv.NoSync))
	pbMust(t, db.Set([]byte("a"), []byte("2"), nil))
	pbMust(t, db.Set([]byte("b1"), []byte("y"), nil))
	pbWantScan(t, "between", db, "a=2 b1=y b2=x")
	pbMust(t, db.Apply(b, kv.Sync))
	pbWantScan(t, "applied again", db, "a=1 b2=x")
	if b.Count() != 3 {
		t.Errorf("Count after two Applies: %d", b.Count())
	}
	db = ldbReopen(t, db, fs, nil)
	defer db.Close()
	pbWantScan(t, "reopened", db, "a=1 b2=x")
}

// TestPortBatch_ResetReuse ports Pebble's TestBatchReset and
// TestIndexedBatchReset: a batch reset after Apply takes new writes and
// applies only those; a reset indexed batch forgets its writes, range
// deletions included, and its reads see the DB again; Close, too,
// leaves a batch to reuse (as a plain one).
func TestPortBatch_ResetReuse(t *testing.T) {
	db := pitOpen(t, nil)
	b := pbBatch(t, db, "set test-key test-value; delrange a z")
	pbMust(t, db.Apply(b, nil))
	b.Reset()
	pbOps(t, b, "set k2 v2")
	pbMust(t, db.Apply(b, nil))
	pbWantScan(t, "after the reused batch", db, "k2=v2")

	ib := db.NewIndexedBatch()
	pbOps(t, ib, "delrange a z; set test-key test-value")
	pbWantScan(t, "indexed batch", ib, "test-key=test-value")
	ib.Reset()
	if !ib.Indexed() || !ib.Empty() {
		t.Fatalf("after Reset: Indexed %v, Empty %v", ib.Indexed(), ib.Empty())
	}
	pbWantScan(t, "indexed batch after Reset", ib, "k2=v2")
	pbOps(t, ib, "set test-key test-value")
	pbWantScan(t, "one Set after Reset", ib, "k2=v2 test-key=test-value")
	pbOps(t, ib, "delrange test-key test-value")
	pbWantScan(t, "its range deletion", ib, "k2=v2")
	pbWantGets(t, "its range deletion", ib, "test-key=-")
	ib.Close()
	if ib.Indexed() {
		t.Error("a closed indexed batch is still indexed")
	}
	pbOps(t, ib, "set after close")
	pbMust(t, db.Apply(ib, nil))
	pbWantScan(t, "the closed batch reused", db, "after=close k2=v2")
}

// TestPortBatch_LastWins ports goleveldb's and RocksDB's batches that
// write one key many times: the last write wins, in Get, iteration, after
// a flush and in the indexed batch itself.
func TestPortBatch_LastWins(t *testing.T) {
	db := pitOpen(t, nil)
	b := db.NewIndexedBatch()
	for i := range 1000 {
		if i%7 == 3 {
			pbMust(t, b.Delete([]byte("k")))
			continue
		}
		pbMust(t, b.Set([]byte("k"), fmt.Appendf(nil, "v%d", i)))
	}
	pbWantGets(t, "indexed", b, "k=v999")
	pbWantScan(t, "indexed", b, "k=v999")
	pbMust(t, db.Apply(b, nil))
	pbWantScan(t, "applied", db, "k=v999")
	pbMust(t, db.Flush())
	pbWantScan(t, "flushed", db, "k=v999")
	pbMust(t, db.Apply(pbBatch(t, db, "set k a; set k b; del k"), nil))
	pbWantScan(t, "ending in a delete", db, "")
	pbMust(t, db.Flush())
	pbWantGets(t, "ending in a delete, flushed", db, "k=-")
}

// TestPortBatch_ApplyRefused ports RocksDB's DBWriteTest checks of writes
// a DB cannot take: Apply to a closed DB fails with ErrClosed and to a
// read-only one with ErrReadOnly, writing nothing, and the batch stays
// whole, to be applied once the store is open for writes.
func TestPortBatch_ApplyRefused(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	pbMust(t, db.Set([]byte("a"), []byte("0"), kv.Sync))
	b := pbBatch(t, db, "set a 1; delrange b c; set b2 1")
	pbMust(t, db.Close())
	if err := db.Apply(b, kv.Sync); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("Apply to a closed DB: %v, want ErrClosed", err)
	}
	ro := ldbOpen(t, fs, &kv.Options{ReadOnly: true})
	if err := ro.Apply(b, kv.Sync); !errors.Is(err, kv.ErrReadOnly) {
		t.Errorf("Apply to a read-only DB: %v, want ErrReadOnly", err)
	}
	pbWantScan(t, "read-only, after the refused Apply", ro, "a=0")
	pbMust(t, ro.Close())
	db = ldbOpen(t, fs, nil)
	defer db.Close()
	if b.Count() != 3 {
		t.Fatalf("Count after the refused Applies: %d", b.Count())
	}
	pbMust(t, db.Apply(b, kv.Sync))
	pbWantScan(t, "applied at last", db, "a=1 b2=1")
}
