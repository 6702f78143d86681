package kv_test

// RocksDB's IterLongKeys, extended: keys of 127, 128 and more bytes that
// share long prefixes, spread over blocks, tables and levels, read forward
// and backward. Block entries store a key's length shared with the
// previous key as a varint, so 128 bytes shared (a user key of 120 bytes
// or more, with its 8-byte trailer) takes two bytes, as does a suffix or a
// value of 128 bytes or more.

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// TestPortIterator_IterLongKeys ports RocksDB's IterLongKeys: long keys of
// repeated bytes, in a flushed table and the memtable, read by seeks and
// moves both ways.
func TestPortIterator_IterLongKeys(t *testing.T) {
	long := func(n int, c byte) string { return strings.Repeat(string(rune(c)), n) }
	pitLayouts(t, nil, func(t *testing.T, db *kv.DB, settle func()) {
		ldbSet(t, db, long(20, 0), "0")
		ldbSet(t, db, long(32, 2), "2")
		ldbSet(t, db, "a", "b")
		settle()
		ldbSet(t, db, long(50, 1), "1")
		ldbSet(t, db, long(127, 3), "3")
		ldbSet(t, db, long(64, 4), "4")
		it := pitIter(t, db, nil)
		want := []string{long(20, 0), long(50, 1), long(32, 2), long(127, 3), long(64, 4), "a"}
		vals := []string{"0", "1", "2", "3", "4", "b"}
		if !it.SeekGE([]byte(long(20, 0))) {
			t.Fatal("SeekGE found nothing")
		}
		for i := range want {
			if string(it.Key()) != want[i] || string(it.Value()) != vals[i] {
				t.Fatalf("step %d: at %q (%d B), want %q", i, it.Value(), len(it.Key()), vals[i])
			}
			it.Next()
		}
		if it.Valid() {
			t.Fatal("iterator valid past the last key")
		}
		if !it.SeekLT([]byte(long(127, 3) + "\x00")) {
			t.Fatal("SeekForPrev found nothing")
		}
		for i := 3; i >= 0; i-- {
			if string(it.Key()) != want[i] {
				t.Fatalf("backward step %d: at %q", i, it.Value())
			}
			it.Prev()
		}
		if it.Valid() {
			t.Fatal("iterator valid before the first key")
		}
	})
}

