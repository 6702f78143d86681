package kv_test

// RocksDB's DBIteratorBoundTest, UpperBoundWithChangeDirection and
// UpperBoundWithPrevReseek, and Pebble's bound cases (SeekLT under a lower
// bound, First and Last with equal bounds, empty ranges, SetBounds),
// ported to bloomkv (see port_iterator_test.go).

import (
	"strconv"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// TestPortIterator_DBIteratorBoundTest ports RocksDB's
// DBIteratorBoundTest: iteration without bounds, an upper bound that
// stops Next and Last, a bound short of deleted keys, a lower bound, and
// bounds changed on a live iterator (SetBounds). Its prefix-extractor
// part is in TestPortIterator_PrefixWithBounds.
func TestPortIterator_DBIteratorBoundTest(t *testing.T) {
	pitLayouts(t, nil, func(t *testing.T, db *kv.DB, settle func()) {
		for _, kv := range [][2]string{{"a", "0"}, {"foo", "bar"}, {"foo1", "bar1"}, {"g1", "0"}} {
			ldbSet(t, db, kv[0], kv[1])
		}
		settle()
		pitRun(t, pitIter(t, db, nil),
			pitStep{"ge:foo", "foo->bar"}, pitStep{"next", "foo1->bar1"}, pitStep{"next", "g1->0"},
			pitStep{"le:g1", "g1->0"}, pitStep{"prev", "foo1->bar1"}, pitStep{"prev", "foo->bar"})
		pitRun(t, pitIter(t, db, &kv.IterOptions{UpperBound: []byte("foo1")}),
			pitStep{"ge:foo", "foo->bar"}, pitStep{"next", "(invalid)"},
			pitStep{"ge:foo1", "(invalid)"}, pitStep{"le:g1", "foo->bar"})
		pitRun(t, pitIter(t, db, &kv.IterOptions{UpperBound: []byte("foo")}),
			pitStep{"last", "a->0"}, pitStep{"next", "(invalid)"})
		pitRun(t, pitIter(t, db, &kv.IterOptions{LowerBound: []byte("foo")}),
			pitStep{"first", "foo->bar"}, pitStep{"prev", "(invalid)"},
			pitStep{"ge:a", "foo->bar"}, pitStep{"lt:foo1", "foo->bar"}, pitStep{"prev", "(invalid)"},
			pitStep{"last", "g1->0"})
		it := pitIter(t, db, &kv.IterOptions{UpperBound: []byte("foo1")})
		pitRun(t, it, pitStep{"last", "foo->bar"})
		it.SetBounds([]byte("foo1"), nil)
		pitRun(t, it, pitStep{"next", "(invalid)"}, pitStep{"first", "foo1->bar1"},
			pitStep{"last", "g1->0"}, pitStep{"prev", "foo1->bar1"}, pitStep{"prev", "(invalid)"})
		it.SetBounds(nil, []byte("a"))
		pitRun(t, it, pitStep{"first", "(invalid)"}, pitStep{"last", "(invalid)"})
	})
}

// TestPortIterator_BoundBeforeDeletes ports the part of RocksDB's
// DBIteratorBoundTest that checks an upper bound stops the iterator
// before the deleted keys past it: RocksDB counts the deletes skipped
// (none); here Stats must show no block read past the bound's table.
func TestPortIterator_BoundBeforeDeletes(t *testing.T) {
	pitLayouts(t, nil, func(t *testing.T, db *kv.DB, settle func()) {
		for _, k := range []string{"a", "b", "b1", "c", "d", "e"} {
			ldbSet(t, db, k, "0")
		}
		ldbDelete(t, db, "c")
		ldbDelete(t, db, "d")
		settle()
		pitRun(t, pitIter(t, db, nil), pitStep{"ge:b", "b->0"}, pitStep{"next", "b1->0"},
			pitStep{"next", "e->0"}, pitStep{"prev", "b1->0"})
		pitRun(t, pitIter(t, db, &kv.IterOptions{UpperBound: []byte("c")}),
			pitStep{"ge:b", "b->0"}, pitStep{"next", "b1->0"}, pitStep{"next", "(invalid)"},
			pitStep{"last", "b1->0"})
		pitRun(t, pitIter(t, db, &kv.IterOptions{LowerBound: []byte("c")}),
			pitStep{"first", "e->0"}, pitStep{"prev", "(invalid)"}, pitStep{"lt:e", "(invalid)"})
	})
}

// TestPortIterator_UpperBoundWithChangeDirection ports RocksDB's
// UpperBoundWithChangeDirection: a seek under an upper bound, then Prev,
// with keys past the bound in the memtable and in a table.
func TestPortIterator_UpperBoundWithChangeDirection(t *testing.T) {
	pitLayouts(t, nil, func(t *testing.T, db *kv.DB, settle func()) {
		for _, k := range []string{"a", "y", "y1", "y2", "y3", "z"} {
			ldbSet(t, db, k, "1")
		}
		settle()
		for _, k := range []string{"a", "z", "bar", "foo"} {
			ldbSet(t, db, k, "1")
		}
		pitRun(t, pitIter(t, db, &kv.IterOptions{UpperBound: []byte("y2")}),
			pitStep{"ge:foo", "foo->1"}, pitStep{"prev", "bar->1"}, pitStep{"next", "foo->1"},
			pitStep{"next", "y->1"}, pitStep{"next", "y1->1"}, pitStep{"next", "(invalid)"},
			pitStep{"prev", "y1->1"}, pitStep{"ge:y15", "(invalid)"}, pitStep{"prev", "y1->1"})
	})
}

// TestPortIterator_UpperBoundWithPrevReseek ports RocksDB's
// UpperBoundWithPrevReseek: over a snapshot, with more versions of "foo"
// and "bar" written after it than RocksDB skips before reseeking,
// SeekForPrev and Prev under an upper bound show the snapshot's values.
func TestPortIterator_UpperBoundWithPrevReseek(t *testing.T) {
	pitLayouts(t, nil, func(t *testing.T, db *kv.DB, settle func()) {
		ldbSet(t, db, "a", "0")
		ldbSet(t, db, "z", "0")
		settle()
		ldbSet(t, db, "a", "1")
		ldbSet(t, db, "z", "1")
		ldbSet(t, db, "bar", "1")
		ldbSet(t, db, "foo", "1")
		ldbSet(t, db, "foo", "2")
		ldbSet(t, db, "bar", "2")
		snap := db.NewSnapshot()
		defer snap.Close()
		for i := 3; i < 10; i++ {
			ldbSet(t, db, "foo", strconv.Itoa(i))
			ldbSet(t, db, "bar", strconv.Itoa(i))
		}
		settle()
		pitRun(t, pitIter(t, snap, &kv.IterOptions{UpperBound: []byte("y")}),
			pitStep{"le:goo", "foo->2"}, pitStep{"prev", "bar->2"}, pitStep{"prev", "a->1"},
			pitStep{"last", "foo->2"}, pitStep{"ge:foo", "foo->2"}, pitStep{"prev", "bar->2"})
		pitRun(t, pitIter(t, db, &kv.IterOptions{UpperBound: []byte("y")}),
			pitStep{"le:goo", "foo->9"}, pitStep{"prev", "bar->9"})
	})
}

// TestPortIterator_PebbleBounds ports Pebble's bound cases of
// testdata/iterator and iterator_next_prev: SeekLT and SeekGE clamped to
// the bounds, equal bounds, inverted bounds and empty ranges, where
// nothing is ever valid, and Next and Prev after a move ran off an end.
func TestPortIterator_PebbleBounds(t *testing.T) {
	pitLayouts(t, pitSmall(), func(t *testing.T, db *kv.DB, settle func()) {
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			ldbSet(t, db, k, k)
		}
		settle()
		b := func(lo, hi string) *kv.IterOptions {
			return &kv.IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)}
		}
		pitRun(t, pitIter(t, db, b("b", "d")),
			pitStep{"lt:z", "c->c"}, pitStep{"lt:c", "b->b"}, pitStep{"lt:b", "(invalid)"},
			pitStep{"next", "b->b"}, pitStep{"lt:a", "(invalid)"}, pitStep{"ge:a", "b->b"},
			pitStep{"prev", "(invalid)"}, pitStep{"ge:d", "(invalid)"}, pitStep{"prev", "c->c"},
			pitStep{"ge:z", "(invalid)"}, pitStep{"prev", "c->c"})
		for _, o := range []*kv.IterOptions{b("c", "c"), b("d", "b"), b("bb", "c"), b("", ""), b("e\x00", "z")} {
			it := pitIter(t, db, o)
			for _, mv := range []string{"first", "last", "ge:a", "ge:c", "lt:z", "lt:c", "le:c", "next", "prev"} {
				pitRun(t, it, pitStep{mv, "(invalid)"})
			}
		}
		pitRun(t, pitIter(t, db, b("c", "c\x00")), pitStep{"first", "c->c"}, pitStep{"next", "(invalid)"},
			pitStep{"last", "c->c"}, pitStep{"prev", "(invalid)"}, pitStep{"next", "c->c"})
		pitRun(t, pitIter(t, db, &kv.IterOptions{LowerBound: []byte("")}),
			pitStep{"first", "a->a"}, pitStep{"lt:a", "(invalid)"})
	})
}

// TestPortIterator_EmptyDB ports the empty-store cases of Pebble's
// testdata/iterator and RocksDB's IterEmpty: every move on an empty
// store, and on one whose keys are all deleted, finds nothing.
func TestPortIterator_EmptyDB(t *testing.T) {
	pitLayouts(t, nil, func(t *testing.T, db *kv.DB, settle func()) {
		moves := []string{"first", "last", "ge:foo", "lt:foo", "le:foo", "next", "prev"}
		it := pitIter(t, db, nil)
		for _, mv := range moves {
			pitRun(t, it, pitStep{mv, "(invalid)"})
		}
		ldbSet(t, db, "foo", "v")
		ldbSet(t, db, "bar", "v")
		settle()
		ldbDelete(t, db, "foo")
		ldbDelete(t, db, "bar")
		it = pitIter(t, db, nil)
		for _, mv := range moves {
			pitRun(t, it, pitStep{mv, "(invalid)"})
		}
	})
}
