package memtable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

// TestMemTable_ConcurrentInserters has several goroutines add disjoint
// entries at once, each through its own Inserter, in ascending runs (the
// shape of a batch) and at random, some of them range tombstones, while
// readers check that every entry an inserter reported added is there,
// whole, and that scans in both directions see a sorted table. At the end
// the table must hold exactly the model's entries, in order, every back
// link agreeing with the forward ones. Run it under -race.
func TestMemTable_ConcurrentInserters(t *testing.T) {
	const inserters = 8
	perInserter := 6_000
	if testing.Short() {
		perInserter = 1_500
	}
	seed := testseed.Seed(t)
	n := inserters * perInserter
	// Entry i has user key key(order[i]) and sequence number i+1; user
	// keys repeat (order maps to n/2 keys), so versions of one key come
	// from different inserters.
	order := rand.New(rand.NewPCG(seed, 0)).Perm(n)
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%07d", order[i]/2)) }
	value := func(i int) []byte { return []byte(fmt.Sprintf("value-%d", i)) }

	m := New(nil)
	added := make([]atomic.Bool, n)
	var done atomic.Bool
	var readers sync.WaitGroup
	errs := make(chan error, 16)
	for r := range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(100+r)))
			for !done.Load() {
				if err := checkAdded(m, rng, added, key, value, r == 2); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for w := range inserters {
		writers.Add(1)
		go func() {
			defer writers.Done()
			if err := addShare(m, seed, w, inserters, added, key, value); err != nil {
				errs <- err
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
	checkConcurrentResult(t, m, n, key, value)
}

// addShare adds the entries i ≡ w (mod inserters), in runs of up to 16
// sorted by internal key, as a batch's, marking each added.
func addShare(m *MemTable, seed uint64, w, inserters int, added []atomic.Bool, key, value func(int) []byte) error {
	rng := rand.New(rand.NewPCG(seed, uint64(w+1)))
	var mine []int
	for i := w; i < len(added); i += inserters {
		mine = append(mine, i)
	}
	var ins Inserter
	for len(mine) > 0 {
		run := mine[:min(len(mine), 1+rng.IntN(16))]
		mine = mine[len(run):]
		slices.SortFunc(run, func(a, b int) int {
			return base.InternalCompare(bytes.Compare, entryKey(a, key), entryKey(b, key))
		})
		for _, i := range run {
			if err := ins.Add(m, entryKey(i, key), value(i)); err != nil {
				return fmt.Errorf("Add of entry %d: %v", i, err)
			}
			added[i].Store(true)
		}
	}
	return nil
}

// entryKey returns entry i's internal key: a SET, or one entry in 64 a
// DEL.
func entryKey(i int, key func(int) []byte) InternalKey {
	kind := base.KindSet
	if i%64 == 0 {
		kind = base.KindDelete
	}
	return base.MakeInternalKey(key(i), base.SeqNum(i+1), kind)
}

// checkAdded looks up a few entries reported added, at their own
// sequence numbers, and scans the table in one direction checking order.
func checkAdded(m *MemTable, rng *rand.Rand, added []atomic.Bool, key, value func(int) []byte, backward bool) error {
	for range 50 {
		i := rng.IntN(len(added))
		if !added[i].Load() {
			continue
		}
		v, kind, found := m.Get(key(i), base.SeqNum(i+1))
		if !found {
			return fmt.Errorf("Get(%s, %d) found nothing after entry %d was added", key(i), i+1, i)
		}
		// A newer version of the key at or below i+1 cannot exist: i+1
		// is the entry's own number, and numbers are unique.
		if want := entryKey(i, key).Kind(); kind != want || (kind == base.KindSet && !bytes.Equal(v, value(i))) {
			return fmt.Errorf("Get(%s, %d) = %q, %v; want entry %d", key(i), i+1, v, kind, i)
		}
	}
	it := m.NewIter(nil, nil)
	defer it.Close()
	var prev InternalKey
	step, start := it.Next, it.First
	if backward {
		step, start = it.Prev, it.Last
	}
	count := 0
	for ok := start(); ok; ok = step() {
		k := it.Key()
		if count > 0 {
			if c := base.InternalCompare(bytes.Compare, prev, k); (c < 0) == backward || c == 0 {
				return fmt.Errorf("scan (backward=%v): %s after %s", backward, k, prev)
			}
		}
		prev = InternalKey{UserKey: slices.Clone(k.UserKey), Trailer: k.Trailer}
		count++
	}
	return nil
}

// checkConcurrentResult checks m holds exactly entries 0..n-1, in internal key order
// both ways, with the counts and a Get of each key's newest version right.
func checkConcurrentResult(t *testing.T, m *MemTable, n int, key, value func(int) []byte) {
	t.Helper()
	want := make([]InternalKey, n)
	newest := map[string]int{}
	for i := range n {
		want[i] = entryKey(i, key)
		if j, ok := newest[string(key(i))]; !ok || j < i {
			newest[string(key(i))] = i
		}
	}
	slices.SortFunc(want, func(a, b InternalKey) int { return base.InternalCompare(bytes.Compare, a, b) })
	it := m.NewIter(nil, nil)
	got := 0
	for ok := it.First(); ok; ok = it.Next() {
		if got >= n || base.InternalCompare(bytes.Compare, it.Key(), want[got]) != 0 {
			t.Fatalf("entry %d forward is %s, want %v", got, it.Key(), want[min(got, n-1)])
		}
		if i := int(it.Key().SeqNum()) - 1; !bytes.Equal(it.Value(), value(i)) {
			t.Fatalf("entry %s holds %q", it.Key(), it.Value())
		}
		got++
	}
	back := n
	for ok := it.Last(); ok; ok = it.Prev() {
		back--
		if back < 0 || base.InternalCompare(bytes.Compare, it.Key(), want[back]) != 0 {
			t.Fatalf("entry %d backward is %s", back, it.Key())
		}
	}
	if got != n || back != 0 || m.Len() != n {
		t.Fatalf("forward %d, backward %d, Len %d entries; want %d", got, n-back, m.Len(), n)
	}
	for k, i := range newest {
		v, kind, found := m.Get([]byte(k), base.SeqNumMax)
		if !found || kind != entryKey(i, key).Kind() || (kind == base.KindSet && !bytes.Equal(v, value(i))) {
			t.Fatalf("Get(%s) = %q, %v, %v; want entry %d", k, v, kind, found, i)
		}
	}
	if len(newest) < n/4 {
		t.Fatalf("only %d distinct keys checked", len(newest))
	}
	for _, l := range []*skiplist{&m.points, &m.rangeDels} {
		if err := checkLevelsSorted(l); err != nil {
			t.Fatal(err)
		}
	}
}

// checkLevelsSorted returns an error unless every level of l above 0 is
// in order, as level 0 is: searches step along them.
func checkLevelsSorted(l *skiplist) error {
	for i := 1; i < int(l.height.Load()); i++ {
		for x := l.head.next(i); x != nil; x = x.next(i) {
			if y := x.next(i); y != nil && base.InternalCompare(l.cmp.Compare, x.key(), y.key()) >= 0 {
				return fmt.Errorf("level %d links %s to %s", i, x.key(), y.key())
			}
		}
	}
	return nil
}

// TestSkiplist_SpliceAfterUpperLevelRetry replays, one step at a time,
// two inserters racing at level 1, then the first one's next key in an
// ascending run: its splice's level-1 gap, searched again in the race,
// no longer encloses its level-0 gap, so the next insert must not take
// the splice's shortcut.
func TestSkiplist_SpliceAfterUpperLevelRetry(t *testing.T) {
	m := New(nil)
	l, a := &m.points, &m.arena
	ikey := func(k string, seq int) InternalKey {
		return base.MakeInternalKey([]byte(k), base.SeqNum(seq), base.KindSet)
	}
	var other splice
	for i, k := range []string{"a", "z"} {
		if _, err := l.insertTower(ikey(k, i+1), nil, a, &other, 2); err != nil {
			t.Fatal(err)
		}
	}
	// A starts inserting c, two levels high, and links it at level 0.
	var A splice
	c := ikey("c", 3)
	kp := l.keyPrefix(c.UserKey)
	l.findSplice(c, kp, &A)
	x, _ := newNode(a, c, nil, 2, false)
	x.prefix = kp
	if !l.linkLevel(x, 0, c, kp, &A) {
		t.Fatal("c refused at level 0")
	}
	// B inserts e, two levels high, between c and z.
	var B splice
	if _, err := l.insertTower(ikey("e", 4), nil, a, &B, 2); err != nil {
		t.Fatal(err)
	}
	// A links c at level 1: its compare-and-swap fails, the level is
	// searched again, and A ends its insert as insert does.
	if !l.linkLevel(x, 1, c, kp, &A) {
		t.Fatal("c refused at level 1")
	}
	if A.next[1] == A.next[0] {
		t.Fatalf("level 1 was not searched again: next %s at both levels", A.next[0].key())
	}
	A.prev[0], A.prev[1] = x, x
	// A's next key, g, sorts between e and z.
	if _, err := l.insertTower(ikey("g", 5), nil, a, &A, 2); err != nil {
		t.Fatal(err)
	}
	if err := checkLevelsSorted(l); err != nil {
		t.Fatal(err)
	}
	var got []string
	for x := l.head.next(1); x != nil; x = x.next(1) {
		got = append(got, string(x.userKey()))
	}
	if want := []string{"a", "c", "e", "g", "z"}; !slices.Equal(got, want) {
		t.Fatalf("level 1 holds %q, want %q", got, want)
	}
}

// TestMemTable_ConcurrentDuplicates has goroutines race to add the same
// internal keys: each must be added exactly once, every other Add
// refused with ErrDuplicateKey, and the table must hold each key once.
func TestMemTable_ConcurrentDuplicates(t *testing.T) {
	const racers, n = 4, 2_000
	m := New(nil)
	var wins atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, racers)
	for r := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ins Inserter
			for i := range n {
				j := (i*7 + r) % n // racers meet on each key at different times
				err := ins.Add(m, base.MakeInternalKey([]byte(fmt.Sprintf("k%05d", j)), 1, base.KindSet), nil)
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, ErrDuplicateKey):
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	count := 0
	it := m.NewIter(nil, nil)
	for ok := it.First(); ok; ok = it.Next() {
		count++
	}
	if wins.Load() != n || count != n || m.Len() != n {
		t.Fatalf("%d Adds succeeded, %d entries iterated, Len %d; want %d each", wins.Load(), count, m.Len(), n)
	}
}
