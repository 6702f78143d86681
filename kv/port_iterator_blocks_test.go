package kv_test

// RocksDB's IterPrevKeyCrossingBlocks and its randomized variant, ported
// to bloomkv (see port_iterator_test.go): moving backward over keys whose
// versions lie in many blocks and tables. RocksDB's merge operands become
// overwrites, which bloomkv has in their place.

import (
	"maps"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// TestPortIterator_IterPrevKeyCrossingBlocks ports RocksDB's
// IterPrevKeyCrossingBlocks: one entry per block, a key's versions in
// several tables, and Prev across them.
func TestPortIterator_IterPrevKeyCrossingBlocks(t *testing.T) {
	db := pitOpen(t, &kv.Options{BlockSize: 1, DisableAutomaticCompactions: true})
	ldbSet(t, db, "key1", "val1")
	ldbSet(t, db, "key2", "val2")
	ldbSet(t, db, "key3", "val3")
	ldbSet(t, db, "key4", "val4")
	ldbFlush(t, db)
	snap := db.NewSnapshot()
	defer snap.Close()
	ldbSet(t, db, "key2", "val2b")
	ldbSet(t, db, "key3", "val3b")
	ldbSet(t, db, "key3", "val3c")
	ldbSet(t, db, "key4", "val4b")
	ldbFlush(t, db)
	ldbSet(t, db, "key3", "val3d")
	ldbSet(t, db, "key4", "val4c")
	ldbSet(t, db, "key5", "val5")
	ldbDelete(t, db, "key2")
	ldbFlush(t, db)
	ldbSet(t, db, "key4", "val4d")
	pitRun(t, pitIter(t, db, nil),
		pitStep{"last", "key5->val5"}, pitStep{"prev", "key4->val4d"}, pitStep{"prev", "key3->val3d"},
		pitStep{"prev", "key1->val1"}, pitStep{"prev", "(invalid)"}, pitStep{"next", "key1->val1"},
		pitStep{"next", "key3->val3d"})
	pitRun(t, pitIter(t, snap, nil),
		pitStep{"last", "key4->val4"}, pitStep{"prev", "key3->val3"}, pitStep{"prev", "key2->val2"},
		pitStep{"next", "key3->val3"}, pitStep{"prev", "key2->val2"}, pitStep{"prev", "key1->val1"})
	ldbCompact(t, db, "", "")
	pitRun(t, pitIter(t, snap, nil), pitStep{"last", "key4->val4"}, pitStep{"prev", "key3->val3"})
	pitRun(t, pitIter(t, db, nil), pitStep{"last", "key5->val5"}, pitStep{"prev", "key4->val4d"})
}

// TestPortIterator_IterPrevKeyCrossingBlocksRandomized ports RocksDB's
// IterPrevKeyCrossingBlocksRandomized: ten tables of deletes of every
// other key, a table of values, one of overwrites of most keys (RocksDB's
// merge operands), one of deletes, then a full backward scan against the
// model; a second round adds values to half the keys across tables and
// in the memtable. Every block holds one key.
func TestPortIterator_IterPrevKeyCrossingBlocksRandomized(t *testing.T) {
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		rng := newRand(seed)
		numKeys, valSize := 500, 64
		if testing.Short() {
			numKeys = 120
		}
		db := pitOpen(t, &kv.Options{BlockSize: 16, DisableAutomaticCompactions: true,
			L0StopWritesThreshold: 1000, MemTableSize: 1 << 20})
		for f := 0; f < 10; f++ {
			for i := 0; i < numKeys; i += 2 {
				ldbDelete(t, db, ldbKey(i))
			}
			ldbFlush(t, db)
		}
		model := map[string]string{}
		set := func(i int) {
			k, v := ldbKey(i), ldbRandom(rng, valSize)
			ldbSet(t, db, k, v)
			model[k] = v
		}
		for i := 0; i < numKeys; i++ {
			set(i)
		}
		ldbFlush(t, db)
		for i := 0; i < numKeys; i++ {
			for j := 0; rng.IntN(100) >= 20 && j < 3; j++ {
				set(i)
			}
		}
		ldbFlush(t, db)
		for i := 0; i < numKeys; i++ {
			if rng.IntN(100) < 10 {
				ldbDelete(t, db, ldbKey(i))
				delete(model, ldbKey(i))
			}
		}
		ldbFlush(t, db)
		pitScanBack(t, db, model)
		snapModel, snap := maps.Clone(model), db.NewSnapshot()
		defer snap.Close()
		for i := 0; i < numKeys; i++ {
			if rng.IntN(2) == 0 {
				continue
			}
			for j := 0; j < 3; j++ {
				set(i)
				if rng.IntN(4) == 0 {
					ldbFlush(t, db)
				}
			}
		}
		pitScanBack(t, db, model)
		pitScanBack(t, snap, snapModel)
		ldbCompact(t, db, "", "")
		pitScanBack(t, db, model)
		pitScanBack(t, snap, snapModel)
	})
}

// pitScanBack checks a full backward scan of r, then a forward one and
// random moves, against the model.
func pitScanBack(t *testing.T, r pitNewIter, model map[string]string) {
	t.Helper()
	it := pitIter(t, r, nil)
	im := newIterModel(model, nil)
	ok, want := it.Last(), im.last()
	for n := 0; ; n++ {
		if msg := compareIterPosition(it, im, ok, want); msg != "" {
			t.Fatalf("backward scan, step %d: %s", n, msg)
		}
		if !ok {
			break
		}
		ok, want = it.Prev(), im.prev()
	}
	if msg := scanBoth(it, im); msg != "" {
		t.Fatal(msg)
	}
	rng := newRand(uint64(len(model)))
	seekKey := func() []byte { return []byte(ldbKey(rng.IntN(520))) }
	if msg := checkIter(rng, it, im, 300, seekKey); msg != "" {
		t.Fatal(msg)
	}
}
