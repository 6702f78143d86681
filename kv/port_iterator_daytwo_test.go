package kv_test

// The day-two scenarios of Pebble v1.1.5's iterator tests
// (iterator_test.go; testdata/iterator_set_options,
// iterator_bounds_lifetimes, iterator_next_prev, indexed_batch_mutation)
// and goleveldb's dbiter tests, ported to bloomkv: bounds changed on a
// positioned iterator, bounds the caller mutates, clones of iterators over
// indexed batches that change under them, direction changes at the ends
// and bounds, prefix mode at its edges, and iterators that outlive
// flushes, compactions, ingests, other iterators and their snapshot.

import (
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestPortIterator_SetBoundsWhilePositioned ports iterator_set_options'
// bounds changed at a key: SetBounds leaves the iterator unpositioned
// (Pebble: it must be repositioned), so Next and Prev find nothing, and a
// bound equal to the key it was at is honoured by the next seek (the
// lower inclusive, the upper exclusive).
func TestPortIterator_SetBoundsWhilePositioned(t *testing.T) {
	pitLayouts(t, pitSmall(), func(t *testing.T, db *kv.DB, settle func()) {
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			ldbSet(t, db, k, k)
		}
		settle()
		it := pitIter(t, db, nil)
		pitRun(t, it, pitStep{"ge:c", "c->c"})
		it.SetBounds([]byte("c"), nil)
		pitRun(t, it, pitStep{"next", "(invalid)"}, pitStep{"prev", "(invalid)"},
			pitStep{"ge:a", "c->c"}, pitStep{"prev", "(invalid)"}, pitStep{"next", "c->c"},
			pitStep{"lt:c", "(invalid)"}, pitStep{"next", "c->c"}, pitStep{"last", "e->e"})
		pitRun(t, it, pitStep{"ge:c", "c->c"})
		it.SetBounds(nil, []byte("c"))
		pitRun(t, it, pitStep{"prev", "(invalid)"}, pitStep{"next", "(invalid)"},
			pitStep{"ge:c", "(invalid)"}, pitStep{"prev", "b->b"}, pitStep{"next", "(invalid)"},
			pitStep{"last", "b->b"}, pitStep{"lt:z", "b->b"}, pitStep{"first", "a->a"})
		pitRun(t, it, pitStep{"last", "b->b"})
		it.SetBounds([]byte("b"), []byte("b"))
		pitRun(t, it, pitStep{"next", "(invalid)"}, pitStep{"first", "(invalid)"},
			pitStep{"last", "(invalid)"}, pitStep{"ge:b", "(invalid)"}, pitStep{"lt:c", "(invalid)"})
		// Widened again at an exhausted position: still unpositioned.
		it.SetBounds(nil, nil)
		pitRun(t, it, pitStep{"prev", "(invalid)"}, pitStep{"next", "(invalid)"},
			pitStep{"last", "e->e"}, pitStep{"next", "(invalid)"}, pitStep{"prev", "e->e"})
	})
}

// TestPortIterator_BoundsMutatedByCaller ports iterator_bounds_lifetimes.
// Pebble forbids the caller to modify the bounds' bytes until the next
// SetBounds; bloomkv documents that IterOptions bounds and SetBounds'
// are copied ("the caller may reuse them at once"), so scribbling over
// them, after NewIter, SetBounds or Clone, must change nothing.
func TestPortIterator_BoundsMutatedByCaller(t *testing.T) {
	pitLayouts(t, pitSmall(), func(t *testing.T, db *kv.DB, settle func()) {
		for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
			ldbSet(t, db, k, k)
		}
		settle()
		lower, upper := []byte("b"), []byte("e")
		it := pitIter(t, db, &kv.IterOptions{LowerBound: lower, UpperBound: upper})
		lower[0], upper[0] = 'a', 'z'
		pitRun(t, it, pitStep{"first", "b->b"}, pitStep{"last", "d->d"}, pitStep{"next", "(invalid)"})
		c, err := it.Clone()
		must(t, err)
		defer c.Close()
		lower, upper = []byte("c"), []byte("d")
		it.SetBounds(lower, upper)
		copy(lower, "a")
		copy(upper, "z")
		pitRun(t, it, pitStep{"first", "c->c"}, pitStep{"next", "(invalid)"},
			pitStep{"last", "c->c"}, pitStep{"prev", "(invalid)"}, pitStep{"ge:a", "c->c"})
		pitRun(t, c, pitStep{"first", "b->b"}, pitStep{"last", "d->d"})
		// The same buffer reused for the next SetBounds, as a caller
		// looping over ranges would.
		buf := []byte("de")
		it.SetBounds(buf[:1], buf[1:])
		buf[0], buf[1] = 'a', 'b'
		pitRun(t, it, pitStep{"first", "d->d"}, pitStep{"next", "(invalid)"}, pitStep{"last", "d->d"})
	})
}

