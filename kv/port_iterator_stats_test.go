package kv_test

// RocksDB's IteratorProperty and IteratorWithLocalStatistics and Pebble's
// testdata/iterator_stats, ported to bloomkv's Iterator.Stats, and
// Pebble's clone and indexed-batch iteration histories (see
// port_iterator_test.go).

import (
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// TestPortIterator_IteratorWithLocalStatistics ports RocksDB's
// IteratorWithLocalStatistics and Pebble's iterator_stats: an iterator
// over the memtable alone counts nothing; a scan over tables counts every
// table and at least one block read per block of keys; the counts only
// grow, survive Refresh, start over in a Clone, and are zero once closed.
func TestPortIterator_IteratorWithLocalStatistics(t *testing.T) {
	db := pitOpen(t, pitSmall())
	for i := 0; i < 50; i++ {
		ldbSet(t, db, ldbKey(i), "value-of-some-length-"+ldbKey(i))
	}
	it := pitIter(t, db, nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	if st := it.Stats(); st != (kv.IteratorStats{}) {
		t.Fatalf("memtable scan: Stats %+v, want zeros", st)
	}
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	_, tables := pitTables(db)
	it = pitIter(t, db, nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	st := it.Stats()
	// 50 keys of ~40 bytes in 128-byte blocks: at least 12 blocks.
	if n != 50 || st.TablesConsidered < int64(tables) || st.BlockReads < 12 {
		t.Fatalf("scan of %d keys over %d tables: Stats %+v", n, tables, st)
	}
	for ok := it.Last(); ok; ok = it.Prev() {
	}
	back := it.Stats()
	if back.BlockReads < 2*st.BlockReads || back.TablesConsidered < st.TablesConsidered {
		t.Fatalf("Stats after a backward scan %+v, after the forward one %+v", back, st)
	}
	must(t, it.Refresh())
	if got := it.Stats(); got.BlockReads < back.BlockReads {
		t.Fatalf("Stats after Refresh %+v, before %+v", got, back)
	}
	c, err := it.Clone()
	must(t, err)
	if got := c.Stats(); got != (kv.IteratorStats{}) {
		t.Fatalf("clone: Stats %+v, want zeros", got)
	}
	pitRun(t, c, pitStep{"ge:" + ldbKey(7), ldbKey(7) + "->value-of-some-length-" + ldbKey(7)})
	if got := c.Stats(); got.BlockReads == 0 || got.TablesConsidered == 0 {
		t.Fatalf("clone after a seek: Stats %+v", got)
	}
	must(t, c.Close())
	if got := c.Stats(); got != (kv.IteratorStats{}) {
		t.Fatalf("closed clone: Stats %+v, want zeros", got)
	}
}

// TestPortIterator_Clone ports Pebble's iter_histories/clone: a clone
// sees its iterator's view and bounds, not the writes made since, until
// it is refreshed; moving one moves not the other.
func TestPortIterator_Clone(t *testing.T) {
	pitLayouts(t, pitSmall(), func(t *testing.T, db *kv.DB, settle func()) {
		ldbSet(t, db, "a", "1")
		ldbSet(t, db, "b", "1")
		ldbSet(t, db, "c", "1")
		settle()
		it := pitIter(t, db, &kv.IterOptions{UpperBound: []byte("c")})
		pitRun(t, it, pitStep{"first", "a->1"})
		ldbSet(t, db, "a", "2")
		ldbDelete(t, db, "b")
		ldbSet(t, db, "b0", "2")
		settle()
		c, err := it.Clone()
		must(t, err)
		defer c.Close()
		pitRun(t, c, pitStep{"next", "(invalid)"}, pitStep{"last", "b->1"}, pitStep{"prev", "a->1"})
		pitRun(t, it, pitStep{"next", "b->1"}, pitStep{"next", "(invalid)"})
		must(t, c.Refresh())
		pitRun(t, c, pitStep{"first", "a->2"}, pitStep{"next", "b0->2"}, pitStep{"next", "(invalid)"})
		pitRun(t, it, pitStep{"last", "b->1"})
	})
}

// TestPortIterator_IndexedBatch ports Pebble's iteration over an indexed
// batch (iter_histories' batch cases, RocksDB's WriteBatchWithIndex
// iterator): the batch's writes over the DB's, its deletes hiding the
// DB's keys, both ways and across direction changes.
func TestPortIterator_IndexedBatch(t *testing.T) {
	pitLayouts(t, pitSmall(), func(t *testing.T, db *kv.DB, settle func()) {
		for _, k := range []string{"a", "b", "c", "d"} {
			ldbSet(t, db, k, "db")
		}
		settle()
		b := db.NewIndexedBatch()
		defer b.Close()
		must(t, b.Set([]byte("b"), []byte("batch")))
		must(t, b.Delete([]byte("c")))
		must(t, b.Set([]byte("e"), []byte("batch")))
		must(t, b.DeleteRange([]byte("a"), []byte("a\x00")))
		pitRun(t, pitIter(t, b, nil),
			pitStep{"first", "b->batch"}, pitStep{"next", "d->db"}, pitStep{"next", "e->batch"},
			pitStep{"prev", "d->db"}, pitStep{"prev", "b->batch"}, pitStep{"prev", "(invalid)"},
			pitStep{"le:c", "b->batch"}, pitStep{"next", "d->db"}, pitStep{"ge:c", "d->db"},
			pitStep{"last", "e->batch"})
		pitRun(t, pitIter(t, b, &kv.IterOptions{LowerBound: []byte("c"), UpperBound: []byte("e")}),
			pitStep{"first", "d->db"}, pitStep{"prev", "(invalid)"}, pitStep{"last", "d->db"},
			pitStep{"next", "(invalid)"})
	})
}
