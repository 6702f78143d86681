package sstable_test

import (
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// Example writes a table with a Bloom filter per block, then looks keys up
// and counts what the lookups cost: the filter rules blueberry out without
// a block read, and durian lies beyond the table's last key, so the index
// alone answers.
func Example() {
	fs := vfs.NewMem()
	policy, err := bloompolicy.New(0.01)
	if err != nil {
		log.Fatal(err)
	}

	f, err := fs.Create("000001.sst")
	if err != nil {
		log.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{FilterPolicy: policy})
	for _, kv := range []struct {
		key   string
		seq   sstable.SeqNum
		kind  sstable.Kind
		value string
	}{
		{"apple", 3, sstable.KindSet, "red"},
		{"banana", 5, sstable.KindDelete, ""},
		{"banana", 2, sstable.KindSet, "yellow"},
		{"cherry", 4, sstable.KindSet, "dark"},
	} {
		if err := w.Add(sstable.MakeInternalKey([]byte(kv.key), kv.seq, kv.kind), []byte(kv.value)); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("entries:", w.Metadata().Properties.NumEntries)

	f, err = fs.Open("000001.sst")
	if err != nil {
		log.Fatal(err)
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{
		Cache:    sstable.NewCache(1 << 20),
		FileNum:  1,
		Filters:  map[string]bloompolicy.FilterPolicy{policy.Name(): policy},
		FileName: "000001.sst",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	var stats sstable.LookupStats
	for _, q := range []struct {
		key string
		seq sstable.SeqNum
	}{{"apple", 10}, {"banana", 10}, {"banana", 4}, {"blueberry", 10}, {"durian", 10}} {
		v, kind, found, err := r.Get([]byte(q.key), q.seq, &stats)
		switch {
		case err != nil:
			log.Fatal(err)
		case !found:
			fmt.Printf("%s@%d: not in this table\n", q.key, q.seq)
		case kind == sstable.KindDelete:
			fmt.Printf("%s@%d: deleted\n", q.key, q.seq)
		default:
			fmt.Printf("%s@%d: %s\n", q.key, q.seq, v)
		}
	}
	fmt.Printf("filter negatives %d, data blocks read %d\n", stats.FilterNegatives, stats.BlockReads)
	// Output:
	// entries: 4
	// apple@10: red
	// banana@10: deleted
	// banana@4: yellow
	// blueberry@10: not in this table
	// durian@10: not in this table
	// filter negatives 1, data blocks read 3
}

// ExampleReader_NewIter walks a key range.
func ExampleReader_NewIter() {
	fs := vfs.NewMem()
	f, _ := fs.Create("t.sst")
	w := sstable.NewWriter(f, sstable.WriterOptions{})
	for i, k := range []string{"a", "b", "c", "d"} {
		w.Add(sstable.MakeInternalKey([]byte(k), sstable.SeqNum(i+1), sstable.KindSet), []byte("v"+k))
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	f, _ = fs.Open("t.sst")
	r, err := sstable.NewReader(f, sstable.ReaderOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	it, err := r.NewIter(&sstable.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("d")})
	if err != nil {
		log.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Println(it.Key(), string(it.Value()))
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// b#2,SET vb
	// c#3,SET vc
}
