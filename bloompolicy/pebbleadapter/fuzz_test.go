package pebbleadapter

import (
	"testing"

	"github.com/cockroachdb/pebble/bloom"
)

// FuzzFromPebbleMayContain feeds arbitrary bytes to Pebble's Bloom decoder
// through FromPebble. It must never panic; bytes that do not decode must
// match every key; and a filter that does decode must answer exactly as
// Pebble's own decoder does.
func FuzzFromPebbleMayContain(f *testing.F) {
	valid := buildPebbleBloom(10, makeKeys("seed", 50))
	f.Add([]byte{}, []byte("k"))
	for n := 1; n <= 5; n++ {
		f.Add(make([]byte, n), []byte("k"))
	}
	f.Add([]byte{6, 1, 0, 0, 0}, []byte("k"))                               // lines larger than the array
	f.Add(append(make([]byte, 64), 6, 0, 0, 0, 0), []byte("k"))             // zero line count
	f.Add(append(make([]byte, 64), 6, 0xff, 0xff, 0xff, 0xff), []byte("k")) // huge line count
	f.Add(append(make([]byte, 64), 6, 3, 0, 0, 0), []byte("k"))             // lines do not divide the array
	f.Add(valid, []byte("seed00000007"))
	f.Add(valid, []byte("absent"))

	policy := FromPebble(bloom.FilterPolicy(10))
	f.Fuzz(func(t *testing.T, filter, key []byte) {
		got := policy.MayContain(filter, key)
		if !validBloomFilter(filter) {
			if !got {
				t.Fatalf("undecodable filter %x matched nothing", filter)
			}
			return
		}
		if want := bloom.FilterPolicy(10).MayContain(0, filter, key); got != want {
			t.Fatalf("MayContain = %v, Pebble's decoder says %v", got, want)
		}
	})
}