// TestPortIterator_CloneIndexedBatchMutated ports indexed_batch_mutation:
// an iterator over an indexed batch and its clone keep the batch as it
// was when the iterator was made, writes, deletes and range deletes added
// since included, through SetBounds; Refresh of the clone alone moves it
// to the batch's writes so far (bloomkv's documented Refresh of an
// iterator over an indexed batch; Pebble's SetOptions does so too).
func TestPortIterator_CloneIndexedBatchMutated(t *testing.T) {
	pitLayouts(t, pitSmall(), func(t *testing.T, db *kv.DB, settle func()) {
		for _, k := range []string{"a", "b", "c", "d"} {
			ldbSet(t, db, k, "db")
		}
		settle()
		b := db.NewIndexedBatch()
		defer b.Close()
		must(t, b.Set([]byte("b"), []byte("b1")))
		must(t, b.DeleteRange([]byte("x"), []byte("y")))
		it := pitIter(t, b, nil)
		pitRun(t, it, pitStep{"ge:b", "b->b1"})
		must(t, b.Set([]byte("b"), []byte("b2")))
		must(t, b.Set([]byte("bb"), []byte("new")))
		must(t, b.Delete([]byte("c")))
		must(t, b.DeleteRange([]byte("a"), []byte("b")))
		must(t, b.DeleteRange([]byte("d"), []byte("e")))
		c, err := it.Clone()
		must(t, err)
		defer c.Close()
		old := []pitStep{{"first", "a->db"}, {"next", "b->b1"}, {"next", "c->db"}, {"next", "d->db"},
			{"next", "(invalid)"}, {"prev", "d->db"}, {"prev", "c->db"}, {"prev", "b->b1"}, {"prev", "a->db"}}
		pitRun(t, it, pitStep{"next", "c->db"}, pitStep{"prev", "b->b1"})
		pitRun(t, c, old...)
		it.SetBounds([]byte("a"), []byte("e"))
		pitRun(t, it, old...)
		must(t, c.Refresh())
		now := []pitStep{{"first", "b->b2"}, {"next", "bb->new"}, {"next", "(invalid)"},
			{"prev", "bb->new"}, {"prev", "b->b2"}, {"prev", "(invalid)"}}
		pitRun(t, c, now...)
		pitRun(t, it, old...)
		// Writes after the Refresh are the clone's past again.
		must(t, b.Set([]byte("a"), []byte("a3")))
		pitRun(t, c, now...)
		c.SetBounds(nil, []byte("z"))
		pitRun(t, c, now...)
		c2, err := c.Clone()
		must(t, err)
		defer c2.Close()
		pitRun(t, c2, now...)
		must(t, c2.Refresh())
		pitRun(t, c2, pitStep{"first", "a->a3"}, pitStep{"next", "b->b2"})
		pitRun(t, c, now...)
	})
}

