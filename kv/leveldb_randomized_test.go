package kv_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestLevelDB_Randomized ports DBTest.Randomized: random sets, deletes and
// batches of both, checked against a map: every so often the whole store
// (scanned both ways, within random bounds, and read key by key) and a
// snapshot taken earlier against the map as it was then, with reopens and
// compactions in between. Beyond LevelDB's, the keys include long ones
// sharing 150-byte prefixes, and the ops DeleteRange.
func TestLevelDB_Randomized(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	fs := vfs.NewMem()
	o := ldbSmall(8 << 10)
	db := ldbOpen(t, fs, o)
	defer func() { ldbClose(t, db) }()
	n := 20000
	if testing.Short() {
		n = 3000
	}
	long := strings.Repeat("p", 150)
	model := map[string]string{}
	key := func() string {
		switch rng.IntN(10) {
		case 0:
			return ldbRandom(rng, 1+rng.IntN(20)) // outside the usual space
		case 1, 2:
			return long + fmt.Sprintf("%03d", rng.IntN(100))
		}
		return fmt.Sprintf("k%03d", rng.IntN(300))
	}
	value := func() string {
		if rng.IntN(20) == 0 {
			return ldbRandom(rng, 1000+rng.IntN(4000))
		}
		return fmt.Sprintf("v%d", rng.Int())
	}
	var snap *kv.Snapshot
	var snapModel map[string]string
	for step := range n {
		switch r := rng.IntN(100); {
		case r < 45:
			k, v := key(), value()
			ldbSet(t, db, k, v)
			model[k] = v
		case r < 72:
			k := key()
			ldbDelete(t, db, k)
			delete(model, k)
		case r < 75:
			start, end := key(), key()
			if start > end {
				start, end = end, start
			}
			must1(t, db.DeleteRange([]byte(start), []byte(end), kv.NoSync))
			maps.DeleteFunc(model, func(k, _ string) bool { return start <= k && k < end })
		default:
			b := db.NewBatch()
			for range rng.IntN(10) {
				k := key()
				if rng.IntN(2) == 0 {
					v := value()
					must1(t, b.Set([]byte(k), []byte(v)))
					model[k] = v
				} else {
					must1(t, b.Delete([]byte(k)))
					delete(model, k)
				}
			}
			must1(t, db.Apply(b, kv.NoSync))
		}
		if step%200 != 199 {
			continue
		}
		ldbCheckModel(t, rng, db, model, fmt.Sprintf("step %d", step))
		if snap != nil {
			ldbCheckModel(t, rng, snap, snapModel, fmt.Sprintf("step %d, snapshot", step))
			must1(t, snap.Close())
			snap = nil
		}
		switch rng.IntN(4) {
		case 0:
			db = ldbReopen(t, db, fs, o)
			ldbCheckModel(t, rng, db, model, fmt.Sprintf("step %d, reopened", step))
		case 1:
			start, end := key(), key()
			if start > end {
				start, end = end, start
			}
			ldbCompact(t, db, start, end)
		}
		snap = db.NewSnapshot()
		snapModel = maps.Clone(model)
	}
	if snap != nil {
		must1(t, snap.Close())
	}
}

// ldbIterable is what ldbCheckModel reads: a DB or a Snapshot.
type ldbIterable interface {
	ldbGetter
	NewIter(*kv.IterOptions) (*kv.Iterator, error)
}

// ldbCheckModel checks r's contents against model: read key by key,
// scanned both ways, and scanned both ways within random bounds.
func ldbCheckModel(t *testing.T, rng *rand.Rand, r ldbIterable, model map[string]string, what string) {
	t.Helper()
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
		if got := ldbGet(t, r, k); got != model[k] {
			t.Fatalf("%s: Get(%s) = %s, want %s", what, ldbShort(k), ldbShort(got), ldbShort(model[k]))
		}
	}
	slices.Sort(keys)
	ldbCheckScan(t, r, nil, keys, model, what)
	for range 3 {
		lo, hi := ldbBound(rng, keys), ldbBound(rng, keys)
		if lo > hi {
			lo, hi = hi, lo
		}
		var in []string
		for _, k := range keys {
			if lo <= k && k < hi {
				in = append(in, k)
			}
		}
		opts := &kv.IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)}
		ldbCheckScan(t, r, opts, in, model, fmt.Sprintf("%s, bounds [%s, %s)", what, ldbShort(lo), ldbShort(hi)))
	}
}

// ldbBound returns a random iterator bound: one of keys, or a key next
// to one.
func ldbBound(rng *rand.Rand, keys []string) string {
	if len(keys) == 0 || rng.IntN(4) == 0 {
		return fmt.Sprintf("k%03d", rng.IntN(300))
	}
	k := keys[rng.IntN(len(keys))]
	if rng.IntN(2) == 0 {
		return k + "\x00"
	}
	return k
}

// ldbCheckScan checks that an iterator of r with opts shows exactly keys,
// with model's values, forward and backward.
func ldbCheckScan(t *testing.T, r ldbIterable, opts *kv.IterOptions, keys []string, model map[string]string, what string) {
	t.Helper()
	it, err := r.NewIter(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(keys) || string(it.Key()) != keys[i] || string(it.Value()) != model[keys[i]] {
			t.Fatalf("%s: forward scan's entry %d is %s, want %d keys", what, i, ldbShort(string(it.Key())), len(keys))
		}
		i++
	}
	if i != len(keys) {
		t.Fatalf("%s: forward scan saw %d keys, want %d", what, i, len(keys))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		if i < 0 || string(it.Key()) != keys[i] || string(it.Value()) != model[keys[i]] {
			t.Fatalf("%s: backward scan's entry %d is %s", what, i, ldbShort(string(it.Key())))
		}
	}
	if i != 0 {
		t.Fatalf("%s: backward scan missed %d keys", what, i)
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}
