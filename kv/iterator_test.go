package kv_test

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestIterator_Random drives iterators with random moves over data spread
// across memtables and levels, at the current state and at snapshots, and
// compares every position with a sorted model. It prints its seed; -seed
// replays one. It runs under the default comparer and under one that
// orders keys the same way through a function of its own, which the
// iterator does not know for bytewise: it then tells a key's versions
// apart with the comparer rather than bytes.Equal.
func TestIterator_Random(t *testing.T) {
	opaque := *sstable.DefaultComparer
	opaque.Compare = func(a, b []byte) int { return bytes.Compare(a, b) }
	for _, cmp := range []*sstable.Comparer{sstable.DefaultComparer, &opaque} {
		t.Run(fmt.Sprintf("bytewise=%v", cmp.Bytewise()), func(t *testing.T) { testIteratorRandom(t, cmp) })
	}
}

func testIteratorRandom(t *testing.T, cmp *sstable.Comparer) {
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		rng := newRand(seed)
		d, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true, BlockSize: 64, Comparer: cmp})
		if err != nil {
			t.Fatal(err)
		}
		defer mustClose(t, d)
		model := map[string]string{}
		type snap struct {
			s     *kv.Snapshot
			model map[string]string
		}
		var snaps []snap
		defer func() {
			for _, s := range snaps {
				must(t, s.s.Close())
			}
		}()
		for step := 0; step < 400; step++ {
			k := fmt.Sprintf("k%02d", rng.IntN(60))
			var err error
			switch r := rng.IntN(100); {
			case r < 60:
				v := fmt.Sprintf("v%d", step)
				err = d.Set([]byte(k), []byte(v), kv.NoSync)
				model[k] = v
			case r < 85:
				err = d.Delete([]byte(k), kv.NoSync)
				delete(model, k)
			case r < 92:
				err = d.Flush()
			case r < 95:
				lo := fmt.Sprintf("k%02d", rng.IntN(60))
				err = d.Compact([]byte(lo), []byte(lo+"z"))
			default:
				snaps = append(snaps, snap{d.NewSnapshot(), maps.Clone(model)})
			}
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if step%50 == 49 {
				checkRandomIter(t, rng, d.NewIter, model)
				for _, s := range snaps {
					checkRandomIter(t, rng, s.s.NewIter, s.model)
				}
			}
		}
	})
}

// checkRandomIter opens an iterator with random bounds, makes 60 random
// moves on it and its model, and closes it.
func checkRandomIter(t *testing.T, rng *rand.Rand, newIter func(*kv.IterOptions) (*kv.Iterator, error), model map[string]string) {
	t.Helper()
	o := &kv.IterOptions{}
	if rng.IntN(2) == 0 {
		o.LowerBound = fmt.Appendf(nil, "k%02d", rng.IntN(60))
	}
	if rng.IntN(2) == 0 {
		o.UpperBound = fmt.Appendf(nil, "k%02d", rng.IntN(60))
	}
	it, err := newIter(o)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, it)
	seekKey := func() []byte { return fmt.Appendf(nil, "k%02d", rng.IntN(62)) }
	if msg := checkIter(rng, it, newIterModel(model, o), 60, seekKey); msg != "" {
		t.Fatalf("bounds %s: %s", boundsString(o), msg)
	}
}

// TestIterator_StepsFromAnEnd checks Next and Prev on an iterator that is
// not Valid: from the end a move ran off they step back onto the keys,
// as Pebble's do; before any positioning call, and after SetBounds, they
// find nothing.
func TestIterator_StepsFromAnEnd(t *testing.T) {
	db := openMemDB(t)
	defer mustClose(t, db)
	for _, k := range []string{"a", "b", "c"} {
		must(t, db.Set([]byte(k), []byte(k), kv.NoSync))
	}
	it, err := db.NewIter(&kv.IterOptions{UpperBound: []byte("c")})
	must(t, err)
	defer mustClose(t, it)
	at := func(what string, ok bool, want string) {
		t.Helper()
		switch {
		case want == "" && (ok || it.Valid()):
			t.Fatalf("%s: at %q, want no key", what, it.Key())
		case want != "" && (!ok || string(it.Key()) != want):
			t.Fatalf("%s: at %q (%v), want %q", what, it.Key(), ok, want)
		}
	}
	at("Next before any positioning call", it.Next(), "")
	at("Prev before any positioning call", it.Prev(), "")
	at("Last", it.Last(), "b")
	at("Next off the last key", it.Next(), "")
	at("Next again", it.Next(), "")
	at("Prev from past the last key", it.Prev(), "b")
	at("SeekLT(a)", it.SeekLT([]byte("a")), "")
	at("Prev again", it.Prev(), "")
	at("Next from before the first key", it.Next(), "a")
	at("SeekGE(bb)", it.SeekGE([]byte("bb")), "")
	at("Prev from past the last key, within the bounds", it.Prev(), "b")
	it.SetBounds(nil, nil)
	at("Prev after SetBounds", it.Prev(), "")
	at("First", it.First(), "a")
	at("Prev off the first key", it.Prev(), "")
	at("Next from before the first key", it.Next(), "a")
}

// TestIterator_Key_EmptyKey checks that an iterator at the empty key
// gives a non-nil Key, whatever it showed before: nil is the Key of an
// iterator that is not Valid. A fresh iterator used to give nil there,
// and one that had shown a longer key an empty slice (TestMetamorphic
// found the difference between stores).
func TestIterator_Key_EmptyKey(t *testing.T) {
	d, err := kv.Open("db", &kv.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	for _, k := range []string{"", "a"} {
		if err := d.Set([]byte(k), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	it, err := d.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for _, move := range []struct {
		name string
		fn   func() bool
	}{{"First", it.First}, {"SeekGE", func() bool { return it.SeekGE(nil) }}, {"Last then Prev", func() bool { return it.Last() && it.Prev() }}} {
		if !move.fn() || it.Key() == nil || len(it.Key()) != 0 {
			t.Errorf("%s: Valid %v, Key %q (nil %v), want the empty key, not nil", move.name, it.Valid(), it.Key(), it.Key() == nil)
		}
	}
}
