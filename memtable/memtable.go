package memtable

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// maxHeight bounds the towers: with one node in four reaching each next
// level, 16 levels keep searches logarithmic up to about 4^16 entries.
const maxHeight = 16

// nodeOverhead is what Size counts for each entry besides its key, value and
// tower links.
const nodeOverhead = int64(unsafe.Sizeof(node{}))

// node is one entry of the skiplist. Everything but the links is set before
// the node is published and never changes after.
type node struct {
	key   base.InternalKey
	value []byte
	// prev is the entry before this one at level 0 (the head for the
	// first entry).
	prev atomic.Pointer[node]
	// tower[i] is the next entry at level i.
	tower []atomic.Pointer[node]
}

func (n *node) next(level int) *node { return n.tower[level].Load() }

// skiplist is one sorted list of nodes. A MemTable keeps two: its point
// entries, and its range tombstones.
type skiplist struct {
	cmp    *base.Comparer
	head   *node
	height atomic.Int32 // levels in use, 1..maxHeight
}

func (l *skiplist) init(cmp *Comparer) {
	l.cmp, l.head = cmp, &node{tower: make([]atomic.Pointer[node], maxHeight)}
	l.height.Store(1)
}

// MemTable is a sorted in-memory table of internal keys. See the package
// documentation for what may run concurrently.
type MemTable struct {
	cmp       *Comparer
	points    skiplist
	rangeDels skiplist // keyed by start#seq,RANGEDEL; the value is the end
	size      atomic.Int64
	count     atomic.Int64
	numDels   atomic.Int64 // range tombstones added
	// frags caches the range tombstones, fragmented, as of some count of
	// them; readers rebuild it when more have been added.
	frags atomic.Pointer[fragments]
	arena arena // the writer's alone
}

// fragments is the fragmented form of the first n range tombstones added
// (or more: a tombstone being added may be in it already).
type fragments struct {
	n     int64
	frags []RangeTombstone
}

// New returns an empty MemTable ordered by cmp (nil: [DefaultComparer]).
func New(cmp *Comparer) *MemTable {
	if cmp == nil {
		cmp = base.DefaultComparer
	}
	m := &MemTable{cmp: cmp}
	m.points.init(cmp)
	m.rangeDels.init(cmp)
	return m
}

// ErrDuplicateKey is returned (wrapped) by Add for an internal key the
// table already holds.
var ErrDuplicateKey = errors.New("memtable: internal key added twice")

// Add inserts a copy of key and value. Only one goroutine may Add at a time;
// readers may run concurrently. A key of kind base.KindRangeDelete is a
// range tombstone deleting [key.UserKey, value); it goes to the range
// tombstones, apart from the point entries. An empty range (start >= end)
// deletes nothing, as in Pebble.
//
// Each internal key may be added once: bloomkv gives every write its own
// sequence number, so an existing (user key, seqnum, kind) means the input
// repeats itself (a WAL replayed twice, say). Add then leaves the table
// unchanged and returns an error wrapping ErrDuplicateKey.
func (m *MemTable) Add(key InternalKey, value []byte) error {
	list := &m.points
	if key.Kind() == base.KindRangeDelete {
		list = &m.rangeDels
	}
	h, err := list.insert(key, value, &m.arena)
	if err != nil {
		return err
	}
	m.size.Add(nodeOverhead + int64(len(key.UserKey)+len(value)) + int64(h)*int64(unsafe.Sizeof(atomic.Pointer[node]{})))
	m.count.Add(1)
	if list == &m.rangeDels {
		m.numDels.Add(1)
	}
	return nil
}

// insert links a new node holding copies of key and value into the list
// and returns its height; a key the list holds already is refused with an
// error wrapping ErrDuplicateKey.
func (l *skiplist) insert(key InternalKey, value []byte, a *arena) (int, error) {
	var prev, next [maxHeight]*node
	l.findSplice(key, &prev, &next)
	if next[0] != nil && base.InternalCompare(l.cmp.Compare, next[0].key, key) == 0 {
		return 0, fmt.Errorf("%w: %s", ErrDuplicateKey, key)
	}
	h := randomHeight()
	x := newNode(a, key, value, h)

	if listHeight := int(l.height.Load()); h > listHeight {
		for i := listHeight; i < h; i++ {
			prev[i], next[i] = l.head, nil
		}
		l.height.Store(int32(h))
	}
	for i := range h {
		x.tower[i].Store(next[i])
	}
	x.prev.Store(prev[0])
	// Publishing at level 0 first means a reader that finds x at any level
	// can also walk to it, and on from it, at level 0.
	for i := range h {
		prev[i].tower[i].Store(x)
	}
	if next[0] != nil {
		next[0].prev.Store(x)
	}
	return h, nil
}

