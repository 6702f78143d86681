package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

// TestMemTable_OneWriterManyReaders adds entries in random key order while
// readers check that every entry published before they looked is there,
// whole, and that iterators see a sorted table in both directions. Run it
// under -race.
func TestMemTable_OneWriterManyReaders(t *testing.T) {
	n := 20_000
	if testing.Short() {
		n = 3_000
	}
	seed := testseed.Seed(t)
	order := rand.New(rand.NewPCG(seed, 0)).Perm(n)
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%07d", order[i])) }
	value := func(i int) []byte { return []byte(fmt.Sprintf("value-%d", order[i])) }

	m := New(nil)
	var published atomic.Int64 // entries 0..published-1 are added
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(r+1)))
			for published.Load() < int64(n) {
				var err error
				if r%2 == 0 {
					err = checkGets(m, rng, int(published.Load()), key, value)
				} else {
					err = checkScan(m, int(published.Load()), r == 3)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		m.Add(base.MakeInternalKey(key(i), base.SeqNum(i+1), base.KindSet), value(i))
		published.Store(int64(i + 1))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := checkScan(m, n, false); err != nil {
		t.Fatal(err)
	}
}

func checkGets(m *MemTable, rng *rand.Rand, upTo int, key, value func(int) []byte) error {
	for range 100 {
		if upTo == 0 {
			return nil
		}
		i := rng.IntN(upTo)
		v, kind, found := m.Get(key(i), base.SeqNumMax)
		if !found || kind != base.KindSet || !bytes.Equal(v, value(i)) {
			return fmt.Errorf("Get(%s) = %q, %v after it was added", key(i), v, found)
		}
		if _, _, found := m.Get(key(i), base.SeqNum(i)); found {
			return fmt.Errorf("Get(%s) at seq %d found an entry of seq %d", key(i), i, i+1)
		}
	}
	return nil
}

// checkScan walks the whole table, forward or backward, checking order and
// that it holds at least the atLeast entries published before the walk.
func checkScan(m *MemTable, atLeast int, backward bool) error {
	it := m.NewIter(nil, nil)
	defer it.Close()
	var prev []byte
	count := 0
	step, start := it.Next, it.First
	if backward {
		step, start = it.Prev, it.Last
	}
	for ok := start(); ok; ok = step() {
		k := it.Key().UserKey
		if prev != nil && (bytes.Compare(prev, k) >= 0) != backward {
			return fmt.Errorf("scan (backward=%v): %s after %s", backward, k, prev)
		}
		if num, err := strconv.Atoi(string(k[3:])); err != nil || string(it.Value()) != fmt.Sprintf("value-%d", num) {
			return fmt.Errorf("entry %s holds %q", k, it.Value())
		}
		prev = k
		count++
	}
	if count < atLeast {
		return fmt.Errorf("scan (backward=%v) saw %d entries, %d were published before it", backward, count, atLeast)
	}
	return nil
}

// TestMemTable_RangeDels_OneWriterManyReaders adds range tombstones, each
// over one key added before it, while readers check that a key's tombstone
// deletes it once published, never before, and that RangeDels, rebuilt as
// tombstones arrive, stays fragmented. Run it under -race.
func TestMemTable_RangeDels_OneWriterManyReaders(t *testing.T) {
	n := 2_000
	if testing.Short() {
		n = 500
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }
	m := New(nil)
	var published atomic.Int64 // tombstones 0..published-1 are added
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for published.Load() < int64(n) {
				if err := checkRangeDeleted(m, rng, int(published.Load()), n, key); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		m.Add(base.MakeInternalKey(key(i), base.SeqNum(2*i+1), base.KindSet), []byte("v"))
		m.Add(base.MakeInternalKey(key(i), base.SeqNum(2*i+2), base.KindRangeDelete), append(key(i), 0))
		published.Store(int64(i + 1))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// checkRangeDeleted checks a few keys against the tombstones published
// (upTo of them; more may be in flight).
func checkRangeDeleted(m *MemTable, rng *rand.Rand, upTo, n int, key func(int) []byte) error {
	if err := rangedel.CheckFragmented(bytes.Compare, m.RangeDels()); err != nil {
		return err
	}
	for range 20 {
		i := rng.IntN(n)
		_, kind, found := m.Get(key(i), base.SeqNumMax)
		if i < upTo && (!found || kind != base.KindRangeDelete) {
			return fmt.Errorf("Get(%s) = %v, %v after its tombstone was added", key(i), kind, found)
		}
		if _, kind, found := m.Get(key(i), base.SeqNum(2*i+1)); found && kind != base.KindSet {
			return fmt.Errorf("Get(%s) at seq %d sees a tombstone of seq %d", key(i), 2*i+1, 2*i+2)
		}
	}
	return nil
}
