package kv_test

// RocksDB's db_iterator_test.cc scenarios of seeks, direction changes and
// versions newer than the iterator, ported to bloomkv (see
// port_iterator_test.go).

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// pitSeekFixture opens the store of RocksDB's IterSeekBeforePrev and
// IterSeekForPrevBeforeNext: a, c in one table, 0, 1 in another, 2 in
// the memtable.
func pitSeekFixture(t *testing.T) *kv.DB {
	t.Helper()
	db := pitOpen(t, nil)
	ldbSet(t, db, "a", "b")
	ldbSet(t, db, "c", "d")
	ldbFlush(t, db)
	ldbSet(t, db, "0", "f")
	ldbSet(t, db, "1", "h")
	ldbFlush(t, db)
	ldbSet(t, db, "2", "j")
	return db
}

// TestPortIterator_IterSeekBeforePrev ports RocksDB's IterSeekBeforePrev:
// a seek, then Prev across a flushed table and the memtable.
func TestPortIterator_IterSeekBeforePrev(t *testing.T) {
	db := pitSeekFixture(t)
	pitRun(t, pitIter(t, db, nil),
		pitStep{"ge:c", "c->d"}, pitStep{"prev", "a->b"},
		pitStep{"ge:a", "a->b"}, pitStep{"prev", "2->j"}, pitStep{"prev", "1->h"})
}

// TestPortIterator_IterSeekForPrevBeforeNext ports RocksDB's
// IterSeekForPrevBeforeNext: SeekForPrev (SeekLT of the successor), then
// Next.
func TestPortIterator_IterSeekForPrevBeforeNext(t *testing.T) {
	db := pitSeekFixture(t)
	pitRun(t, pitIter(t, db, nil),
		pitStep{"le:0", "0->f"}, pitStep{"next", "1->h"},
		pitStep{"le:1", "1->h"}, pitStep{"next", "2->j"},
		pitStep{"le:b", "a->b"}, pitStep{"next", "c->d"}, pitStep{"next", "(invalid)"})
}

// pitNewerSeq writes RocksDB's IterNextWithNewerSeq data: "0" flushed,
// a, c, d in the memtable, an iterator, then many versions of "b" the
// iterator must not see (RocksDB writes max_sequential_skip_in_iterations
// + 1 of them so that skipping them forces a reseek). flushAfter flushes
// the versions of "b" too: the iterator must still read its own state.
func pitNewerSeq(t *testing.T, flushAfter bool) *kv.Iterator {
	db := pitOpen(t, nil)
	ldbSet(t, db, "0", "0")
	ldbFlush(t, db)
	ldbSet(t, db, "a", "b")
	ldbSet(t, db, "c", "d")
	ldbSet(t, db, "d", "e")
	it := pitIter(t, db, nil)
	for i := 0; i < 100; i++ {
		ldbSet(t, db, "b", "f"+strconv.Itoa(i))
	}
	if flushAfter {
		ldbFlush(t, db)
	}
	return it
}

// TestPortIterator_IterNextWithNewerSeq ports RocksDB's
// IterNextWithNewerSeq: Next steps over the versions of "b" written after
// the iterator.
func TestPortIterator_IterNextWithNewerSeq(t *testing.T) {
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("flushAfter=%v", flush), func(t *testing.T) {
			pitRun(t, pitNewerSeq(t, flush),
				pitStep{"ge:a", "a->b"}, pitStep{"next", "c->d"},
				pitStep{"le:b", "a->b"}, pitStep{"next", "c->d"},
				pitStep{"ge:b", "c->d"}, pitStep{"prev", "a->b"}, pitStep{"next", "c->d"})
		})
	}
}

// TestPortIterator_IterPrevWithNewerSeq ports RocksDB's
// IterPrevWithNewerSeq and IterPrevWithNewerSeq2: Prev steps over the
// versions of "b" written after the iterator.
func TestPortIterator_IterPrevWithNewerSeq(t *testing.T) {
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("flushAfter=%v", flush), func(t *testing.T) {
			pitRun(t, pitNewerSeq(t, flush),
				pitStep{"ge:d", "d->e"}, pitStep{"prev", "c->d"}, pitStep{"prev", "a->b"},
				pitStep{"prev", "0->0"},
				pitStep{"le:d", "d->e"}, pitStep{"prev", "c->d"}, pitStep{"prev", "a->b"},
				pitStep{"prev", "0->0"}, pitStep{"prev", "(invalid)"},
				// IterPrevWithNewerSeq2.
				pitStep{"ge:c", "c->d"}, pitStep{"prev", "a->b"}, pitStep{"next", "c->d"},
				pitStep{"le:c", "c->d"}, pitStep{"prev", "a->b"}, pitStep{"prev", "0->0"})
		})
	}
}

