package base

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
)

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b.
type Compare func(a, b []byte) int

// Split returns the length of the prefix of a user key: the part that a
// filter holds when a comparer splits keys, as Pebble's Comparer.Split does
// for an MVCC key's version suffix. Keys that share a prefix share a filter
// entry, so a filter can rule out a whole prefix (Get and SeekPrefixGE ask
// it about key[:Split(key)]).
//
// Split must return 0 <= n <= len(key) for every key the store may hold,
// and keep these invariants with prefix(k) = k[:Split(k)], for all keys a
// and b:
//
//  1. A prefix is a byte prefix of its key (it is a slice of it).
//  2. A prefix is its own prefix: Split(prefix(a)) == len(prefix(a)), and
//     it sorts before or at every key that bears it:
//     Compare(prefix(a), a) <= 0.
//  3. Prefixes order as their keys do: Compare(a, b) <= 0 implies
//     Compare(prefix(a), prefix(b)) <= 0. So the keys of one prefix are
//     contiguous in key order.
//  4. Split is deterministic and depends on the key alone.
//
// A Split that breaks them makes filters answer "absent" for present keys.
// A length outside the key is caught wherever Split is called (Prefix):
// the write, flush, seek or lookup that meets it fails with an error
// wrapping ErrInvalidSplit. CheckSplit, which kv.Open and the sstable
// Writer and Reader call, refuses a Split that breaks invariants 1, 2 or
// 4 on a few sample keys.
// Tables record the name of the Split their filters were built under
// (Comparer.SplitName), so changing how keys split needs a new name.
type Split func(key []byte) int

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
	// Split, when not nil, makes filters hold key prefixes rather than
	// whole keys; see [Split] for the invariants it must keep. nil means
	// whole keys: every key is its own prefix.
	Split Split
	// SplitName names Split and must be set with it. Tables store it with
	// their filters: a reader whose comparer splits differently (or not at
	// all) reads such a table without its filter, correct but slower.
	// Change it whenever Split changes.
	SplitName string
	// AbbreviatedKey, when not nil, returns a fixed-length summary of a
	// user key that orders as the keys do wherever summaries differ: for
	// all keys a and b, AbbreviatedKey(a) < AbbreviatedKey(b) implies
	// Compare(a, b) < 0, and > implies > 0. Keys whose summaries are
	// equal are compared whole. It is Pebble's Comparer.AbbreviatedKey,
	// with the same contract, which must hold for every key the store is
	// given: the keys written, and those of lookups, seeks and bounds.
	// The memtable keeps each key's summary beside its links and decides
	// most steps of a search by it, without reading the key, which lies
	// elsewhere in memory. A bytewise comparer needs none: the first 8
	// bytes of its keys serve (see Abbreviator).
	AbbreviatedKey func(key []byte) uint64
	// Name identifies the ordering.
	Name string
}

// Abbreviator returns the function whose summaries of user keys order
// them as c does wherever summaries differ (see AbbreviatedKey): KeyPrefix
// for a bytewise comparer, else c's AbbreviatedKey, which may be nil.
func (c *Comparer) Abbreviator() func(key []byte) uint64 {
	if c.Bytewise() {
		return KeyPrefix
	}
	return c.AbbreviatedKey
}

// ErrInvalidSplit marks the error of a comparer whose Split broke its
// contract (see [Split]): it returned a length outside the key, or a
// prefix that is not its own prefix, or it panicked while CheckSplit
// tried it. Test for it with errors.Is.
var ErrInvalidSplit = errors.New("bloomkv: invalid Split")

// Prefix returns key[:Split(key)], or key itself when c has no Split: what
// a filter holds for key. A Split that returns a length outside key gives
// an error wrapping ErrInvalidSplit that names the key, never a panic.
func (c *Comparer) Prefix(key []byte) ([]byte, error) {
	if c.Split == nil {
		return key, nil
	}
	n := c.Split(key)
	if n < 0 || n > len(key) {
		return nil, c.splitError(key, fmt.Sprintf("returned %d", n))
	}
	return key[:n], nil
}

// HasPrefix reports whether prefix is key's prefix under c's Split (the
// whole key when c has none). It slices nothing, so a Split that returns
// a length outside key makes it answer false, not panic.
func (c *Comparer) HasPrefix(key, prefix []byte) bool {
	if !bytes.HasPrefix(key, prefix) {
		return false
	}
	if c.Split == nil {
		return len(key) == len(prefix)
	}
	return c.Split(key) == len(prefix)
}

// splitError describes what c's Split did wrong with key.
func (c *Comparer) splitError(key []byte, what string) error {
	return fmt.Errorf("%w: comparer %q: Split (%s) %s for the %d-byte key %q",
		ErrInvalidSplit, c.Name, c.SplitName, what, len(key), abbreviate(key))
}

