package kv

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/testseed"
)

// TestCompaction_RangeDelStress writes sets, deletes and many overlapping
// range deletions over a small key space, with snapshots taken and closed
// at random, several compactions at once, and flushes and manual
// compactions of random ranges, under tables so small that compaction
// outputs are cut all the time and range tombstones cross their cuts.
// After every flush and compaction the tree must keep its invariants
// (checkTree), and every read, Get and a full scan, at the latest state
// and at every open snapshot, must match the model.
func TestCompaction_RangeDelStress(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed5eed5eed5eed))
	steps := 6000
	if testing.Short() {
		steps = 2500
	}
	const keys = 300
	o := &Options{MemTableSize: int64(2<<10 + rng.IntN(4<<10)), L0CompactionThreshold: 2,
		LBaseMaxBytes: int64(4<<10 + rng.IntN(8<<10)), LevelMultiplier: 2, TargetFileSize: int64(1<<10 + rng.IntN(2<<10)),
		BlockSize: 128}
	d, _ := openMem(t, o)
	defer mustClose(t, d)
	eagerConcurrency(d, 1+rng.IntN(3))
	key := func(i int) string { return fmt.Sprintf("k%04d", i) }

	type heldSnap struct {
		s     *Snapshot
		model map[string]string
	}
	var snaps []heldSnap
	defer func() {
		for _, s := range snaps {
			must(t, s.s.Close())
		}
	}()
	model := map[string]string{}
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		if len(log) > 30 {
			log = log[len(log)-30:]
		}
		t.Fatalf("seed %d: %s\nrecent steps:\n%s", seed, fmt.Sprintf(format, args...), strings.Join(log, "\n"))
	}
	checkAll := func(what string) {
		t.Helper()
		if err := checkTree(d); err != nil {
			fail("%s: %v\n%s", what, err, d.Metrics())
		}
		check := func(name string, get func([]byte) ([]byte, error), newIter func(*IterOptions) (*Iterator, error), m map[string]string) {
			for i := 0; i < keys; i++ {
				k := key(i)
				got, err := get([]byte(k))
				want, ok := m[k]
				switch {
				case !ok && !errors.Is(err, ErrNotFound):
					fail("%s: %s Get(%q) = %q, %v; want not found", what, name, k, got, err)
				case ok && (err != nil || string(got) != want):
					fail("%s: %s Get(%q) = %q, %v; want %q", what, name, k, got, err, want)
				}
			}
			it, err := newIter(nil)
			if err != nil {
				fail("%s: %s NewIter: %v", what, name, err)
			}
			defer it.Close()
			wantKeys := slices.Sorted(maps.Keys(m))
			var gotKeys []string
			for it.First(); it.Valid(); it.Next() {
				gotKeys = append(gotKeys, string(it.Key()))
				if string(it.Value()) != m[string(it.Key())] {
					fail("%s: %s iterator %q = %q, want %q", what, name, it.Key(), it.Value(), m[string(it.Key())])
				}
			}
			if !slices.Equal(gotKeys, wantKeys) {
				fail("%s: %s iterator keys %q, want %q", what, name, gotKeys, wantKeys)
			}
		}
		check("DB", d.Get, d.NewIter, model)
		for j, s := range snaps {
			check(fmt.Sprintf("snapshot %d", j), s.s.Get, s.s.NewIter, s.model)
		}
	}
	for step := 1; step <= steps; step++ {
		switch p := rng.IntN(100); {
		case p < 45:
			k := key(rng.IntN(keys))
			v := fmt.Sprintf("%d.%s", step, strings.Repeat("x", rng.IntN(80)))
			log = append(log, fmt.Sprintf("%d: Set(%s)", step, k))
			must(t, d.Set([]byte(k), []byte(v), NoSync))
			model[k] = v
		case p < 60:
			k := key(rng.IntN(keys))
			log = append(log, fmt.Sprintf("%d: Delete(%s)", step, k))
			must(t, d.Delete([]byte(k), NoSync))
			delete(model, k)
		case p < 75:
			lo := rng.IntN(keys)
			hi := min(keys, lo+1+rng.IntN(40))
			log = append(log, fmt.Sprintf("%d: DeleteRange(%s, %s)", step, key(lo), key(hi)))
			must(t, d.DeleteRange([]byte(key(lo)), []byte(key(hi)), NoSync))
			for i := lo; i < hi; i++ {
				delete(model, key(i))
			}
		case p < 80:
			log = append(log, fmt.Sprintf("%d: NewSnapshot", step))
			snaps = append(snaps, heldSnap{d.NewSnapshot(), maps.Clone(model)})
		case p < 84:
			if len(snaps) > 0 {
				j := rng.IntN(len(snaps))
				log = append(log, fmt.Sprintf("%d: close snapshot %d", step, j))
				must(t, snaps[j].s.Close())
				snaps = slices.Delete(snaps, j, j+1)
			}
		case p < 90:
			log = append(log, fmt.Sprintf("%d: Flush", step))
			must(t, d.Flush())
			checkAll("after Flush")
		case p < 94:
			lo := rng.IntN(keys)
			hi := min(keys-1, lo+rng.IntN(100))
			log = append(log, fmt.Sprintf("%d: Compact(%s, %s)", step, key(lo), key(hi)))
			must(t, d.Compact([]byte(key(lo)), []byte(key(hi))))
			checkAll("after Compact")
		default:
			k := key(rng.IntN(keys))
			got, err := d.Get([]byte(k))
			want, ok := model[k]
			if ok != (err == nil) || (ok && string(got) != want) {
				fail("step %d: Get(%q) = %q, %v; want %q (present %t)", step, k, got, err, want, ok)
			}
		}
	}
	must(t, d.Flush())
	waitIdle(t, d)
	checkAll("at the end")
	must(t, d.Compact(nil, nil))
	checkAll("after Compact(nil, nil)")
	t.Logf("tables per level %v, %d compactions", tableCounts(d.Metrics()), d.Metrics().Compact.Count)
}