// TestPortIterator_DirectionAtEnds ports iterator_next_prev's direction
// changes where the iterator ran off an end or a bound, with the keys at
// the ends deleted or shadowed so that the turn must skip them: Next
// after a backward move that found nothing lands on the first key, Prev
// after a forward one on the last, both within the bounds.
func TestPortIterator_DirectionAtEnds(t *testing.T) {
	pitLayouts(t, pitSmall(), func(t *testing.T, db *kv.DB, settle func()) {
		for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
			ldbSet(t, db, k, "1")
		}
		settle()
		ldbDelete(t, db, "a")
		ldbSet(t, db, "b", "2")
		ldbDelete(t, db, "f")
		ldbSet(t, db, "e", "2")
		settle()
		pitRun(t, pitIter(t, db, nil),
			pitStep{"first", "b->2"}, pitStep{"prev", "(invalid)"}, pitStep{"prev", "(invalid)"},
			pitStep{"next", "b->2"}, pitStep{"last", "e->2"}, pitStep{"next", "(invalid)"},
			pitStep{"next", "(invalid)"}, pitStep{"prev", "e->2"}, pitStep{"prev", "d->1"},
			pitStep{"next", "e->2"}, pitStep{"ge:f", "(invalid)"}, pitStep{"prev", "e->2"},
			pitStep{"lt:b", "(invalid)"}, pitStep{"next", "b->2"}, pitStep{"lt:a", "(invalid)"},
			pitStep{"next", "b->2"})
		pitRun(t, pitIter(t, db, &kv.IterOptions{LowerBound: []byte("c"), UpperBound: []byte("e")}),
			pitStep{"first", "c->1"}, pitStep{"prev", "(invalid)"}, pitStep{"next", "c->1"},
			pitStep{"next", "d->1"}, pitStep{"next", "(invalid)"}, pitStep{"prev", "d->1"},
			pitStep{"prev", "c->1"}, pitStep{"prev", "(invalid)"}, pitStep{"next", "c->1"},
			pitStep{"ge:e", "(invalid)"}, pitStep{"prev", "d->1"}, pitStep{"lt:c", "(invalid)"},
			pitStep{"next", "c->1"}, pitStep{"lt:z", "d->1"}, pitStep{"next", "(invalid)"},
			pitStep{"prev", "d->1"})
	})
}

