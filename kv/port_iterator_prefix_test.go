package kv_test

// Pebble's SeekPrefixGE semantics (testdata/iterator, iter_histories/
// prefix_iteration) and the prefix part of RocksDB's DBIteratorBoundTest,
// ported to bloomkv (see port_iterator_test.go). Keys are split after
// their first '/'.

import (
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// pitPrefixDB opens a store under pitSlashComparer holding a/1, a/3
// (deleted), a/5, aa/1, b (no slash: its own prefix), c/1 and c/2, in
// the layout settle gives.
func pitPrefixDB(t *testing.T, db *kv.DB, settle func()) {
	for _, k := range []string{"a/1", "a/3", "a/5", "aa/1", "b", "c/1"} {
		ldbSet(t, db, k, "v"+k)
	}
	settle()
	ldbDelete(t, db, "a/3")
	ldbSet(t, db, "c/2", "vc/2")
}

// TestPortIterator_SeekPrefixGE ports Pebble's SeekPrefixGE semantics: a
// key of another prefix is never shown, Next stops at the end of the
// prefix, Prev fails with ErrReversePrefixIteration (and so does the
// Next after it, as Pebble's testdata/iterator shows), and an absolute
// seek leaves prefix mode.
func TestPortIterator_SeekPrefixGE(t *testing.T) {
	o := pitSmall()
	o.Comparer = pitSlashComparer()
	pitLayouts(t, o, func(t *testing.T, db *kv.DB, settle func()) {
		pitPrefixDB(t, db, settle)
		it := pitIter(t, db, nil)
		pitRun(t, it,
			pitStep{"prefix:a/", "a/1->va/1"}, pitStep{"next", "a/5->va/5"}, pitStep{"next", "(invalid)"},
			pitStep{"next", "(invalid)"},
			pitStep{"prefix:a/2", "a/5->va/5"}, pitStep{"next", "(invalid)"},
			pitStep{"prefix:a/6", "(invalid)"},
			pitStep{"prefix:aa/", "aa/1->vaa/1"}, pitStep{"next", "(invalid)"},
			pitStep{"prefix:b", "b->vb"}, pitStep{"next", "(invalid)"},
			pitStep{"prefix:b/", "(invalid)"}, pitStep{"prefix:bb", "(invalid)"},
			pitStep{"prefix:c/0", "c/1->vc/1"}, pitStep{"next", "c/2->vc/2"}, pitStep{"next", "(invalid)"},
			pitStep{"prefix:0/", "(invalid)"}, pitStep{"prefix:d/", "(invalid)"},
			// An absolute seek leaves prefix mode.
			pitStep{"prefix:a/", "a/1->va/1"}, pitStep{"ge:a/5", "a/5->va/5"},
			pitStep{"next", "aa/1->vaa/1"}, pitStep{"prev", "a/5->va/5"})
		pitWantPrefixPrev(t, it, "a/")
		pitWantPrefixPrev(t, it, "a/9") // after a seek that found nothing
		pitRun(t, it, pitStep{"last", "c/2->vc/2"}, pitStep{"prev", "c/1->vc/1"})
	})
}

// pitWantPrefixPrev checks that Prev after SeekPrefixGE(k) fails with
// ErrReversePrefixIteration, that Next then fails too, and that First
// clears the error.
func pitWantPrefixPrev(t *testing.T, it *kv.Iterator, k string) {
	t.Helper()
	it.SeekPrefixGE([]byte(k))
	if it.Prev() || !errors.Is(it.Error(), kv.ErrReversePrefixIteration) {
		t.Fatalf("Prev after SeekPrefixGE(%q): %s, want ErrReversePrefixIteration", k, pitStatus(it))
	}
	if it.Next() || !errors.Is(it.Error(), kv.ErrReversePrefixIteration) {
		t.Fatalf("Next after a failed Prev: %s", pitStatus(it))
	}
	pitRun(t, it, pitStep{"first", "a/1->va/1"})
}

// TestPortIterator_PrefixWithBounds ports the prefix-extractor part of
// RocksDB's DBIteratorBoundTest, as Pebble's SeekPrefixGE treats bounds:
// an upper bound inside the prefix stops Next, a seek key below the
// lower bound moves up to it when the bound has the seek's prefix and
// fails with ErrInvalidPrefixSeek otherwise.
func TestPortIterator_PrefixWithBounds(t *testing.T) {
	o := pitSmall()
	o.Comparer = pitSlashComparer()
	pitLayouts(t, o, func(t *testing.T, db *kv.DB, settle func()) {
		pitPrefixDB(t, db, settle)
		pitRun(t, pitIter(t, db, &kv.IterOptions{UpperBound: []byte("a/5")}),
			pitStep{"prefix:a/", "a/1->va/1"}, pitStep{"next", "(invalid)"})
		pitRun(t, pitIter(t, db, &kv.IterOptions{UpperBound: []byte("c/")}),
			pitStep{"prefix:a/", "a/1->va/1"}, pitStep{"next", "a/5->va/5"}, pitStep{"next", "(invalid)"})
		pitRun(t, pitIter(t, db, &kv.IterOptions{LowerBound: []byte("a/2")}),
			pitStep{"prefix:a/", "a/5->va/5"}, pitStep{"next", "(invalid)"},
			pitStep{"prefix:c/", "c/1->vc/1"})
		it := pitIter(t, db, &kv.IterOptions{LowerBound: []byte("b")})
		if it.SeekPrefixGE([]byte("a/")) || !errors.Is(it.Error(), kv.ErrInvalidPrefixSeek) {
			t.Fatalf("SeekPrefixGE below a lower bound of another prefix: %s", pitStatus(it))
		}
		pitRun(t, it, pitStep{"first", "b->vb"})
		it = pitIter(t, db, &kv.IterOptions{UpperBound: []byte("a/5")})
		if it.SeekPrefixGE([]byte("c/")) || !errors.Is(it.Error(), kv.ErrInvalidPrefixSeek) {
			t.Fatalf("SeekPrefixGE above an upper bound of another prefix: %s", pitStatus(it))
		}
	})
}

// TestPortIterator_PrefixOnly ports RocksDB's prefix_same_as_start
// iteration (Pebble's SeekPrefixGE through SeekGE): with
// IterOptions.PrefixOnly every SeekGE is a prefix seek, while First,
// Last and SeekLT are not.
func TestPortIterator_PrefixOnly(t *testing.T) {
	o := pitSmall()
	o.Comparer = pitSlashComparer()
	pitLayouts(t, o, func(t *testing.T, db *kv.DB, settle func()) {
		pitPrefixDB(t, db, settle)
		it := pitIter(t, db, &kv.IterOptions{PrefixOnly: true})
		pitRun(t, it, pitStep{"ge:a/2", "a/5->va/5"}, pitStep{"next", "(invalid)"},
			pitStep{"ge:b/", "(invalid)"}, pitStep{"first", "a/1->va/1"}, pitStep{"next", "a/5->va/5"},
			pitStep{"next", "aa/1->vaa/1"}, pitStep{"lt:c/", "b->vb"}, pitStep{"prev", "aa/1->vaa/1"})
	})
}

// TestPortIterator_PrefixNewerVersions ports Pebble's testdata/iterator
// cases of prefix seeks at a sequence number below newer versions: a
// prefix seek over an iterator made before the writes shows the old
// values, deletions of the prefix's keys included.
func TestPortIterator_PrefixNewerVersions(t *testing.T) {
	o := pitSmall()
	o.Comparer = pitSlashComparer()
	pitLayouts(t, o, func(t *testing.T, db *kv.DB, settle func()) {
		ldbSet(t, db, "a/1", "old")
		ldbSet(t, db, "a/2", "old")
		settle()
		it := pitIter(t, db, nil)
		ldbDelete(t, db, "a/1")
		for i := 0; i < 50; i++ {
			ldbSet(t, db, "a/2", "new")
		}
		ldbSet(t, db, "a/0", "new")
		settle()
		pitRun(t, it, pitStep{"prefix:a/", "a/1->old"}, pitStep{"next", "a/2->old"}, pitStep{"next", "(invalid)"})
		pitRun(t, pitIter(t, db, nil),
			pitStep{"prefix:a/", "a/0->new"}, pitStep{"next", "a/2->new"}, pitStep{"next", "(invalid)"},
			pitStep{"prefix:a/1", "a/2->new"})
	})
}
