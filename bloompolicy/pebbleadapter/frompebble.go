package pebbleadapter

import (
	"encoding/binary"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// FromPebble returns pp as a [bloompolicy.FilterPolicy], so bloomkv tables
// can carry Pebble's filters (typically Pebble's own Bloom filter,
// bloom.FilterPolicy(bitsPerKey)) for like-for-like comparisons. Every filter
// is built and queried as a Pebble table filter ([pebble.TableFilter]); in
// bloomkv that means one filter per data block.
//
// For Pebble's Bloom encoding (the policy named "rocksdb.BuiltinBloomFilter")
// the returned policy checks each filter before Pebble's decoder reads it,
// and answers true for a filter that decoder would misread: empty, too short,
// a zero or oversized line count, or a bit array that is not a whole number
// of lines. Pebble's own decoder would divide by zero or read out of bounds on
// such bytes. The filter of no keys is five zero bytes (zero lines), so it
// too answers true: never wrong, only less useful. For any other Pebble
// policy, MayContain is as robust against bad bytes as that policy is.
//
// FromPebble(nil) is nil, and FromPebble of a policy that [ToPebble] made
// returns the bloomkv policy it wraps.
func FromPebble(pp pebble.FilterPolicy) bloompolicy.FilterPolicy {
	switch pp := pp.(type) {
	case nil:
		return nil
	case toPebble:
		return pp.p
	}
	return fromPebble{pp: pp, checkBloom: pp.Name() == pebbleBloomName}
}

// pebbleBloomName names the encoding of Pebble's bloom.FilterPolicy, the
// RocksDB full-filter format, whatever its bits per key.
var pebbleBloomName = bloom.FilterPolicy(0).Name()

// fromPebble presents a pebble.FilterPolicy to bloomkv.
type fromPebble struct {
	pp pebble.FilterPolicy
	// checkBloom is set when pp's filters are in the RocksDB full-filter
	// format, which MayContain validates before handing it to pp.
	checkBloom bool
}

var _ bloompolicy.FilterPolicy = fromPebble{}

// Name returns the name of the wrapped Pebble policy.
func (f fromPebble) Name() string { return f.pp.Name() }

// NewWriter returns the Pebble policy's table filter writer. If that policy
// offers none, the writer writes empty filters (no bytes), which match every
// key.
func (f fromPebble) NewWriter() bloompolicy.FilterWriter {
	if w := f.pp.NewWriter(pebble.TableFilter); w != nil {
		return w
	}
	return emptyWriter{}
}

// MayContain reports whether key may be in filter. An empty filter means no
// filter and matches every key, whatever the policy; so does a filter in
// Pebble's Bloom encoding that does not decode.
func (f fromPebble) MayContain(filter, key []byte) bool {
	if len(filter) == 0 || f.checkBloom && !validBloomFilter(filter) {
		return true
	}
	return f.pp.MayContain(pebble.TableFilter, filter, key)
}

// Layout of a filter in the RocksDB full-filter format that Pebble's Bloom
// writes and reads (see doc.go for the picture).
const (
	bloomTrailerLen = 5 // probes (1 byte) + line count (4 bytes, little-endian)
	// maxBloomBytes bounds the bit array so that Pebble's 32-bit arithmetic
	// on bit positions (8 × bytes per line, line × bits per line) cannot
	// overflow: 8 × 2^29 bits would wrap to a line size of 0.
	maxBloomBytes = 1<<29 - 1
)

// validBloomFilter reports whether Pebble's Bloom decoder can read filter
// safely: a non-empty bit array of at most maxBloomBytes, a line count
// between 1 and the array's length, and lines of whole, equal sizes, as
// every writer of the format produces. Pebble derives the line size from
// len/lines and the probe positions from it, so these bounds keep every
// position inside the array and every divisor non-zero.
func validBloomFilter(filter []byte) bool {
	n := len(filter) - bloomTrailerLen
	if n <= 0 || n > maxBloomBytes {
		return false
	}
	lines := int(binary.LittleEndian.Uint32(filter[n+1:]))
	return lines >= 1 && lines <= n && n%lines == 0
}

// emptyWriter writes empty filters: no bytes, which match every key.
type emptyWriter struct{}

func (emptyWriter) AddKey([]byte) {}

func (emptyWriter) Finish(dst []byte) []byte { return dst }