// TestPortIterator_PrefixModeEdges ports iterator_test's prefix cases at
// the prefix's end: Next past the prefix stays exhausted, Prev is refused
// with ErrReversePrefixIteration (bloomkv and Pebble alike), and SeekLT
// and Last, absolute moves, leave prefix mode and behave as ever, as
// does a clone and SetBounds.
func TestPortIterator_PrefixModeEdges(t *testing.T) {
	o := pitSmall()
	o.Comparer = pitSlashComparer()
	pitLayouts(t, o, func(t *testing.T, db *kv.DB, settle func()) {
		for _, k := range []string{"a/1", "a/2", "b/1", "b/2", "c/1"} {
			ldbSet(t, db, k, "v")
		}
		ldbDelete(t, db, "a/2")
		settle()
		it := pitIter(t, db, nil)
		pitRun(t, it, pitStep{"prefix:a/", "a/1->v"}, pitStep{"next", "(invalid)"},
			pitStep{"next", "(invalid)"}, pitStep{"prefix:b/1", "b/1->v"}, pitStep{"next", "b/2->v"},
			pitStep{"next", "(invalid)"}, pitStep{"next", "(invalid)"})
		pitRun(t, it, pitStep{"prev", "(invalid: " + kv.ErrReversePrefixIteration.Error() + ")"})
		pitRun(t, it, pitStep{"lt:b/2", "b/1->v"}, pitStep{"prev", "a/1->v"}, pitStep{"next", "b/1->v"},
			pitStep{"next", "b/2->v"}, pitStep{"next", "c/1->v"})
		pitRun(t, it, pitStep{"prefix:b/", "b/1->v"}, pitStep{"last", "c/1->v"}, pitStep{"prev", "b/2->v"})
		pitRun(t, it, pitStep{"prefix:b/2", "b/2->v"})
		c, err := it.Clone()
		must(t, err)
		defer c.Close()
		pitRun(t, c, pitStep{"next", "(invalid)"}, pitStep{"ge:b/2", "b/2->v"},
			pitStep{"next", "c/1->v"}, pitStep{"prev", "b/2->v"})
		pitRun(t, it, pitStep{"next", "(invalid)"})
		it.SetBounds(nil, nil)
		pitRun(t, it, pitStep{"prev", "(invalid)"}, pitStep{"ge:b/2", "b/2->v"}, pitStep{"prev", "b/1->v"})
		pitRun(t, it, pitStep{"prefix:a/3", "(invalid)"}, pitStep{"next", "(invalid)"})
		if !errors.Is(func() error { it.Prev(); return it.Error() }(), kv.ErrReversePrefixIteration) {
			t.Fatalf("Prev after a prefix seek that found nothing: %v, want ErrReversePrefixIteration", it.Error())
		}
		pitRun(t, it, pitStep{"last", "c/1->v"})
		// Bounds inside the prefix: Next stops at the upper bound, a seek
		// above it with the same prefix finds nothing, and one below the
		// lower bound of another prefix is refused, as documented.
		it.SetBounds([]byte("b/"), []byte("b/2"))
		pitRun(t, it, pitStep{"prefix:b/", "b/1->v"}, pitStep{"next", "(invalid)"},
			pitStep{"prefix:b/3", "(invalid)"})
		if it.SeekPrefixGE([]byte("a/1")) || !errors.Is(it.Error(), kv.ErrInvalidPrefixSeek) {
			t.Fatalf("SeekPrefixGE below LowerBound, of another prefix: %s, want ErrInvalidPrefixSeek", pitStatus(it))
		}
		pitRun(t, it, pitStep{"first", "b/1->v"}, pitStep{"next", "(invalid)"})
	})
}

// TestPortIterator_ClonesDoNotDisturb checks what goleveldb's dbiter
// tests take for granted: Key and Value stay what they were while other
// iterators move, a clone is made or refreshed, another iterator is
// closed (its pooled state then serving a new one), or the DB flushes and
// compacts; only the iterator's own next move may change them.
func TestPortIterator_ClonesDoNotDisturb(t *testing.T) {
	db := pitOpen(t, pitSmall())
	for i := 0; i < 200; i++ {
		ldbSet(t, db, ldbKey(i), ldbKey(i)+"-value")
	}
	ldbFlush(t, db)
	it := pitIter(t, db, nil)
	if !it.SeekGE([]byte(ldbKey(100))) {
		t.Fatal("SeekGE found nothing")
	}
	key, value := it.Key(), it.Value()
	want := ldbKey(100)
	check := func(when string) {
		t.Helper()
		if string(key) != want || string(value) != want+"-value" || string(it.Key()) != want {
			t.Fatalf("%s: Key %q Value %q (now %q), want %q", when, key, value, it.Key(), want)
		}
	}
	c, err := it.Clone()
	must(t, err)
	for ok := c.Last(); ok; ok = c.Prev() {
	}
	check("after a clone's scan")
	must(t, c.Refresh())
	c.First()
	must(t, c.Close())
	check("after the clone's Refresh and Close")
	other := pitIter(t, db, nil)
	for ok := other.First(); ok; ok = other.Next() {
	}
	must(t, other.Close())
	again := pitIter(t, db, nil)
	again.SeekGE([]byte(ldbKey(150)))
	check("after another iterator was closed and its state reused")
	for i := 0; i < 200; i++ {
		ldbSet(t, db, ldbKey(i), "new")
	}
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	check("after a flush and a compaction")
	if !it.Next() || string(it.Key()) != ldbKey(101) || string(it.Value()) != ldbKey(101)+"-value" {
		t.Fatalf("Next: %s, want %s->%s-value", pitStatus(it), ldbKey(101), ldbKey(101))
	}
}

