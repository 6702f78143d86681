package itertest

import (
	"bytes"
	"math/rand/v2"
	"slices"
)

// NearKey returns a key to seek to or bound by, near k: k itself, a byte
// longer or shorter, its last byte moved by one, the empty key, or a key
// of 0xff bytes above most others. The harness tests of memtable and
// sstable seek with it next to the keys they hold, where an off-by-one
// in a search or a prefix comparison shows.
func NearKey(rng *rand.Rand, k []byte) []byte {
	k = slices.Clone(k)
	switch rng.IntN(8) {
	case 0:
		return append(k, byte(rng.IntN(256)))
	case 1:
		if len(k) > 0 {
			return k[:len(k)-1]
		}
	case 2:
		if len(k) > 0 && k[len(k)-1] < 0xff {
			k[len(k)-1]++
		}
	case 3:
		if len(k) > 0 && k[len(k)-1] > 0 {
			k[len(k)-1]--
		}
	case 4:
		return []byte{}
	case 5:
		return bytes.Repeat([]byte{0xff}, 1+rng.IntN(3))
	}
	return k
}
