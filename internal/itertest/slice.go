package itertest

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// ErrInjected is the error a SliceIter reports at its failure point.
var ErrInjected = errors.New("injected error")

// SliceIter is an in-memory base.InternalIterator over sorted entries, the
// input of the tests of iterators and compactions. It can be told to fail
// when it lands on one entry (FailAt), to test error propagation, and it
// remembers whether it was closed.
type SliceIter struct {
	Cmp    base.Compare
	Keys   []base.InternalKey
	Vals   [][]byte
	FailAt int // index whose landing fails; -1: never

	pos    int // -1: before the first entry; len(Keys): after the last
	err    error
	closed bool
}

// NewSliceIter returns an iterator over keys and their values vals, which
// must be sorted in internal-key order under cmp.
func NewSliceIter(cmp base.Compare, keys []base.InternalKey, vals [][]byte) *SliceIter {
	return &SliceIter{Cmp: cmp, Keys: keys, Vals: vals, pos: -1, FailAt: -1}
}

func (s *SliceIter) land(pos int) bool {
	if s.err != nil {
		return false
	}
	s.pos = max(-1, min(pos, len(s.Keys)))
	if s.FailAt >= 0 && s.pos == s.FailAt {
		s.err = fmt.Errorf("%w at %s", ErrInjected, s.Keys[pos])
		return false
	}
	return s.Valid()
}

// SeekGE implements base.InternalIterator.
func (s *SliceIter) SeekGE(key []byte) bool {
	return s.land(sort.Search(len(s.Keys), func(i int) bool { return s.Cmp(s.Keys[i].UserKey, key) >= 0 }))
}

// SeekLT implements base.InternalIterator.
func (s *SliceIter) SeekLT(key []byte) bool {
	return s.land(sort.Search(len(s.Keys), func(i int) bool { return s.Cmp(s.Keys[i].UserKey, key) >= 0 }) - 1)
}

// First implements base.InternalIterator.
func (s *SliceIter) First() bool { return s.land(0) }

// Last implements base.InternalIterator.
func (s *SliceIter) Last() bool { return s.land(len(s.Keys) - 1) }

// Next implements base.InternalIterator.
func (s *SliceIter) Next() bool { return s.land(s.pos + 1) }

// Prev implements base.InternalIterator.
func (s *SliceIter) Prev() bool { return s.land(s.pos - 1) }

// Valid implements base.InternalIterator.
func (s *SliceIter) Valid() bool {
	return s.err == nil && s.pos >= 0 && s.pos < len(s.Keys)
}

// Key implements base.InternalIterator.
func (s *SliceIter) Key() base.InternalKey { return s.Keys[s.pos] }

// Value implements base.InternalIterator.
func (s *SliceIter) Value() []byte { return s.Vals[s.pos] }

// Error implements base.InternalIterator.
func (s *SliceIter) Error() error { return s.err }

// Close implements base.InternalIterator. Closing twice is a bug in the
// iterator under test, and panics.
func (s *SliceIter) Close() error {
	if s.closed {
		panic("itertest: SliceIter closed twice")
	}
	s.closed = true
	return s.err
}

// Closed reports whether Close was called.
func (s *SliceIter) Closed() bool { return s.closed }

// ParseKey parses an internal key written "userkey#seq,KIND" with
// base.ParseInternalKey, failing the test on an error.
func ParseKey(t testing.TB, s string) base.InternalKey {
	t.Helper()
	k, err := base.ParseInternalKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// ParseEntries parses whitespace-separated "user#seq,KIND[:value]" entries,
// in internal-key order, into a SliceIter under base.DefaultComparer. A
// "!err" token makes the iterator fail when it lands on the next entry.
func ParseEntries(t testing.TB, line string) *SliceIter {
	t.Helper()
	it := NewSliceIter(base.DefaultComparer.Compare, nil, nil)
	for _, tok := range strings.Fields(line) {
		if tok == "!err" {
			it.FailAt = len(it.Keys)
			continue
		}
		k, v, _ := strings.Cut(tok, ":")
		it.Keys = append(it.Keys, ParseKey(t, k))
		it.Vals = append(it.Vals, []byte(v))
	}
	for i := 1; i < len(it.Keys); i++ {
		if base.InternalCompare(it.Cmp, it.Keys[i-1], it.Keys[i]) >= 0 {
			t.Fatalf("entries out of order: %s then %s", it.Keys[i-1], it.Keys[i])
		}
	}
	return it
}