// TestPortIterator_IterPrevMaxSkip ports RocksDB's IterPrevMaxSkip: two
// versions of key1..key5, then the last key deleted one after the other;
// Last must find the new last key each time, and nothing at the end.
func TestPortIterator_IterPrevMaxSkip(t *testing.T) {
	pitLayouts(t, nil, func(t *testing.T, db *kv.DB, settle func()) {
		for i := 0; i < 2; i++ {
			for k := 1; k <= 5; k++ {
				ldbSet(t, db, fmt.Sprintf("key%d", k), fmt.Sprintf("v%d", k))
			}
		}
		settle()
		for k := 5; k >= 1; k-- {
			pitRun(t, pitIter(t, db, nil), pitStep{"last", fmt.Sprintf("key%d->v%d", k, k)})
			ldbDelete(t, db, fmt.Sprintf("key%d", k))
		}
		pitRun(t, pitIter(t, db, nil), pitStep{"last", "(invalid)"}, pitStep{"first", "(invalid)"})
	})
}

// TestPortIterator_IterWithSnapshot ports RocksDB's IterWithSnapshot: an
// iterator over a snapshot hides key0, key100 and key101, written after
// it (key100 sorts between key1 and key2).
func TestPortIterator_IterWithSnapshot(t *testing.T) {
	pitLayouts(t, pitSmall(), func(t *testing.T, db *kv.DB, settle func()) {
		for k := 1; k <= 5; k++ {
			ldbSet(t, db, fmt.Sprintf("key%d", k), fmt.Sprintf("val%d", k))
		}
		settle()
		snap := db.NewSnapshot()
		defer snap.Close()
		it := pitIter(t, snap, nil)
		ldbSet(t, db, "key0", "val0")
		ldbSet(t, db, "key100", "val100")
		ldbSet(t, db, "key101", "val101")
		ldbDelete(t, db, "key3")
		settle()
		pitRun(t, it,
			pitStep{"ge:key5", "key5->val5"}, pitStep{"prev", "key4->val4"},
			pitStep{"prev", "key3->val3"}, pitStep{"next", "key4->val4"},
			pitStep{"next", "key5->val5"}, pitStep{"next", "(invalid)"},
			pitStep{"le:key1", "key1->val1"}, pitStep{"next", "key2->val2"},
			pitStep{"next", "key3->val3"}, pitStep{"prev", "key2->val2"},
			pitStep{"prev", "key1->val1"}, pitStep{"prev", "(invalid)"})
		// A second iterator over the snapshot, made after the writes.
		pitRun(t, pitIter(t, snap, nil),
			pitStep{"ge:key0", "key1->val1"}, pitStep{"next", "key2->val2"},
			pitStep{"le:key101", "key1->val1"})
	})
}

// TestPortIterator_IteratorPinsRef ports RocksDB's IteratorPinsRef: an
// iterator keeps the state it was made on while the memtable it read is
// flushed and compacted away under it.
func TestPortIterator_IteratorPinsRef(t *testing.T) {
	db := pitOpen(t, pitSmall())
	ldbSet(t, db, "foo", "hello")
	it := pitIter(t, db, nil)
	ldbSet(t, db, "foo", "newvalue1")
	val := make([]byte, 1000)
	for i := 0; i < 100; i++ {
		ldbSet(t, db, ldbKey(i), ldbKey(i)+string(val))
	}
	ldbSet(t, db, "foo", "newvalue2")
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	if s, n := pitTables(db); n == 0 {
		t.Fatalf("nothing flushed: %s", s)
	}
	pitRun(t, it, pitStep{"first", "foo->hello"}, pitStep{"next", "(invalid)"},
		pitStep{"last", "foo->hello"}, pitStep{"prev", "(invalid)"})
	ldbWant(t, db, "foo", "newvalue2")
}

// TestPortIterator_IterMultiWithDelete ports RocksDB's
// IterMultiWithDelete: Prev from "kc" steps over the deleted "kb".
func TestPortIterator_IterMultiWithDelete(t *testing.T) {
	pitLayouts(t, nil, func(t *testing.T, db *kv.DB, settle func()) {
		ldbSet(t, db, "ka", "va")
		ldbSet(t, db, "kb", "vb")
		ldbSet(t, db, "kc", "vc")
		settle()
		ldbDelete(t, db, "kb")
		ldbWant(t, db, "kb", "NOT_FOUND")
		pitRun(t, pitIter(t, db, nil),
			pitStep{"ge:kc", "kc->vc"}, pitStep{"prev", "ka->va"}, pitStep{"next", "kc->vc"},
			pitStep{"ge:kb", "kc->vc"}, pitStep{"lt:kc", "ka->va"})
	})
}

