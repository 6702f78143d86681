package base

import "bytes"

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b.
type Compare func(a, b []byte) int

// Comparer orders user keys. Its name is stored in every table and in the
// manifest: a store written under one ordering must never be read under
// another, so change the name whenever the order changes.
type Comparer struct {
	// Compare orders user keys.
	Compare Compare
	// Separator appends to dst a key k with a <= k < b, preferably short,
	// and returns the extended slice. Index blocks store such separators in
	// place of whole keys. It may append a itself.
	Separator func(dst, a, b []byte) []byte
	// Successor appends to dst a key k >= a, preferably short, and returns
	// the extended slice. The index entry of a table's last block uses it.
	Successor func(dst, a []byte) []byte
	// Name identifies the ordering.
	Name string
}

// DefaultComparer orders keys bytewise, as bytes.Compare does.
var DefaultComparer = &Comparer{
	Compare:   bytes.Compare,
	Separator: bytewiseSeparator,
	Successor: bytewiseSuccessor,
	Name:      "leveldb.BytewiseComparator",
}

// bytewiseSeparator shortens a to the first byte where it differs from b,
// incremented, when that still sorts below b; otherwise it returns a whole.
func bytewiseSeparator(dst, a, b []byte) []byte {
	i, n := 0, min(len(a), len(b))
	for i < n && a[i] == b[i] {
		i++
	}
	if i < n && a[i] < 0xff && a[i]+1 < b[i] {
		dst = append(dst, a[:i+1]...)
		dst[len(dst)-1]++
		return dst
	}
	return append(dst, a...)
}

// bytewiseSuccessor returns the shortest key >= a: a's prefix up to its first
// byte below 0xff, incremented. A key of only 0xff bytes is its own
// successor.
func bytewiseSuccessor(dst, a []byte) []byte {
	for i, c := range a {
		if c != 0xff {
			dst = append(dst, a[:i+1]...)
			dst[len(dst)-1]++
			return dst
		}
	}
	return append(dst, a...)
}
