package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// userComparerExample is bytewise order whose Split cuts
// "user/<id>/<field>" after "user/<id>/": filters hold users.
func userComparerExample() *sstable.Comparer {
	c := *sstable.DefaultComparer
	c.SplitName = "example.user"
	c.Split = func(k []byte) int {
		i := bytes.IndexByte(k, '/')
		if i < 0 {
			return len(k)
		}
		if j := bytes.IndexByte(k[i+1:], '/'); j >= 0 {
			return i + j + 2
		}
		return len(k)
	}
	return &c
}

// Under a Comparer with a Split, filters hold prefixes: a lookup of an
// absent field of a present user finds the user's prefix in the filter,
// which is right, and counts as a prefix match, not a false positive.
func ExampleLookupMetrics_prefixMatches() {
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem(), Comparer: userComparerExample()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"user/7/name", "user/9/name"} {
		if err := db.Set([]byte(k), []byte("Ann"), kv.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		log.Fatal(err)
	}
	for _, k := range []string{"user/7/name", "user/7/zip"} {
		if _, err := db.Get([]byte(k)); err != nil && !errors.Is(err, kv.ErrNotFound) {
			log.Fatal(err)
		}
	}
	l := db.Metrics().Lookups
	fmt.Printf("true positives %d, prefix matches %d, false positives %d\n",
		l.FilterTruePositives, l.PrefixMatches, l.FilterFalsePositives)
	// Output:
	// true positives 1, prefix matches 1, false positives 0
}

// A Split that returns a length outside its key is refused by Open.
func ExampleErrInvalidSplit() {
	c := *sstable.DefaultComparer
	c.Split, c.SplitName = func(k []byte) int { return len(k) + 5 }, "example.broken"
	_, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem(), Comparer: &c})
	fmt.Println(errors.Is(err, kv.ErrInvalidSplit))
	// Output:
	// true
}
