package bloompolicy_test

import (
	"encoding/binary"
	"strconv"
)

// keyShape generates the i-th key of a family. Distinct indices give
// distinct keys, so a test builds filters from some indices and queries
// others to measure false positives.
type keyShape struct {
	name string
	key  func(dst []byte, i uint64) []byte
}

var keyShapes = []keyShape{
	{"decimal", func(dst []byte, i uint64) []byte { return strconv.AppendUint(dst, i, 10) }},
	{"random", randomKey},
	{"url", urlKey},
	{"be64", func(dst []byte, i uint64) []byte { return binary.BigEndian.AppendUint64(dst, i) }},
}

// splitmix64 is a stateless mixer: distinct inputs give distinct,
// random-looking outputs.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// randomKey returns 8 to 31 random bytes; the first eight encode i
// bijectively, so keys of distinct indices differ.
func randomKey(dst []byte, i uint64) []byte {
	r := splitmix64(i)
	dst = binary.LittleEndian.AppendUint64(dst, r)
	for n := int(r>>59) % 24; n > 0; n -= 8 {
		r = splitmix64(r)
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], r)
		dst = append(dst, b[:min(n, 8)]...)
	}
	return dst
}

var urlHosts = []string{"example.com", "shop.example.org", "cdn.bloomkv.dev", "api.internal"}

// urlKey returns a URL such as https://shop.example.org/users/4711/orders/12?page=3.
func urlKey(dst []byte, i uint64) []byte {
	dst = append(dst, "https://"...)
	dst = append(dst, urlHosts[i%4]...)
	dst = append(dst, "/users/"...)
	dst = strconv.AppendUint(dst, i/4/1000, 10)
	dst = append(dst, "/orders/"...)
	dst = strconv.AppendUint(dst, i/4%1000, 10)
	dst = append(dst, "?page="...)
	return strconv.AppendUint(dst, i%7, 10)
}
