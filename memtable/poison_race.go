//go:build race

package memtable

// poison overwrites a chunk the arena hands out again after a Reset: a
// reader that a caller let outlive the reset then reads garbage, which
// the tests see, rather than plausible old entries, and the race detector
// sees its reads race with these writes.
func poison(b []byte) {
	for i := range b {
		b[i] = 0xdb
	}
}
