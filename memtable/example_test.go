package memtable_test

import (
	"fmt"

	"github.com/bloomkv/bloomkv/memtable"
)

// A memtable holds every version of a key; Get at a sequence number sees
// the newest version at or below it, and an iterator walks them all, newest
// first within a key.
func Example() {
	m := memtable.New(nil)
	m.Add(memtable.MakeInternalKey([]byte("apple"), 1, memtable.KindSet), []byte("red"))
	m.Add(memtable.MakeInternalKey([]byte("banana"), 2, memtable.KindSet), []byte("yellow"))
	m.Add(memtable.MakeInternalKey([]byte("apple"), 3, memtable.KindSet), []byte("green"))
	m.Add(memtable.MakeInternalKey([]byte("banana"), 4, memtable.KindDelete), nil)

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
	// apple at 2: red
	// apple at 10: green
	// banana at 3: yellow
	// banana at 4: deleted
	// cherry at 4: no version
	// apple#3,SET = "green"
	// apple#1,SET = "red"
	// 4 entries
}
