package kv_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log"
	"strings"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// A comparer other than bytewise may give an AbbreviatedKey, as Pebble's
// may: here keys sort in descending byte order, and a key's summary is
// its first 8 bytes, zero-padded, inverted, so that summaries order as
// the keys do wherever they differ. The memtable then decides most steps
// of its searches by the summaries, without calling Compare.
func ExampleOptions_abbreviatedKey() {
	descending := &sstable.Comparer{
		Compare:   func(a, b []byte) int { return bytes.Compare(b, a) },
		Separator: func(dst, a, _ []byte) []byte { return append(dst, a...) },
		Successor: func(dst, a []byte) []byte { return append(dst, a...) },
		AbbreviatedKey: func(k []byte) uint64 {
			var b [8]byte
			copy(b[:], k)
			return ^binary.BigEndian.Uint64(b[:])
		},
		Name: "example.descending",
	}
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem(), Comparer: descending})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"banana", "apple", "cherry"} {
		if err := db.Set([]byte(k), nil, kv.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	it, err := db.NewIter(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer it.Close()
	var all, fromB []string
	for ok := it.First(); ok; ok = it.Next() {
		all = append(all, string(it.Key()))
	}
	// In this order, the keys at or after "b" are those bytewise at or
	// before it.
	for ok := it.SeekGE([]byte("b")); ok; ok = it.Next() {
		fromB = append(fromB, string(it.Key()))
	}
	fmt.Println(strings.Join(all, " "))
	fmt.Println(strings.Join(fromB, " "))
	// Output:
	// cherry banana apple
	// apple
}
