package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

func ExampleOpen() {
	// vfs.NewMem keeps the store in memory; leave FS nil to use the disk.
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Set([]byte("hello"), []byte("world"), kv.Sync); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get([]byte("hello"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("hello=%s\n", v)

	if err := db.Delete([]byte("hello"), kv.NoSync); err != nil {
		log.Fatal(err)
	}
	_, err = db.Get([]byte("hello"))
	fmt.Println(errors.Is(err, kv.ErrNotFound))

	b := db.NewBatch()
	if err := b.Set([]byte("x"), []byte("1")); err != nil {
		log.Fatal(err)
	}
	if err := b.Set([]byte("y"), []byte("2")); err != nil {
		log.Fatal(err)
	}
	// both or neither
	if err := db.Apply(b, kv.Sync); err != nil {
		log.Fatal(err)
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// hello=world
	// true
}

func ExampleDB_NewIter() {
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"apple", "banana", "cherry", "date"} {
		if err := db.Set([]byte(k), []byte(k[:1]), kv.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	it, err := db.NewIter(&kv.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("d")})
	if err != nil {
		log.Fatal(err)
	}
	for it.First(); it.Valid(); it.Next() {
		fmt.Printf("%s=%s\n", it.Key(), it.Value())
	}
	for it.Last(); it.Valid(); it.Prev() {
		fmt.Printf("backward: %s\n", it.Key())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// banana=b
	// cherry=c
	// backward: cherry
	// backward: banana
}

func ExampleDB_NewSnapshot() {
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("k"), []byte("before"), kv.NoSync); err != nil {
		log.Fatal(err)
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	if err := db.Set([]byte("k"), []byte("after"), kv.NoSync); err != nil {
		log.Fatal(err)
	}
	// the snapshot's view survives flushes and compactions
	if err := db.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		log.Fatal(err)
	}

	old, _ := snap.Get([]byte("k"))
	cur, _ := db.Get([]byte("k"))
	fmt.Printf("snapshot: %s, now: %s\n", old, cur)
	// Output:
	// snapshot: before, now: after
}

func ExampleDB_Metrics() {
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// Three overlapping L0 tables.
	for _, keys := range [][]string{{"a", "m"}, {"b", "n"}, {"c", "o"}} {
		for _, k := range keys {
			if err := db.Set([]byte(k), []byte("v"), kv.NoSync); err != nil {
				log.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			log.Fatal(err)
		}
	}
	db.Get([]byte("d")) // absent, inside every table's range
	m := db.Metrics()
	l := m.Lookups
	fmt.Printf("L0 tables: %d, gets: %d\n", m.Levels[0].NumFiles, l.Gets)
	fmt.Printf("tables considered: %d, filter negatives: %d, block reads: %d\n",
		l.TablesConsidered, l.FilterNegatives, l.BlockReads)
	// Output:
	// L0 tables: 3, gets: 1
	// tables considered: 3, filter negatives: 3, block reads: 0
}

// ErrorIfNotExists keeps a program that means to read a store from creating
// an empty one where it expected data; ErrorIfExists keeps one that means to
// create a store from reusing an old one.
func ExampleOptions_errorIfNotExists() {
	fs := vfs.NewMem()
	_, err := kv.Open("demo", &kv.Options{FS: fs, ErrorIfNotExists: true})
	fmt.Println(errors.Is(err, kv.ErrDBDoesNotExist), err)

	db, err := kv.Open("demo", &kv.Options{FS: fs, ErrorIfExists: true}) // creates it
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	_, err = kv.Open("demo", &kv.Options{FS: fs, ErrorIfExists: true})
	fmt.Println(errors.Is(err, kv.ErrDBAlreadyExists), err)
	// Output:
	// true kv: store does not exist: no CURRENT file in demo (Options.ErrorIfNotExists)
	// true kv: store already exists in demo (Options.ErrorIfExists)
}

func ExampleOptions_filterBudget() {
	// Ten bits per key on average, spent where they save the most: the
	// small runs (each L0 table, the upper levels) get more bits per key,
	// the bottom level fewer. Each table is sized for the tree as it
	// stands when the table is written.
	db, err := kv.Open("demo", &kv.Options{
		FS:                          vfs.NewMem(),
		FilterBudget:                &bloompolicy.Budget{BitsPerKey: 10},
		DisableAutomaticCompactions: true, // a fixed shape for the example
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	write := func(from, to int) {
		for i := from; i < to; i++ {
			if err := db.Set(fmt.Appendf(nil, "key%06d", i), []byte("v"), kv.NoSync); err != nil {
				log.Fatal(err)
			}
		}
	}
	write(0, 20000)
	// L6: 20,000 keys, the only run: it gets the budget
	if err := db.Compact(nil, nil); err != nil {
		log.Fatal(err)
	}
	for _, from := range []int{20000, 21000} {
		write(from, from+1000)
		// an L0 table of 1,000 keys, sized against L6
		if err := db.Flush(); err != nil {
			log.Fatal(err)
		}
	}
	for i, l := range db.Metrics().Levels {
		if l.NumFiles > 0 {
			fmt.Printf("L%d: %d keys, %.1f filter bits per key\n", i, l.Keys, 8*float64(l.FilterBytes)/float64(l.Keys))
		}
	}
	// Output:
	// L0: 2000 keys, 17.1 filter bits per key
	// L6: 20000 keys, 10.1 filter bits per key
}

// ExampleDB_DeleteRange deletes all of one user's keys: under a comparer
// from sstable.NewSplitComparer, [prefix, sstable.PrefixEnd(prefix)) is
// the range of a prefix, and the same pair bounds an iterator to it.
func ExampleDB_DeleteRange() {
	userSplit := func(key []byte) int { // "user/<id>/" is a key's prefix
		if i := bytes.IndexByte(key, '/'); i >= 0 {
			if j := bytes.IndexByte(key[i+1:], '/'); j >= 0 {
				return i + j + 2
			}
		}
		return len(key)
	}
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem(), Comparer: sstable.NewSplitComparer("example.user", userSplit)})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"user/1/name", "user/1/mail", "user/10/name", "user/2/name"} {
		if err := db.Set([]byte(k), []byte("v"), kv.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	prefix := []byte("user/1/")
	if err := db.DeleteRange(prefix, sstable.PrefixEnd(prefix), kv.NoSync); err != nil {
		log.Fatal(err)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		log.Fatal(err)
	}
	for it.First(); it.Valid(); it.Next() {
		fmt.Printf("%s\n", it.Key())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// user/10/name
	// user/2/name
}