// TestPortIterator_SkipRecentDuplicates ports RocksDB's
// DBIteratorSkipRecentDuplicatesTest: 100 versions of "b" written after
// the iterator are skipped by every move, which shows the old "0".
func TestPortIterator_SkipRecentDuplicates(t *testing.T) {
	db := pitOpen(t, nil)
	ldbSet(t, db, "b", "0")
	it := pitIter(t, db, nil)
	for i := 0; i < 100; i++ {
		ldbSet(t, db, "b", strconv.Itoa(i+1))
	}
	pitRun(t, it,
		pitStep{"ge:b", "b->0"}, pitStep{"next", "(invalid)"},
		pitStep{"first", "b->0"}, pitStep{"prev", "(invalid)"},
		pitStep{"last", "b->0"}, pitStep{"prev", "(invalid)"}, pitStep{"next", "b->0"},
		pitStep{"ge:a", "b->0"}, pitStep{"le:c", "b->0"})
	pitRun(t, pitIter(t, db, nil), pitStep{"first", "b->100"}, pitStep{"last", "b->100"})
}

// TestPortIterator_SeekAfterHittingManyInternalKeys ports RocksDB's
// SeekAfterHittingManyInternalKeys. RocksDB stops Next with Incomplete
// after max_skippable_internal_keys tombstones; bloomkv has no such
// limit, so Next steps over them all, and the reseeks that follow land
// where they must.
func TestPortIterator_SeekAfterHittingManyInternalKeys(t *testing.T) {
	pitLayouts(t, nil, func(t *testing.T, db *kv.DB, settle func()) {
		ldbSet(t, db, "1", "val_1")
		for k := 2; k <= 5; k++ {
			ldbSet(t, db, strconv.Itoa(k), "gone")
		}
		settle()
		for k := 2; k <= 5; k++ {
			ldbDelete(t, db, strconv.Itoa(k))
		}
		ldbSet(t, db, "6", "val_6")
		pitRun(t, pitIter(t, db, nil),
			pitStep{"first", "1->val_1"}, pitStep{"next", "6->val_6"},
			pitStep{"ge:6", "6->val_6"}, pitStep{"prev", "1->val_1"},
			pitStep{"ge:2", "6->val_6"}, pitStep{"lt:6", "1->val_1"},
			pitStep{"le:5", "1->val_1"}, pitStep{"next", "6->val_6"})
	})
}

// TestPortIterator_IterReseek ports RocksDB's IterReseek: RocksDB counts
// the reseeks it makes once a key has more versions than
// max_sequential_skip_in_iterations; here the moves over a key with many
// versions, newer and older than the iterator, must land right.
func TestPortIterator_IterReseek(t *testing.T) {
	pitLayouts(t, nil, func(t *testing.T, db *kv.DB, settle func()) {
		ldbSet(t, db, "a", "zero")
		ldbSet(t, db, "a", "one")
		ldbSet(t, db, "b", "bone")
		pitRun(t, pitIter(t, db, nil), pitStep{"first", "a->one"}, pitStep{"next", "b->bone"})
		ldbSet(t, db, "a", "two")
		ldbSet(t, db, "a", "three")
		settle()
		pitRun(t, pitIter(t, db, nil), pitStep{"first", "a->three"}, pitStep{"next", "b->bone"})
		for i := 0; i < 10; i++ {
			ldbSet(t, db, "a", "four"+strconv.Itoa(i))
		}
		it := pitIter(t, db, nil)
		ldbSet(t, db, "a", "five")
		ldbSet(t, db, "c", "cone")
		settle()
		pitRun(t, it, pitStep{"first", "a->four9"}, pitStep{"next", "b->bone"},
			pitStep{"next", "(invalid)"})
		it = pitIter(t, db, nil)
		pitRun(t, it, pitStep{"last", "c->cone"}, pitStep{"prev", "b->bone"},
			pitStep{"prev", "a->five"}, pitStep{"next", "b->bone"})
		for i := 0; i < 10; i++ {
			ldbSet(t, db, "b", "btwo"+strconv.Itoa(i))
		}
		pitRun(t, pitIter(t, db, nil), pitStep{"last", "c->cone"}, pitStep{"prev", "b->btwo9"},
			pitStep{"prev", "a->five"}, pitStep{"next", "b->btwo9"}, pitStep{"next", "c->cone"})
	})
}

// TestPortIterator_Skipped records the RocksDB scenarios that have no
// counterpart in bloomkv.
func TestPortIterator_Skipped(t *testing.T) {
	for _, name := range []string{
		"NonBlockingIteration (no read tier: every read may touch the FS)",
		"PrevAfterAndNextAfterMerge (no merge operator)",
		"ReadAhead (no readahead option)",
		"TableFilter (no table filter option)",
	} {
		t.Run(name, func(t *testing.T) { t.Skip("no counterpart in bloomkv") })
	}
}
