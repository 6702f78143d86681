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
