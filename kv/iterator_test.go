package kv

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
)

// TestIterator_Random drives iterators with random moves over data spread
// across memtables and levels, at the current state and at snapshots, and
// compares every position with a sorted model. It prints its seed.
func TestIterator_Random(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	d, _ := openMem(t, &Options{DisableAutomaticCompactions: true, BlockSize: 64})
	defer d.Close()
	model := map[string]string{}
	type snap struct {
		s     *Snapshot
		model map[string]string
	}
	var snaps []snap
	for step := 0; step < 400; step++ {
		k := fmt.Sprintf("k%02d", rng.IntN(60))
		var err error
		switch r := rng.IntN(100); {
		case r < 60:
			v := fmt.Sprintf("v%d", step)
			err = d.Set([]byte(k), []byte(v), NoSync)
			model[k] = v
		case r < 85:
			err = d.Delete([]byte(k), NoSync)
			delete(model, k)
		case r < 92:
			err = d.Flush()
		case r < 95:
			lo := fmt.Sprintf("k%02d", rng.IntN(60))
			err = d.Compact([]byte(lo), []byte(lo+"z"))
		default:
			snaps = append(snaps, snap{d.NewSnapshot(), cloneModel(model)})
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if step%50 == 49 {
			it, _ := d.NewIter(randomBounds(rng))
			checkIterAgainstModel(t, rng, it, model)
			for _, s := range snaps {
				it, _ := s.s.NewIter(randomBounds(rng))
				checkIterAgainstModel(t, rng, it, s.model)
			}
		}
	}
	for _, s := range snaps {
		s.s.Close()
	}
}

func cloneModel(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func randomBounds(rng *rand.Rand) *IterOptions {
	o := &IterOptions{}
	if rng.IntN(2) == 0 {
		o.LowerBound = fmt.Appendf(nil, "k%02d", rng.IntN(60))
	}
	if rng.IntN(2) == 0 {
		o.UpperBound = fmt.Appendf(nil, "k%02d", rng.IntN(60))
	}
	return o
}

// checkIterAgainstModel makes random moves and checks each position.
func checkIterAgainstModel(t *testing.T, rng *rand.Rand, it *Iterator, model map[string]string) {
	t.Helper()
	defer it.Close()
	var keys []string
	for k := range model {
		if (it.lower == nil || k >= string(it.lower)) && (it.upper == nil || k < string(it.upper)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	pos := -1 // index into keys; -1 or len(keys): invalid
	var ops []string
	for i := 0; i < 60; i++ {
		var op string
		switch r := rng.IntN(6); {
		case r == 0:
			op = "first"
			it.First()
			pos = 0
		case r == 1:
			op = "last"
			it.Last()
			pos = len(keys) - 1
		case r == 2 && pos >= 0 && pos < len(keys):
			op = "next"
			it.Next()
			pos++
		case r == 3 && pos >= 0 && pos < len(keys):
			op = "prev"
			it.Prev()
			pos--
		case r == 4:
			k := fmt.Sprintf("k%02d", rng.IntN(62))
			op = "seek-ge " + k
			it.SeekGE([]byte(k))
			pos = sort.SearchStrings(keys, k)
		default:
			k := fmt.Sprintf("k%02d", rng.IntN(62))
			op = "seek-lt " + k
			it.SeekLT([]byte(k))
			pos = sort.SearchStrings(keys, k) - 1
		}
		ops = append(ops, op)
		if err := it.Error(); err != nil {
			t.Fatalf("after %v: %v", ops, err)
		}
		valid := pos >= 0 && pos < len(keys)
		if !valid {
			pos = -1
		}
		if it.Valid() != valid {
			t.Fatalf("bounds [%s, %s) after %v: valid %v, model %v (keys %v)",
				it.lower, it.upper, ops, it.Valid(), valid, keys)
		}
		if valid && (string(it.Key()) != keys[pos] || string(it.Value()) != model[keys[pos]]) {
			t.Fatalf("bounds [%s, %s) after %v: at %s=%s, model %s=%s",
				it.lower, it.upper, ops, it.Key(), it.Value(), keys[pos], model[keys[pos]])
		}
	}
}
