package itertest

import (
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/splits"
)

// SlashSplit cuts a key after its first '/', or keeps it whole when it has
// none: "user/7/name" has the prefix "user/", "apple" is its own prefix. It
// is splits.FirstSlash.
func SlashSplit(key []byte) int { return splits.FirstSlash(key) }

// SlashComparer returns a bytewise comparer whose Split is SlashSplit,
// named "test.slash", for the tests of prefix filters and prefix seeks.
func SlashComparer() *base.Comparer {
	c := *base.DefaultComparer
	c.Split, c.SplitName = SlashSplit, "test.slash"
	return &c
}

// UserSplit cuts "user/<id>/<field>" after "user/<id>/", the prefix of a
// user's keys; a key with fewer than two slashes is its own prefix. It is
// splits.User, the Split of the bench's prefix-scan workload too.
func UserSplit(key []byte) int { return splits.User(key) }

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
