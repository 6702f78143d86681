package sstable_test

import (
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// ExampleReader_BuildFilter writes a table without filters, then gives
// its Reader a filter built in memory from the table's keys: lookups of
// absent keys then skip the data block, and the file is unchanged, so a
// Reader opened later reads the table as written.
func ExampleReader_BuildFilter() {
	fs := vfs.NewMem()
	f, err := fs.Create("000001.sst")
	if err != nil {
		log.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{})
	for i := range 100 {
		key := sstable.MakeInternalKey(fmt.Appendf(nil, "key%03d", 2*i), 1, sstable.KindSet)
		if err := w.Add(key, []byte("v")); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	if f, err = fs.Open("000001.sst"); err != nil {
		log.Fatal(err)
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{FileNum: 1, FileName: "000001.sst", CountMisses: true})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	absent := func() (reads int64) {
		var s sstable.LookupStats
		for i := range 100 {
			if _, _, _, err := r.Get(fmt.Appendf(nil, "key%03d", 2*i+1), 1, &s); err != nil {
				log.Fatal(err)
			}
		}
		return s.BlockReads
	}
	fmt.Println("without a filter, blocks read:", absent())

	policy, err := bloompolicy.NewBitsPerKey(16)
	if err != nil {
		log.Fatal(err)
	}
	filter, err := r.BuildFilter(policy)
	if err != nil {
		log.Fatal(err)
	}
	r.HoldFilter(filter)
	fmt.Printf("with one of %d keys built in memory, blocks read: %d\n", filter.Keys(), absent())
	fmt.Println("lookups that found nothing:", r.Misses())
	// Output:
	// without a filter, blocks read: 100
	// with one of 100 keys built in memory, blocks read: 0
	// lookups that found nothing: 200
}