// TestPortIterator_OutlivesStoreChanges ports iterator_test's iterators
// that live through flushes, compactions and ingests: each keeps its
// point-in-time view, through SetBounds and in its clones, until Refresh.
func TestPortIterator_OutlivesStoreChanges(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, pitSmall())
	defer db.Close()
	for _, k := range []string{"a", "b", "c", "d"} {
		ldbSet(t, db, k, "1")
	}
	it := pitIter(t, db, nil)
	old := []pitStep{{"first", "a->1"}, {"next", "b->1"}, {"next", "c->1"}, {"next", "d->1"},
		{"next", "(invalid)"}, {"prev", "d->1"}}
	pitRun(t, it, pitStep{"ge:b", "b->1"})
	ldbSet(t, db, "b", "2")
	ldbDelete(t, db, "c")
	ldbFlush(t, db)
	pitRun(t, it, pitStep{"next", "c->1"})
	must(t, db.DeleteRange([]byte("a"), []byte("b"), kv.NoSync))
	ldbCompact(t, db, "", "")
	pitRun(t, it, pitStep{"next", "d->1"}, pitStep{"prev", "c->1"})
	writePortTable(t, fs, "ext/1.sst", sstable.WriterOptions{}, "d=ing", "e=ing")
	must(t, db.Ingest([]string{"ext/1.sst"}))
	pitRun(t, it, old...)
	c, err := it.Clone()
	must(t, err)
	defer c.Close()
	pitRun(t, c, old...)
	it.SetBounds([]byte("b"), nil)
	pitRun(t, it, pitStep{"first", "b->1"}, pitStep{"last", "d->1"})
	must(t, it.Refresh())
	pitRun(t, it, pitStep{"first", "b->2"}, pitStep{"next", "d->ing"}, pitStep{"next", "e->ing"},
		pitStep{"next", "(invalid)"})
	pitRun(t, c, old...)
}

// TestPortIterator_SnapshotClosedUnder ports Pebble's snapshot iterators
// whose snapshot is closed while they are open. bloomkv documents that
// Refresh then fails with ErrClosed and changes nothing; the iterator
// keeps the state it holds, so its moves, SetBounds and clones still
// show the snapshot's view, even once compactions dropped the versions
// only the snapshot needed.
func TestPortIterator_SnapshotClosedUnder(t *testing.T) {
	db := pitOpen(t, pitSmall())
	for _, k := range []string{"a", "b", "c"} {
		ldbSet(t, db, k, "1")
	}
	snap := db.NewSnapshot()
	for _, k := range []string{"a", "b", "c"} {
		ldbSet(t, db, k, "2")
	}
	ldbDelete(t, db, "b")
	it := pitIter(t, snap, nil)
	pitRun(t, it, pitStep{"ge:b", "b->1"})
	must(t, snap.Close())
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	if err := it.Refresh(); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Refresh after the snapshot's Close: %v, want ErrClosed", err)
	}
	pitRun(t, it, pitStep{"next", "c->1"}, pitStep{"prev", "b->1"}, pitStep{"first", "a->1"})
	it.SetBounds([]byte("b"), nil)
	pitRun(t, it, pitStep{"first", "b->1"}, pitStep{"next", "c->1"}, pitStep{"next", "(invalid)"})
	if err := it.Error(); err != nil {
		t.Fatalf("Error after moves over a closed snapshot: %v", err)
	}
	c, err := it.Clone()
	if err != nil {
		t.Fatalf("Clone over a closed snapshot: %v", err)
	}
	defer c.Close()
	pitRun(t, c, pitStep{"last", "c->1"}, pitStep{"prev", "b->1"}, pitStep{"prev", "(invalid)"})
	if err := c.Refresh(); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Refresh of a clone over a closed snapshot: %v, want ErrClosed", err)
	}
	if _, err := snap.NewIter(nil); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("NewIter on a closed snapshot: %v, want ErrClosed", err)
	}
}