// newNode builds an unpublished node holding copies of key and value.
func newNode(a *arena, key base.InternalKey, value []byte, height int) *node {
	buf := a.bytes(len(key.UserKey) + len(value))
	k := len(key.UserKey)
	copy(buf, key.UserKey)
	copy(buf[k:], value)
	x := a.node(height)
	x.key = base.InternalKey{UserKey: buf[:k:k], Trailer: key.Trailer}
	x.value = buf[k:]
	return x
}

// randomHeight returns a tower height: 1, and one more with probability 1/4
// each time, up to maxHeight.
func randomHeight() int {
	r := rand.Uint64()
	h := 1
	for h < maxHeight && r&3 == 0 {
		h++
		r >>= 2
	}
	return h
}

// findSplice fills prev[i] with the last node before key at each level in
// use, and next[i] with the node after it.
func (l *skiplist) findSplice(key base.InternalKey, prev, next *[maxHeight]*node) {
	p := l.head
	for i := int(l.height.Load()) - 1; i >= 0; i-- {
		n := p.next(i)
		for n != nil && base.InternalCompare(l.cmp.Compare, n.key, key) < 0 {
			p, n = n, n.next(i)
		}
		prev[i], next[i] = p, n
	}
}

// findGE returns the first node whose key sorts at or after key, or nil.
// It walks on from findLT's node rather than take that node's successor
// again: between findLT's last look and the next load, the writer may
// have linked a node that sorts before key right after it, and that node
// must be stepped over, not returned.
func (l *skiplist) findGE(key base.InternalKey) *node {
	n := l.findLT(key).next(0)
	for n != nil && base.InternalCompare(l.cmp.Compare, n.key, key) < 0 {
		n = n.next(0)
	}
	return n
}

// findLT returns the last node whose key sorts before key, or the head.
func (l *skiplist) findLT(key base.InternalKey) *node {
	p := l.head
	for i := int(l.height.Load()) - 1; i >= 0; i-- {
		for n := p.next(i); n != nil && base.InternalCompare(l.cmp.Compare, n.key, key) < 0; n = n.next(i) {
			p = n
		}
	}
	return p
}

// findLast returns the last node, or the head when the table is empty.
func (l *skiplist) findLast() *node {
	p := l.head
	for i := int(l.height.Load()) - 1; i >= 0; i-- {
		for n := p.next(i); n != nil; n = n.next(i) {
			p = n
		}
	}
	return p
}

// Get returns the newest version of userKey with a sequence number at or
// below seq. found is false when the table holds no such version; kind
// tells a value (KindSet) from a tombstone (KindDelete). When a range
// tombstone of the table visible at seq covers userKey and is newer than
// the version found (or no version was found), Get reports found with kind
// KindRangeDelete and no value: the key is deleted as of seq. value
// belongs to the MemTable: it stays valid while the caller holds it and
// must not be modified.
func (m *MemTable) Get(userKey []byte, seq SeqNum) (value []byte, kind Kind, found bool) {
	seq = min(seq, base.SeqNumMax)
	n := m.points.findGE(base.MakeInternalKey(userKey, seq, base.KindMax))
	found = n != nil && m.cmp.Compare(n.key.UserKey, userKey) == 0
	if m.numDels.Load() > 0 {
		tseq, covered := rangedel.Covering(m.cmp.Compare, m.RangeDels(), userKey, seq)
		if covered && (!found || n.key.SeqNum() < tseq) {
			return nil, base.KindRangeDelete, true
		}
	}
	if !found {
		return nil, 0, false
	}
	return n.value, n.key.Kind(), true
}

// RangeDels returns the table's range tombstones, fragmented (see
// internal/rangedel), whatever their sequence numbers: a reader filters by
// its own. The result is cached until the next tombstone is added; the
// caller must not modify it.
func (m *MemTable) RangeDels() []RangeTombstone {
	n := m.numDels.Load()
	if n == 0 {
		return nil
	}
	if c := m.frags.Load(); c != nil && c.n >= n {
		return c.frags
	}
	// Counted before the walk: the walk sees at least n tombstones.
	var ts []RangeTombstone
	for x := m.rangeDels.head.next(0); x != nil; x = x.next(0) {
		ts = append(ts, RangeTombstone{Start: x.key.UserKey, End: x.value, Seq: x.key.SeqNum()})
	}
	c := &fragments{n: n, frags: rangedel.Fragment(m.cmp.Compare, ts)}
	m.frags.Store(c)
	return c.frags
}

// Size returns the approximate number of bytes the table holds: keys,
// values and per-entry bookkeeping.
func (m *MemTable) Size() int64 { return m.size.Load() }

// Len returns the number of entries.
func (m *MemTable) Len() int { return int(m.count.Load()) }
