package memtable_test

import (
	"errors"
	"fmt"
	"log"
	"sync"

	"github.com/bloomkv/bloomkv/memtable"
)

// A memtable holds every version of a key; Get at a sequence number sees
// the newest version at or below it, and an iterator walks them all, newest
// first within a key.
func Example() {
	m := memtable.New(nil)
	for _, e := range []struct {
		key   string
		seq   memtable.SeqNum
		kind  memtable.Kind
		value string
	}{
		{"apple", 1, memtable.KindSet, "red"},
		{"banana", 2, memtable.KindSet, "yellow"},
		{"apple", 3, memtable.KindSet, "green"},
		{"banana", 4, memtable.KindDelete, ""},
	} {
		if err := m.Add(memtable.MakeInternalKey([]byte(e.key), e.seq, e.kind), []byte(e.value)); err != nil {
			log.Fatal(err)
		}
	}
	// Each version may be added once.
	err := m.Add(memtable.MakeInternalKey([]byte("apple"), 3, memtable.KindSet), []byte("again"))
	fmt.Println(errors.Is(err, memtable.ErrDuplicateKey))

	for _, q := range []struct {
		key string
		seq memtable.SeqNum
	}{{"apple", 2}, {"apple", 10}, {"banana", 3}, {"banana", 4}, {"cherry", 4}} {
		v, kind, found := m.Get([]byte(q.key), q.seq)
		switch {
		case !found:
			fmt.Printf("%s at %d: no version\n", q.key, q.seq)
		case kind == memtable.KindDelete:
			fmt.Printf("%s at %d: deleted\n", q.key, q.seq)
		default:
			fmt.Printf("%s at %d: %s\n", q.key, q.seq, v)
		}
	}

	it := m.NewIter(nil, []byte("b"))
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s = %q\n", it.Key(), it.Value())
	}
	it.Close()
	fmt.Printf("%d entries\n", m.Len())
	// Output:
	// true
	// apple at 2: red
	// apple at 10: green
	// banana at 3: yellow
	// banana at 4: deleted
	// cherry at 4: no version
	// apple#3,SET = "green"
	// apple#1,SET = "red"
	// 4 entries
}

// Several goroutines may add to one memtable at once, each through its
// own Inserter, which speeds up runs of ascending keys (a batch's).
func ExampleInserter() {
	m := memtable.New(nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ins memtable.Inserter
			for i := range 100 {
				seq := memtable.SeqNum(g*100 + i + 1)
				key := fmt.Appendf(nil, "g%d-%03d", g, i)
				if err := ins.Add(m, memtable.MakeInternalKey(key, seq, memtable.KindSet), nil); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	it := m.NewIter(nil, nil)
	it.First()
	fmt.Println(m.Len(), string(it.Key().UserKey))
	it.Last()
	fmt.Println(string(it.Key().UserKey))
	// Output:
	// 400 g0-000
	// g3-099
}
