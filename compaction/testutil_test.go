package compaction

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// errInjected is the error a sliceIter reports at its failure point.
var errInjected = errors.New("injected error")

// sliceIter is an in-memory base.InternalIterator over sorted entries. It can
// be told to fail when it lands on one entry (failAt), to test error
// propagation.
type sliceIter struct {
	cmp    base.Compare
	keys   []base.InternalKey
	vals   [][]byte
	pos    int // -1: before the first entry; len(keys): after the last
	failAt int // index whose landing fails; -1: never
	err    error
	closed bool
}

func newSliceIter(cmp base.Compare, keys []base.InternalKey, vals [][]byte) *sliceIter {
	return &sliceIter{cmp: cmp, keys: keys, vals: vals, pos: -1, failAt: -1}
}

func (s *sliceIter) land(pos int) bool {
	if s.err != nil {
		return false
	}
	s.pos = max(-1, min(pos, len(s.keys)))
	if s.failAt >= 0 && s.pos == s.failAt {
		s.err = fmt.Errorf("%w at %s", errInjected, s.keys[pos])
		return false
	}
	return s.Valid()
}

func (s *sliceIter) SeekGE(key []byte) bool {
	return s.land(sort.Search(len(s.keys), func(i int) bool { return s.cmp(s.keys[i].UserKey, key) >= 0 }))
}

func (s *sliceIter) SeekLT(key []byte) bool {
	return s.land(sort.Search(len(s.keys), func(i int) bool { return s.cmp(s.keys[i].UserKey, key) >= 0 }) - 1)
}

func (s *sliceIter) First() bool { return s.land(0) }
func (s *sliceIter) Last() bool  { return s.land(len(s.keys) - 1) }
func (s *sliceIter) Next() bool  { return s.land(s.pos + 1) }
func (s *sliceIter) Prev() bool  { return s.land(s.pos - 1) }
func (s *sliceIter) Valid() bool {
	return s.err == nil && s.pos >= 0 && s.pos < len(s.keys)
}
func (s *sliceIter) Key() base.InternalKey { return s.keys[s.pos] }
func (s *sliceIter) Value() []byte         { return s.vals[s.pos] }
func (s *sliceIter) Error() error          { return s.err }
func (s *sliceIter) Close() error {
	if s.closed {
		panic("sliceIter closed twice")
	}
	s.closed = true
	return s.err
}

// parseKey parses "userkey#seq,KIND".
func parseKey(t testing.TB, s string) base.InternalKey {
	t.Helper()
	user, rest, ok := strings.Cut(s, "#")
	seqStr, kindStr, ok2 := strings.Cut(rest, ",")
	if !ok || !ok2 {
		t.Fatalf("bad internal key %q (want user#seq,KIND)", s)
	}
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil {
		t.Fatalf("bad seqnum in %q: %v", s, err)
	}
	var kind base.Kind
	switch kindStr {
	case "SET":
		kind = base.KindSet
	case "DEL":
		kind = base.KindDelete
	default:
		t.Fatalf("bad kind in %q", s)
	}
	return base.MakeInternalKey([]byte(user), base.SeqNum(seq), kind)
}

// parseEntries parses whitespace-separated "user#seq,KIND[:value]" entries.
// A "!err" token makes the iterator fail when it lands on the next entry.
func parseEntries(t testing.TB, line string) *sliceIter {
	t.Helper()
	it := newSliceIter(base.DefaultComparer.Compare, nil, nil)
	for _, tok := range strings.Fields(line) {
		if tok == "!err" {
			it.failAt = len(it.keys)
			continue
		}
		k, v, _ := strings.Cut(tok, ":")
		it.keys = append(it.keys, parseKey(t, k))
		it.vals = append(it.vals, []byte(v))
	}
	for i := 1; i < len(it.keys); i++ {
		if base.InternalCompare(it.cmp, it.keys[i-1], it.keys[i]) >= 0 {
			t.Fatalf("entries out of order: %s then %s", it.keys[i-1], it.keys[i])
		}
	}
	return it
}