// pitLongKeys returns keys that share prefixes of 0 to 300 bytes, whose
// lengths sit around the one- and two-byte varint boundaries (127, 128,
// 255, 256) of both the shared part and the rest, with and without the
// 8-byte trailer.
func pitLongKeys() []string {
	base := strings.Repeat("p", 300)
	var keys []string
	for _, shared := range []int{0, 1, 111, 112, 119, 120, 121, 126, 127, 128, 129, 200, 247, 248, 255, 256, 300} {
		for _, extra := range []int{0, 1, 7, 8, 127, 128, 129, 200} {
			for _, c := range "AM" {
				k := base[:shared] + string(c) + strings.Repeat(string(c+1), extra)
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// pitLongValue returns a value of one of the lengths around the varint
// boundaries, told apart by its version.
func pitLongValue(i, version int) string {
	n := []int{0, 1, 127, 128, 129, 300}[i%6]
	v := fmt.Sprintf("v%d.%d;", version, i)
	for len(v) < n {
		v += "x"
	}
	return v
}

// TestPortIterator_LongKeysAcrossBlocks checks long keys sharing long
// prefixes, several versions each and some deleted, against a model: full
// scans both ways, and random seeks and moves, with block sizes that put
// one or a few entries in a block, in the memtable, in L0, compacted and
// mixed. Snapshots taken between the rounds keep the older versions in
// the tables, so a key's versions follow one another in a block, sharing
// the whole user key; iterators over each snapshot are checked too.
func TestPortIterator_LongKeysAcrossBlocks(t *testing.T) {
	keys := pitLongKeys()
	for _, blockSize := range []int{1, 300, 1000, 4096} {
		t.Run(fmt.Sprintf("block=%d", blockSize), func(t *testing.T) {
			if testing.Short() && blockSize != 300 {
				t.Skip("short")
			}
			o := &kv.Options{BlockSize: blockSize, MemTableSize: 64 << 10, TargetFileSize: 2 << 10, DisableAutomaticCompactions: true}
			pitLayouts(t, o, func(t *testing.T, db *kv.DB, settle func()) {
				snaps, models := pitWriteLongKeys(t, db, keys, settle)
				pitCheckModel(t, db, models[len(models)-1], keys)
				for i, snap := range snaps {
					pitCheckModel(t, snap, models[i], keys)
					must(t, snap.Close())
				}
			})
		})
	}
}

// pitWriteLongKeys writes three rounds of keys (a version of each, half
// of them in the second round, every third key deleted in the last),
// settling after each, with a snapshot taken before each of the last two.
// It returns the snapshots and the models of what each of them, and then
// the store, holds.
func pitWriteLongKeys(t *testing.T, db *kv.DB, keys []string, settle func()) ([]*kv.Snapshot, []map[string]string) {
	var snaps []*kv.Snapshot
	var models []map[string]string
	model := map[string]string{}
	for version := 0; version < 3; version++ {
		if version > 0 {
			snaps, models = append(snaps, db.NewSnapshot()), append(models, maps.Clone(model))
		}
		for i, k := range keys {
			if version == 2 && i%3 == 0 {
				ldbDelete(t, db, k)
				delete(model, k)
				continue
			}
			if version == 1 && i%2 == 1 {
				continue
			}
			v := pitLongValue(i+version, version)
			ldbSet(t, db, k, v)
			model[k] = v
		}
		settle()
	}
	return snaps, append(models, model)
}

// pitReader is a DB or a Snapshot.
type pitReader interface {
	pitNewIter
	ldbGetter
}

// pitCheckModel compares the store with its model: full scans both ways
// without bounds and with bounds cutting inside the long prefixes, then
// random moves whose seek keys are the keys, their prefixes and their
// extensions.
func pitCheckModel(t *testing.T, db pitReader, model map[string]string, keys []string) {
	t.Helper()
	it := pitIter(t, db, nil)
	if msg := scanBoth(it, newIterModel(model, nil)); msg != "" {
		t.Fatal(msg)
	}
	rng := newRand(uint64(len(model)))
	seekKey := func() []byte {
		k := keys[rng.IntN(len(keys))]
		switch rng.IntN(3) {
		case 0:
			return []byte(k[:rng.IntN(len(k)+1)])
		case 1:
			return []byte(k + "\x00")
		}
		return []byte(k)
	}
	for i := 0; i < 8; i++ {
		o := &kv.IterOptions{LowerBound: seekKey(), UpperBound: seekKey()}
		if i == 0 {
			o = nil
		}
		bit := pitIter(t, db, o)
		im := newIterModel(model, o)
		if msg := scanBoth(bit, im); msg != "" {
			t.Fatalf("bounds %s: %s", boundsString(o), msg)
		}
		if msg := checkIter(rng, bit, im, 200, seekKey); msg != "" {
			t.Fatalf("bounds %s: %s", boundsString(o), msg)
		}
	}
	for _, k := range keys {
		want, ok := model[k]
		if !ok {
			want = "NOT_FOUND"
		}
		ldbWant(t, db, k, want)
	}
}

// TestPortIterator_LongKeysRandomized writes random keys made of a few
// long shared prefixes (0 to 260 bytes) and short suffixes, with small
// values so that a block holds several restart intervals of them, under
// random sets, deletes, snapshots, flushes and compactions, and checks
// random moves, SetBounds, Clone and Refresh against the model, then
// random moves over each snapshot against its model.
func TestPortIterator_LongKeysRandomized(t *testing.T) {
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		rng := newRand(seed)
		db := pitOpen(t, &kv.Options{BlockSize: 8 << 10, MemTableSize: 32 << 10, TargetFileSize: 16 << 10})
		prefixes := []string{""}
		for _, n := range []int{119, 120, 127, 128, 200, 255, 256, 260} {
			prefixes = append(prefixes, strings.Repeat("k", n))
		}
		key := func() string {
			return prefixes[rng.IntN(len(prefixes))] + fmt.Sprintf("%03d", rng.IntN(60))
		}
		seekKey := func() []byte {
			k := key()
			return []byte(k[:len(k)-rng.IntN(3)])
		}
		model, steps := map[string]string{}, 3000
		var snaps []*kv.Snapshot
		var models []map[string]string
		if testing.Short() {
			steps = 600
		}
		for step := 0; step < steps; step++ {
			switch r := rng.IntN(100); {
			case r < 70:
				k, v := key(), fmt.Sprintf("v%d", step)
				ldbSet(t, db, k, v)
				model[k] = v
			case r < 90:
				k := key()
				ldbDelete(t, db, k)
				delete(model, k)
			case r < 93:
				snaps, models = append(snaps, db.NewSnapshot()), append(models, maps.Clone(model))
			case r < 96:
				ldbFlush(t, db)
			case r < 97:
				ldbCompact(t, db, "", "")
			}
			if step%300 == 299 {
				it := pitIter(t, db, nil)
				if msg := checkIterReuse(rng, it, newIterModel(model, nil), 300, seekKey); msg != "" {
					s, _ := pitTables(db)
					t.Fatalf("step %d (tables %s): %s", step, s, msg)
				}
			}
		}
		for i, snap := range snaps {
			it := pitIter(t, snap, nil)
			if msg := checkIter(rng, it, newIterModel(models[i], nil), 100, seekKey); msg != "" {
				t.Fatalf("snapshot %d: %s", i, msg)
			}
			must(t, snap.Close())
		}
	})
}
