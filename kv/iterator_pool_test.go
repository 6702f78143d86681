package kv_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestIterator_PoolReuse checks that an iterator's pooled state carries
// nothing over to the next iterator: over a store with data in memtables
// and several levels and with range deletions, it keeps a few iterators
// open at once, leaves each in a random state before closing it (exhausted,
// mid-key, after a reverse prefix misuse error, in prefix mode, with
// bounds), and compares every iterator opened after with a model. A
// closed iterator is then driven while its state serves another: it must
// fail with ErrClosed and leave the other alone. It prints its seed; -seed
// replays one.
func TestIterator_PoolReuse(t *testing.T) {
	forEachSeed(t, 2, func(t *testing.T, seed uint64) {
		rng := newRand(seed)
		d, err := kv.Open("db", &kv.Options{
			FS: vfs.NewMem(), DisableAutomaticCompactions: true, BlockSize: 64,
			Comparer: userComparer(),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer mustClose(t, d)
		model := map[string]string{}
		var open []*kv.Iterator
		for step := 0; step < 300; step++ {
			if err := randomPoolWrite(rng, d, model, step); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if step%10 != 9 {
				continue
			}
			it, o := openRandomIter(t, rng, d)
			seekKey := func() []byte { return []byte(poolKey(rng.IntN(42))) }
			if msg := checkIter(rng, it, newIterModel(maps.Clone(model), o), 30, seekKey); msg != "" {
				t.Fatalf("step %d, bounds %s: %s", step, boundsString(o), msg)
			}
			leaveInRandomState(rng, it)
			open = append(open, it)
			if len(open) > 2 || rng.IntN(2) == 0 {
				k := rng.IntN(len(open))
				closeAndProbe(t, rng, d, open[k], model)
				open = append(open[:k], open[k+1:]...)
			}
		}
		for _, it := range open {
			// Close returns the error the iterator was left in, if any.
			left := it.Error()
			if err := it.Close(); err != left {
				t.Fatalf("Close = %v, want the iterator's error %v", err, left)
			}
		}
	})
}

// poolKey returns key i of the test: users of itertest.UserSplit with two
// fields each, so that prefix seeks have prefixes to find.
func poolKey(i int) string { return fmt.Sprintf("user/%02d/f%d", i/2, i%2) }

// randomPoolWrite makes one random write, flush, compaction or range
// deletion, and applies it to model.
func randomPoolWrite(rng *rand.Rand, d *kv.DB, model map[string]string, step int) error {
	k := poolKey(rng.IntN(40))
	switch r := rng.IntN(100); {
	case r < 60:
		v := fmt.Sprintf("v%d", step)
		model[k] = v
		return d.Set([]byte(k), []byte(v), kv.NoSync)
	case r < 75:
		delete(model, k)
		return d.Delete([]byte(k), kv.NoSync)
	case r < 82:
		end := poolKey(rng.IntN(40))
		for m := range model {
			if k <= m && m < end {
				delete(model, m)
			}
		}
		return d.DeleteRange([]byte(k), []byte(end), kv.NoSync)
	case r < 94:
		return d.Flush()
	default:
		return d.Compact([]byte(k), []byte(k+"z"))
	}
}

// openRandomIter opens an iterator with random bounds, or nil options,
// and checks it starts unpositioned and without an error.
func openRandomIter(t *testing.T, rng *rand.Rand, d *kv.DB) (*kv.Iterator, *kv.IterOptions) {
	t.Helper()
	var o *kv.IterOptions
	if rng.IntN(3) != 0 {
		o = &kv.IterOptions{}
		if rng.IntN(2) == 0 {
			o.LowerBound = []byte(poolKey(rng.IntN(42)))
		}
		if rng.IntN(2) == 0 {
			o.UpperBound = []byte(poolKey(rng.IntN(42)))
		}
	}
	it, err := d.NewIter(o)
	if err != nil {
		t.Fatal(err)
	}
	if it.Valid() || it.Key() != nil || it.Error() != nil {
		t.Fatalf("new iterator: valid %v at %q, error %v", it.Valid(), it.Key(), it.Error())
	}
	return it, o
}

// leaveInRandomState moves it somewhere a fresh iterator never is.
func leaveInRandomState(rng *rand.Rand, it *kv.Iterator) {
	switch rng.IntN(4) {
	case 0:
		for it.Next() {
		}
	case 1:
		it.SeekPrefixGE([]byte(poolKey(rng.IntN(42))[:len("user/00/")]))
	case 2:
		it.SeekPrefixGE([]byte(poolKey(rng.IntN(42))))
		it.Prev() // ErrReversePrefixIteration, or false on no key
	default:
		it.Last()
		it.Prev()
	}
}

// closeAndProbe closes it, opens an iterator that may well reuse its
// state, and drives the closed one: every call must fail harmlessly, and
// the new iterator must still agree with model.
func closeAndProbe(t *testing.T, rng *rand.Rand, d *kv.DB, it *kv.Iterator, model map[string]string) {
	t.Helper()
	// Close reports the misuse leaveInRandomState may have made.
	err := it.Close()
	if err != nil && !errors.Is(err, kv.ErrReversePrefixIteration) && !errors.Is(err, kv.ErrInvalidPrefixSeek) {
		t.Fatalf("Close: %v", err)
	}
	fresh, o := openRandomIter(t, rng, d)
	defer mustClose(t, fresh)
	im := newIterModel(maps.Clone(model), o)
	ok, want := fresh.First(), im.first()
	if it.First() || it.Last() || it.SeekGE([]byte("user/")) || it.SeekLT([]byte("z")) ||
		it.SeekPrefixGE([]byte("user/01/")) || it.Next() || it.Prev() || it.Valid() ||
		it.Key() != nil || it.Value() != nil {
		t.Fatal("a closed iterator moved or showed a key")
	}
	if !errors.Is(it.Error(), kv.ErrClosed) || !errors.Is(it.Close(), kv.ErrClosed) {
		t.Fatalf("closed iterator: Error %v, Close %v, want ErrClosed", it.Error(), it.Close())
	}
	if msg := compareIterPosition(fresh, im, ok, want); msg != "" {
		t.Fatalf("bounds %s, First next to a closed iterator: %s", boundsString(o), msg)
	}
	if msg := scanBoth(fresh, im); msg != "" {
		t.Fatalf("bounds %s: %s", boundsString(o), msg)
	}
}
