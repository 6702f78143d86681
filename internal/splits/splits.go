// Package splits holds bloomkv's built-in Splits: rules that cut a key
// into the prefix its filters hold (see base.Split), each under a fixed
// SplitName, the one tables record. It is their one definition: the
// command-line tool names them (--split), the bench and the tests use
// them.
//
// A store written under a Split of an application's own can be read with
// its filters only by a program that has the same Split under the same
// name; one written under a built-in Split, by any program that names it
// here.
package splits

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Builtin is one built-in Split.
type Builtin struct {
	// Name is what the command-line tool calls it (--split NAME).
	Name string
	// SplitName is the Comparer.SplitName it goes by, the one stored in
	// the tables whose filters it built.
	SplitName string
	// Split is the rule.
	Split base.Split
	// Doc says in a line what it does.
	Doc string
}

// All lists the built-in Splits.
var All = []Builtin{
	{Name: "first-slash", SplitName: "bloomkv.first-slash", Split: FirstSlash,
		Doc: `the key up to and including its first '/' ("user/7/name" → "user/"); a key without one is its own prefix`},
	{Name: "user", SplitName: "bloomkv.bench.user", Split: User,
		Doc: `"user/<id>/<field>" → "user/<id>/", the prefix of bench --prefix; a key with fewer than two '/' is its own prefix`},
}

// Named returns the built-in Split called name, or an error listing them.
func Named(name string) (Builtin, error) {
	for _, b := range All {
		if b.Name == name {
			return b, nil
		}
	}
	return Builtin{}, fmt.Errorf("unknown split %q: want one of %s", name, strings.Join(names(), ", "))
}

// BySplitName returns the built-in Split that goes by splitName, if any.
func BySplitName(splitName string) (Builtin, bool) {
	for _, b := range All {
		if b.SplitName == splitName {
			return b, true
		}
	}
	return Builtin{}, false
}

// names returns the Names of All.
func names() []string {
	var n []string
	for _, b := range All {
		n = append(n, b.Name)
	}
	return n
}

// Comparer returns a copy of base.DefaultComparer (bytewise order, same
// name) that splits keys with b.
func (b Builtin) Comparer() *base.Comparer {
	c := *base.DefaultComparer
	c.Split, c.SplitName = b.Split, b.SplitName
	return &c
}

// FirstSlash cuts a key after its first '/', or keeps it whole when it has
// none: "user/7/name" has the prefix "user/", "apple" is its own prefix.
// It keeps the invariants of base.Split under bytewise order.
func FirstSlash(key []byte) int {
	if i := bytes.IndexByte(key, '/'); i >= 0 {
		return i + 1
	}
	return len(key)
}

// User cuts "user/<id>/<field>" after "user/<id>/", the prefix of a
// user's keys; a key with fewer than two slashes is its own prefix. It
// keeps the invariants of base.Split under bytewise order.
func User(key []byte) int {
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
