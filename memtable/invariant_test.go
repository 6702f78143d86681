package memtable

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

// This file ports LevelDB's skiplist_test.cc ConcurrentTest: writers add
// the generations 1, 2, 3... of a few user-key families while readers
// walk the table and check that no step skips an entry that was in the
// table when the walk began. LevelDB's test has one writer and walks
// forward with Next and Seek; bloomkv's table takes concurrent inserters
// and walks backward over back links, so here each family has its own
// writer and the readers step with Next, Prev, SeekGE and SeekLT.

const invariantFamilies = 8

// invariantKey is the user key of generation gen of family k: k, then
// gen big-endian, so that a family's generations are contiguous and
// ascending.
func invariantKey(k int, gen uint64) []byte {
	b := make([]byte, 9)
	b[0] = byte(k)
	binary.BigEndian.PutUint64(b[1:], gen)
	return b
}

// invariantValue is generation gen of family k's value: a hash of both,
// so a reader can tell a torn entry.
func invariantValue(k int, gen uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, gen*0x9e3779b97f4a7c15^uint64(k))
}

// invariantState is the generations published per family: generations
// 1..published[k] of family k are in the table.
type invariantState struct {
	published [invariantFamilies]atomic.Uint64
}

func (s *invariantState) snapshot() (g [invariantFamilies]uint64) {
	for k := range g {
		g[k] = s.published[k].Load()
	}
	return g
}

// TestMemTable_ConcurrentInvariant runs one writer per family and four
// readers. Run it under -race.
func TestMemTable_ConcurrentInvariant(t *testing.T) {
	perFamily := uint64(4000)
	if testing.Short() {
		perFamily = 1000
	}
	seed := testseed.Seed(t)
	m := New(nil)
	var st invariantState
	var done atomic.Bool
	errs := make(chan error, invariantFamilies+4)
	var readers, writers sync.WaitGroup
	for r := range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(r)))
			for walks := 0; !done.Load() || walks < 10; walks++ {
				if err := invariantWalk(m, &st, rng); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for k := range invariantFamilies {
		writers.Add(1)
		go func() {
			defer writers.Done()
			var ins Inserter
			for gen := uint64(1); gen <= perFamily; gen++ {
				key := base.MakeInternalKey(invariantKey(k, gen), base.SeqNum(gen), base.KindSet)
				if err := ins.Add(m, key, invariantValue(k, gen)); err != nil {
					errs <- err
					return
				}
				st.published[k].Store(gen)
			}
		}()
	}
	writers.Wait()
	done.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := invariantWalk(m, &st, rand.New(rand.NewPCG(seed, 99))); err != nil {
		t.Fatal(err)
	}
	if want := int(perFamily) * invariantFamilies; m.Len() != want {
		t.Fatalf("Len = %d, want %d", m.Len(), want)
	}
}

// invariantPos is a decoded position: family and generation.
type invariantPos struct {
	k   int
	gen uint64
}

// decode checks the entry the iterator is at and returns its position.
func invariantDecode(it InternalIterator) (invariantPos, error) {
	uk := it.Key().UserKey
	if len(uk) != 9 || int(uk[0]) >= invariantFamilies {
		return invariantPos{}, fmt.Errorf("bad key %q", uk)
	}
	p := invariantPos{int(uk[0]), binary.BigEndian.Uint64(uk[1:])}
	if want := invariantValue(p.k, p.gen); string(it.Value()) != string(want) || it.Key().SeqNum() != base.SeqNum(p.gen) {
		return p, fmt.Errorf("entry %d/%d holds %x at seq %d", p.k, p.gen, it.Value(), it.Key().SeqNum())
	}
	return p, nil
}

// invariantWalk positions an iterator at random and takes random steps,
// checking each against the generations published before it began.
func invariantWalk(m *MemTable, st *invariantState, rng *rand.Rand) error {
	before := st.snapshot()
	it := m.NewIter(nil, nil)
	defer it.Close()
	k, gen := rng.IntN(invariantFamilies), uint64(rng.IntN(int(before[rng.IntN(invariantFamilies)])+2))
	var ok bool
	var cur invariantPos // the seek target, then where the iterator is
	forward := rng.IntN(2) == 0
	if forward {
		ok, cur = it.SeekGE(invariantKey(k, gen)), invariantPos{k, gen}
	} else {
		ok, cur = it.SeekLT(invariantKey(k, gen)), invariantPos{k, gen}
	}
	seek := true
	for step := 0; step < 200; step++ {
		var next invariantPos
		if ok {
			var err error
			if next, err = invariantDecode(it); err != nil {
				return err
			}
		}
		if err := checkStep(before, cur, next, ok, forward, seek); err != nil {
			return fmt.Errorf("step %d (forward=%v, seek=%v) from %d/%d: %v", step, forward, seek, cur.k, cur.gen, err)
		}
		if !ok {
			return nil
		}
		cur, seek = next, false
		if rng.IntN(4) == 0 {
			forward = !forward
		}
		if forward {
			ok = it.Next()
		} else {
			ok = it.Prev()
		}
	}
	return nil
}

// checkStep checks a move from cur to next (or to the end, !ok), forward
// or backward: no entry that was published before the walk began lies
// strictly between them, and next is not past one. A seek's cur is its
// target, which it may land on.
func checkStep(before [invariantFamilies]uint64, cur, next invariantPos, ok, forward, seek bool) error {
	less := func(a, b invariantPos) bool { return a.k < b.k || a.k == b.k && a.gen < b.gen }
	if ok && !seek && !(forward && less(cur, next) || !forward && less(next, cur)) {
		return fmt.Errorf("moved to %d/%d, out of order", next.k, next.gen)
	}
	// The first entry published before the walk that the move passes,
	// in its direction, must be next itself or lie beyond it.
	var q invariantPos
	var has bool
	if forward {
		q, has = nextPublished(before, cur, seek)
	} else {
		q, has = prevPublished(before, cur)
	}
	if has && (!ok || forward && less(q, next) || !forward && less(next, q)) {
		return fmt.Errorf("skipped %d/%d, published before the walk, to reach %d/%d (ok=%v)", q.k, q.gen, next.k, next.gen, ok)
	}
	return nil
}

// nextPublished returns the first entry published in before after p (or
// at it, inclusive).
func nextPublished(before [invariantFamilies]uint64, p invariantPos, inclusive bool) (invariantPos, bool) {
	gen := p.gen + 1
	if inclusive {
		gen = max(p.gen, 1)
	}
	for k := p.k; k < invariantFamilies; k, gen = k+1, 1 {
		if gen <= before[k] {
			return invariantPos{k, gen}, true
		}
	}
	return invariantPos{}, false
}

// prevPublished returns the last entry published in before below p.
func prevPublished(before [invariantFamilies]uint64, p invariantPos) (invariantPos, bool) {
	if p.gen > 1 && before[p.k] > 0 {
		return invariantPos{p.k, min(p.gen-1, before[p.k])}, true
	}
	for k := p.k - 1; k >= 0; k-- {
		if before[k] > 0 {
			return invariantPos{k, before[k]}, true
		}
	}
	return invariantPos{}, false
}