// abbreviate shortens long keys for error messages.
func abbreviate(key []byte) []byte {
	if len(key) <= 64 {
		return key
	}
	return key[:64]
}

// splitSamples are keys of common shapes (words, paths, numbers, binary)
// on which CheckSplit tries every Split, whatever keys the store holds:
// any Split must keep its contract on them. The empty key is not among
// them.
var splitSamples = [][]byte{
	[]byte("a"), []byte("a/"), []byte("a/b"), []byte("user/7/name"), []byte("p75/000"),
	[]byte("key000000123"), []byte("k\x00"), []byte("\x00"), []byte("\xff\xff\xff"),
	[]byte("0123456789abcdef0123456789abcdef@12"),
}

// CheckSplit reports an error when c has a Split but no SplitName, or a
// SplitName without a Split: filters built under it could not be told
// apart from whole-key filters. When c has a Split, it also tries it on a
// few keys of common shapes and on samples (keys the store holds, say):
// an error wrapping ErrInvalidSplit reports a Split that returns a length
// outside its key, a prefix that is not its own prefix, a different
// length for the same key, or that panics.
func (c *Comparer) CheckSplit(samples ...[]byte) error {
	if (c.Split == nil) != (c.SplitName == "") {
		return fmt.Errorf("comparer %q: Split and SplitName must be set together", c.Name)
	}
	if c.Split == nil {
		return nil
	}
	for _, set := range [][][]byte{splitSamples, samples} {
		for _, key := range set {
			if err := c.checkSplitOn(key); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSplitOn checks c's Split on one key: a length within the key, the
// same twice, and a prefix that is its own prefix.
func (c *Comparer) checkSplitOn(key []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = c.splitError(key, fmt.Sprintf("panicked (%v)", p))
		}
	}()
	prefix, err := c.Prefix(key)
	switch {
	case err != nil:
		return err
	case c.Split(key) != len(prefix):
		return c.splitError(key, "returned two lengths")
	case c.Split(prefix) != len(prefix):
		return c.splitError(key, fmt.Sprintf("cut %d bytes, but cut its prefix to %d", len(prefix), c.Split(prefix)))
	}
	return nil
}

// Bytewise reports whether c orders keys by bytes.Compare itself, so that
// the first bytes of keys (KeyPrefix) order them as the whole keys do. It
// looks at the function, not the name: a comparer that merely calls itself
// bytewise does not qualify, and one that wraps bytes.Compare in another
// function is only searched without prefixes, never wrongly.
func (c *Comparer) Bytewise() bool {
	return reflect.ValueOf(c.Compare).Pointer() == reflect.ValueOf(bytes.Compare).Pointer()
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

// KeyPrefix returns the first 8 bytes of k as a big-endian number, zero
// padded. Under a bytewise order, keys whose KeyPrefixes differ order as
// those do: the first byte where the padded prefixes differ is either a
// real byte of both keys, or past the end of the lower one, which is then
// a prefix of the other. Search structures compare it first to skip most
// byte comparisons.
func KeyPrefix(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// NewSplitComparer returns a comparer that orders keys bytewise, as
// DefaultComparer does and under its Name, with split as its Split, named
// splitName (see Comparer.SplitName). It is the comparer of the common
// prefix setup: keys such as "user/42/name" whose filters should hold a
// prefix ("user/42/"). Since the ordering is DefaultComparer's, a store
// written without a Split opens under it, and its tables are read without
// their filters until compactions rewrite them.
func NewSplitComparer(splitName string, split Split) *Comparer {
	c := *DefaultComparer
	c.Split, c.SplitName = split, splitName
	return &c
}

// PrefixEnd returns the smallest key, under bytewise order, that sorts
// after every key beginning with prefix: prefix with its last byte below
// 0xff incremented and what follows that byte dropped. [prefix,
// PrefixEnd(prefix)) is then the range of the keys bearing prefix, for
// DeleteRange and for iterator bounds. It returns nil when no such key
// exists (prefix is empty or all 0xff bytes): the range then has no upper
// end. The result does not alias prefix.
func PrefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end := append([]byte(nil), prefix[:i+1]...)
			end[i]++
			return end
		}
	}
	return nil
}

// ImmediateSuccessor returns the smallest key, under bytewise order, that
// sorts after key: key followed by a zero byte. [key,
// ImmediateSuccessor(key)) holds key alone, so it turns an inclusive end
// into the exclusive end DeleteRange and upper bounds take. The result
// does not alias key.
func ImmediateSuccessor(key []byte) []byte {
	return append(append(make([]byte, 0, len(key)+1), key...), 0)
}
