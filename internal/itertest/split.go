package itertest

import (
	"bytes"

	"github.com/bloomkv/bloomkv/internal/base"
)

// SlashSplit cuts a key after its first '/', or keeps it whole when it has
// none: "user/7/name" has the prefix "user/", "apple" is its own prefix. It
// keeps the invariants of base.Split under bytewise order.
func SlashSplit(key []byte) int {
	if i := bytes.IndexByte(key, '/'); i >= 0 {
		return i + 1
	}
	return len(key)
}

// SlashComparer returns a bytewise comparer whose Split is SlashSplit,
// named "test.slash", for the tests of prefix filters and prefix seeks.
func SlashComparer() *base.Comparer {
	c := *base.DefaultComparer
	c.Split, c.SplitName = SlashSplit, "test.slash"
	return &c
}

// UserSplit cuts "user/<id>/<field>" after "user/<id>/", the prefix of a
// user's keys; a key with fewer than two slashes is its own prefix. It is
// the Split of the prefix-scan workload, shared by its tests and
// benchmarks (the bench command keeps its own copy), and keeps the
// invariants of base.Split under bytewise order.
func UserSplit(key []byte) int {
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

// ComparerNamed returns the comparer a test script's split argument names:
// "slash" for SlashComparer (prefixes end at the first '/'), "none" for
// the bytewise default. ok is false for any other name.
func ComparerNamed(split string) (c *base.Comparer, ok bool) {
	switch split {
	case "slash":
		return SlashComparer(), true
	case "none":
		return base.DefaultComparer, true
	}
	return nil, false
}
