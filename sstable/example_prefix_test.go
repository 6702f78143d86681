package sstable_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// userSplit cuts "user/<id>/<field>" after "user/<id>/": all of a user's
// keys share one prefix, which the filters hold.
func userSplit(key []byte) int {
	i := bytes.IndexByte(key, '/')
	if i < 0 {
		return len(key)
	}
	j := bytes.IndexByte(key[i+1:], '/')
	if j < 0 {
		return len(key)
	}
	return i + j + 2
}

// ExampleNewSplitComparer builds the comparer of a store whose filters
// hold each user's prefix: kv.Options.Comparer and
// sstable.WriterOptions.Comparer take it.
func ExampleNewSplitComparer() {
	cmp := sstable.NewSplitComparer("example.user", userSplit)
	for _, key := range []string{"user/42/name", "config"} {
		prefix, err := cmp.Prefix([]byte(key))
		if err != nil {
			log.Fatal(err) // the Split cut outside the key
		}
		fmt.Printf("%s\n", prefix)
	}
	fmt.Println(cmp.Name, cmp.SplitName)
	// Output:
	// user/42/
	// config
	// leveldb.BytewiseComparator example.user
}

// ExamplePrefixEnd shows the exclusive end of the keys bearing a prefix,
// as DeleteRange and UpperBound take it.
func ExamplePrefixEnd() {
	fmt.Printf("%q\n", sstable.PrefixEnd([]byte("user/42/")))
	fmt.Printf("%q\n", sstable.PrefixEnd([]byte("a\xff")))
	fmt.Println(sstable.PrefixEnd([]byte("\xff")) == nil) // no key sorts after every "\xff..." key
	// Output:
	// "user/420"
	// "b"
	// true
}

// ExampleImmediateSuccessor turns an inclusive end into an exclusive one.
func ExampleImmediateSuccessor() {
	fmt.Printf("%q\n", sstable.ImmediateSuccessor([]byte("k")))
	// Output:
	// "k\x00"
}

// ExampleIter_SeekPrefixGE writes a table whose filters hold user
// prefixes, then seeks prefixes with the iterator NewIter returns: the
// filter rules out an absent user without reading a data block, and
// IterOptions.Stats counts what the seeks cost.
func ExampleIter_SeekPrefixGE() {
	cmp := sstable.NewSplitComparer("example.user", userSplit)
	policy, err := bloompolicy.New(0.01)
	if err != nil {
		log.Fatal(err)
	}
	fs := vfs.NewMem()
	f, err := fs.Create("t.sst")
	if err != nil {
		log.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{Comparer: cmp, FilterPolicy: policy})
	for i, k := range []string{"user/1/mail", "user/1/name", "user/3/name"} {
		if err := w.Add(sstable.MakeInternalKey([]byte(k), sstable.SeqNum(i+1), sstable.KindSet), []byte("v")); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	if f, err = fs.Open("t.sst"); err != nil {
		log.Fatal(err)
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{Comparer: cmp,
		Filters: map[string]bloompolicy.FilterPolicy{policy.Name(): policy}})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	var stats sstable.LookupStats
	it, err := r.NewIter(&sstable.IterOptions{Stats: &stats})
	if err != nil {
		log.Fatal(err)
	}
	for _, seek := range []string{"user/1/", "user/2/"} {
		if it.SeekPrefixGE([]byte(seek), []byte(seek)) && bytes.HasPrefix(it.Key().UserKey, []byte(seek)) {
			fmt.Println(seek, "first key:", it.Key())
		} else {
			fmt.Println(seek, "absent")
		}
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("filter negatives %d, data blocks read %d\n", stats.FilterNegatives, stats.BlockReads)
	// Output:
	// user/1/ first key: user/1/mail#1,SET
	// user/2/ absent
	// filter negatives 1, data blocks read 1
}
