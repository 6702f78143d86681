package pebbleadapter_test

import (
	"fmt"

	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/cockroachdb/pebble/bloom"
)

// ExampleFromPebble builds a filter with Pebble's own Bloom policy through
// the bloomkv interface, as a bloomkv table writer does for each data block.
func ExampleFromPebble() {
	policy := pebbleadapter.FromPebble(bloom.FilterPolicy(10))
	w := policy.NewWriter()
	for _, k := range []string{"apple", "banana", "cherry"} {
		w.AddKey([]byte(k))
	}
	filter := w.Finish(nil)

	fmt.Println("policy:", policy.Name())
	fmt.Println("banana may be present:", policy.MayContain(filter, []byte("banana")))
	fmt.Println("durian may be present:", policy.MayContain(filter, []byte("durian")))
	// Bytes Pebble's decoder cannot read match every key instead of panicking.
	fmt.Println("garbage may hold durian:", policy.MayContain([]byte{1, 2, 3}, []byte("durian")))
	// Output:
	// policy: rocksdb.BuiltinBloomFilter
	// banana may be present: true
	// durian may be present: false
	// garbage may hold durian: true
}
