package sstable_test

import (
	"bytes"
	"fmt"

	"github.com/bloomkv/bloomkv/sstable"
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
	fmt.Printf("%s\n", cmp.Prefix([]byte("user/42/name")))
	fmt.Printf("%s\n", cmp.Prefix([]byte("config")))
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
