package memtable

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// maxHeight bounds the towers: with one node in four reaching each next
// level, 16 levels keep searches logarithmic up to about 4^16 entries.
const maxHeight = 16

// node is one entry of the skiplist. Everything but the links is set before
// the node is published and never changes after.
//
// A node's forward links sit together, next to its key prefix, so a search
// step at any level reads one cache line of the node it passes: next0 is
// the level-0 link, and the links of levels 1 and up precede the node in
// its slot (see slot, link), level i at i links below next0. The key may
// follow the node in the slot (see inlineKey):
//
//	[ level h-1 | ... | level 1 ] [ next0 | prefix | trailer | data | lens | prev ] [ key ]
//	 \_______ slot.up __________/  \__________________ node __________________/  slot.key
//
// The value's bytes are in the arena, at data, and so are the key's when
// they are not in the slot, right before them; the node keeps a pointer
// and two lengths rather than two slices, so more nodes fit in the cache
// lines a search walks.
type node struct {
	// next0 is the next entry at level 0. It must stay the first field.
	next0 atomic.Pointer[node]
	// prefix is keyPrefix(key.UserKey): the key's summary under the
	// list's comparer, else 0. A search step decides most compares from
	// it, without reading the key.
	prefix  uint64
	trailer uint64
	// data is the value's first byte, preceded by the key's keyLen bytes
	// when the key is not in the slot. With the key in the slot and an
	// empty value, it points at the key (any address will do).
	data   *byte
	keyLen uint32
	// valueBits is the value's length, with inlineBit set when the key
	// is in the slot.
	valueBits uint32
	// prev is the entry before this one at level 0 (the head for the
	// first entry).
	prev atomic.Pointer[node]
}

// nodeBytes is the size of a node, without its links above level 0 or
// its key.
const nodeBytes = int(unsafe.Sizeof(node{}))

// inlineBit marks, in node.valueBits, a key in the node's slot.
const inlineBit = 1 << 31

// inline reports whether n's key is in its slot, right after it.
func (n *node) inline() bool { return n.valueBits&inlineBit != 0 }

// valueLen returns the length of n's value.
func (n *node) valueLen() int { return int(n.valueBits &^ inlineBit) }

// room returns the first byte after n in its slot: its key's, if inline.
func (n *node) room() *byte { return (*byte)(unsafe.Add(unsafe.Pointer(n), nodeBytes)) }

// userKey returns the node's user key, which aliases the slot or the arena.
func (n *node) userKey() []byte {
	if n.inline() {
		return unsafe.Slice(n.room(), n.keyLen)
	}
	return unsafe.Slice(n.data, n.keyLen)
}

// key returns the node's internal key, which aliases the slot or the arena.
func (n *node) key() base.InternalKey {
	return base.InternalKey{UserKey: n.userKey(), Trailer: n.trailer}
}

// value returns the node's value, which aliases the arena.
func (n *node) value() []byte {
	switch v := n.valueLen(); {
	case n.inline():
		return unsafe.Slice(n.data, v)
	case v == 0:
		// Not past the key: that may be the end of the arena's memory.
		return unsafe.Slice(n.data, 0)
	default:
		return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(n.data), n.keyLen)), v)
	}
}

// link is a forward link; linkSize its size.
type link = atomic.Pointer[node]

const linkSize = int(unsafe.Sizeof(link{}))

// link returns n's forward link at level, which must be below n's height:
// at level 0 next0, above it one of the links before n in its slot.
func (n *node) link(level int) *link {
	return (*link)(unsafe.Add(unsafe.Pointer(&n.next0), -level*linkSize))
}

func (n *node) next(level int) *node { return n.link(level).Load() }

// skiplist is one sorted list of nodes. A MemTable keeps two: its point
// entries, and its range tombstones.
type skiplist struct {
	cmp    *base.Comparer
	head   *node
	height atomic.Int32 // levels in use, 1..maxHeight
	// abbreviate, when not nil, summarizes a user key in the order of
	// cmp (Comparer.Abbreviator); nodes then carry their keys' summaries.
	abbreviate func(key []byte) uint64
}

// splice is where a key goes: at each level i, between prev[i] and
// next[i] (nil: the end of the list).
type splice struct {
	prev, next [maxHeight]*node
	height     int // levels filled in; 0: none
}

func (l *skiplist) init(cmp *Comparer) {
	l.cmp, l.head = cmp, &new(bareSlot[[maxHeight - 1]link]).n
	l.abbreviate = cmp.Abbreviator()
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
	arena arena
	// resets counts the Resets, so an Inserter's splice into the table
	// before one is not taken for a splice into it now.
	resets uint64
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
	m.arena.init()
	m.points.init(cmp)
	m.rangeDels.init(cmp)
	return m
}

// ErrDuplicateKey is returned (wrapped) by Add for an internal key the
// table already holds.
var ErrDuplicateKey = errors.New("memtable: internal key added twice")

// Add inserts a copy of key and value. Any number of goroutines may Add at
// once, and readers may run concurrently. A key of kind
// base.KindRangeDelete is a range tombstone deleting [key.UserKey, value);
// it goes to the range tombstones, apart from the point entries. An empty
// range (start >= end) deletes nothing, as in Pebble.
//
// Each internal key may be added once: bloomkv gives every write its own
// sequence number, so an existing (user key, seqnum, kind) means the input
// repeats itself (a WAL replayed twice, say). Add then leaves the table
// unchanged and returns an error wrapping ErrDuplicateKey. A key of 4 GiB
// or more, or a value of 2 GiB or more, is refused with an error wrapping
// ErrTooLarge.
//
// A goroutine that adds runs of ascending keys (a batch's, a WAL's)
// should add them through an [Inserter], which remembers where the last
// key went.
func (m *MemTable) Add(key InternalKey, value []byte) error {
	var ins Inserter
	return ins.Add(m, key, value)
}

// Inserter adds entries to MemTables for one goroutine, remembering where
// its last entry went: when the next key sorts right after it, as in an
// ascending run, the insert takes two compares instead of a search from
// the top. The zero Inserter is ready to use, on any MemTable; each
// goroutine needs its own, and several may add to one MemTable at once.
type Inserter struct {
	m      *MemTable
	resets uint64
	list   *skiplist
	spl    splice
}

// Add inserts a copy of key and value into m, as [MemTable.Add] does.
func (ins *Inserter) Add(m *MemTable, key InternalKey, value []byte) error {
	list := &m.points
	if key.Kind() == base.KindRangeDelete {
		list = &m.rangeDels
	}
	if ins.m != m || ins.resets != m.resets || ins.list != list {
		ins.m, ins.resets, ins.list, ins.spl.height = m, m.resets, list, 0
	}
	if err := checkLens(len(key.UserKey), len(value)); err != nil {
		return err
	}
	size, err := list.insert(key, value, &m.arena, &ins.spl)
	if err != nil {
		return err
	}
	m.size.Add(int64(size))
	m.count.Add(1)
	if list == &m.rangeDels {
		m.numDels.Add(1)
	}
	return nil
}

// insert links a new node holding copies of key and value into the list
// and returns the bytes the entry takes (see newNode); a key the list
// holds already is refused with an error wrapping ErrDuplicateKey. spl
// is the inserter's splice, of its last insert into this list (or none):
// see findSplice.
//
// Other inserters may link nodes at the same time. Each level is linked
// with a compare-and-swap of the predecessor's link, from the successor
// the splice saw to the new node, level 0 first (as Pebble's arenaskl
// does); when another node got there first the swap fails, and the splice
// of that level is searched again from its predecessor, which still sorts
// before the key as nodes are never removed.
func (l *skiplist) insert(key InternalKey, value []byte, a *arena, spl *splice) (int, error) {
	return l.insertTower(key, value, a, spl, randomHeight())
}

// insertTower is insert of a node h levels high.
func (l *skiplist) insertTower(key InternalKey, value []byte, a *arena, spl *splice, h int) (int, error) {
	kp := l.keyPrefix(key.UserKey)
	l.findSplice(key, kp, spl)
	if next := spl.next[0]; next != nil && l.compare(next, key, kp) == 0 {
		return 0, fmt.Errorf("%w: %s", ErrDuplicateKey, key)
	}
	x, size := newNode(a, key, value, h, l.inlineKey(key.UserKey, kp, spl))
	x.prefix = kp
	if h > spl.height {
		for i := spl.height; i < h; i++ {
			spl.prev[i], spl.next[i] = l.head, nil
		}
		spl.height = h
		l.raiseHeight(h)
	}
	for i := range h {
		if !l.linkLevel(x, i, key, kp, spl) {
			return 0, fmt.Errorf("%w: %s", ErrDuplicateKey, key)
		}
	}
	for i := range h {
		spl.prev[i] = x
	}
	return size, nil
}

// inlineKey reports whether a new node goes to a slot with room for its
// key, userKey, whose keyPrefix is kp, to be linked at spl: when the key
// is short enough, and a node next to it at level 0 has the same prefix.
//
// A search step compares whole keys only where the prefixes tie: then a
// key in the slot, right after the node, is found at an address known
// before the node is read, where a key in the arena's chunks costs a
// second cache miss, after the node's. Where the neighbours' prefixes
// differ, as for most keys that begin with random bytes, searches decide
// by the prefix, and the key would only make the slot, which they walk,
// bigger: it goes to the chunks. Keys with a common beginning ("user12…",
// "/table/7/…") tie with their neighbours once the list holds a few of
// each, and go to slots from then on. A neighbour that arrives later may
// tie with a node whose key is in the chunks; that only costs the miss.
func (l *skiplist) inlineKey(userKey []byte, kp uint64, spl *splice) bool {
	if len(userKey) > maxInlineKey {
		return false
	}
	prev, next := spl.prev[0], spl.next[0]
	return (prev != l.head && prev.prefix == kp) || (next != nil && next.prefix == kp)
}

// raiseHeight makes the list at least h levels high.
func (l *skiplist) raiseHeight(h int) {
	for {
		cur := l.height.Load()
		if int(cur) >= h || l.height.CompareAndSwap(cur, int32(h)) {
			return
		}
	}
}

// linkLevel links x, which holds key, into level i between spl.prev[i]
// and spl.next[i], searching that level's splice again as often as
// another inserter links a node there first. It returns false, linking
// nothing, when the search at level 0 finds key itself: another inserter
// added it.
func (l *skiplist) linkLevel(x *node, i int, key InternalKey, kp uint64, spl *splice) bool {
	for {
		prev, next := spl.prev[i], spl.next[i]
		x.link(i).Store(next)
		if i == 0 {
			x.prev.Store(prev)
			l.helpPrev(prev, next)
		}
		if prev.link(i).CompareAndSwap(next, x) {
			if i == 0 && next != nil {
				next.prev.CompareAndSwap(prev, x)
			}
			return true
		}
		spl.prev[i], spl.next[i] = l.seekLevel(prev, i, key, kp)
		if i > 0 {
			// A node linked since next[0] was found may now follow key
			// at this level, before next[0]: the gap no longer encloses
			// level 0's, which the next insert's shortcut needs (see
			// findSplice). That insert searches from the top.
			spl.height = 0
		}
		if n := spl.next[i]; i == 0 && n != nil && l.compare(n, key, kp) == 0 {
			return false
		}
	}
}

// helpPrev finishes another inserter's work: when prev links to next at
// level 0 but next's back link does not point at prev yet, the inserter
// that linked next (or one that linked a node between them and lost the
// race) has yet to set it. Setting it here means a node's back link
// always reaches its predecessor before a later node can slip between
// them (see arenaskl's insert).
func (l *skiplist) helpPrev(prev, next *node) {
	if next == nil {
		return
	}
	if p := next.prev.Load(); p != prev && prev.next0.Load() == next {
		next.prev.CompareAndSwap(p, prev)
	}
}

// seekLevel returns the nodes at level i between which key goes,
// searching from start, which sorts before key (or is the head).
func (l *skiplist) seekLevel(start *node, i int, key InternalKey, kp uint64) (prev, next *node) {
	prev = start
	next = prev.next(i)
	for next != nil && l.compare(next, key, kp) < 0 {
		prev, next = next, next.next(i)
	}
	return prev, next
}

// ErrTooLarge is returned (wrapped) by Add for a key of 4 GiB or more, or
// a value of 2 GiB or more, whose length a node cannot hold.
var ErrTooLarge = errors.New("memtable: key or value too large")

// checkLens refuses the lengths of a key and value that a node cannot
// hold.
func checkLens(keyLen, valueLen int) error {
	if uint64(keyLen) > math.MaxUint32 || uint64(valueLen) >= inlineBit {
		return fmt.Errorf("%w: %d-byte key, %d-byte value", ErrTooLarge, keyLen, valueLen)
	}
	return nil
}

// newNode builds an unpublished node holding copies of key and value,
// whose lengths checkLens accepts, with the key in its slot if inline. It
// returns the node and the bytes the entry takes: its slot, its value's
// and, unless inline, its key's.
func newNode(a *arena, key base.InternalKey, value []byte, height int, inline bool) (*node, int) {
	k := len(key.UserKey)
	x, size := a.node(height, k, inline)
	size += len(value)
	x.trailer = key.Trailer
	x.keyLen, x.valueBits = uint32(k), uint32(len(value))
	if !inline {
		buf := a.bytes(k + len(value))
		copy(buf, key.UserKey)
		copy(buf[k:], value)
		x.data = unsafe.SliceData(buf)
		return x, size + k
	}
	x.valueBits |= inlineBit
	copy(unsafe.Slice(x.room(), k), key.UserKey)
	data := x.room() // for an empty value: any address will do
	if len(value) > 0 {
		buf := a.bytes(len(value))
		copy(buf, value)
		data = unsafe.SliceData(buf)
	}
	x.data = data
	return x, size
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

// findSplice points spl at where key, whose keyPrefix is kp, goes. spl
// holds the splice of the inserter's last insert, with x, the node it
// inserted, as prev below x's height. When key sorts right after x (an
// ascending run) that splice still brackets key at level 0, and so at
// every level above, whose gaps enclosed level 0's when it was taken:
// two compares instead of a search from the top. (A level searched again
// while the last insert linked it may enclose less, and linkLevel then
// leaves no splice to reuse.) Nodes other inserters linked since into
// those gaps make the splice stale, not wrong: every prev still sorts
// before key and every next after it, and insert's compare-and-swap
// finds them.
func (l *skiplist) findSplice(key base.InternalKey, kp uint64, spl *splice) {
	listHeight := int(l.height.Load())
	if spl.height == listHeight && l.brackets(spl, key, kp) {
		return
	}
	p := l.head
	for i := listHeight - 1; i >= 0; i-- {
		spl.prev[i], spl.next[i] = l.seekLevel(p, i, key, kp)
		p = spl.prev[i]
	}
	spl.height = listHeight
}

// brackets reports whether key sorts after spl.prev[0] and not after
// spl.next[0].
func (l *skiplist) brackets(spl *splice, key base.InternalKey, kp uint64) bool {
	if p := spl.prev[0]; p != l.head && l.compare(p, key, kp) >= 0 {
		return false
	}
	n := spl.next[0]
	return n == nil || l.compare(n, key, kp) >= 0
}

// keyPrefix returns userKey's summary under the list's comparer (see
// Comparer.Abbreviator), or 0 where it has none (every node then ties on
// it and compare falls through to the keys).
func (l *skiplist) keyPrefix(userKey []byte) uint64 {
	if l.abbreviate == nil {
		return 0
	}
	return l.abbreviate(userKey)
}

// compare orders n's key against key, whose keyPrefix is kp; n is not the
// head.
func (l *skiplist) compare(n *node, key base.InternalKey, kp uint64) int {
	switch {
	case n.prefix < kp:
		return -1
	case n.prefix > kp:
		return 1
	}
	return base.InternalCompare(l.cmp.Compare, n.key(), key)
}

// findGE returns the first node whose key sorts at or after key, or nil.
// It walks on from findLT's node rather than take that node's successor
// again: between findLT's last look and the next load, an inserter may
// have linked a node that sorts before key right after it, and that node
// must be stepped over, not returned.
func (l *skiplist) findGE(key base.InternalKey) *node {
	n, kp := l.findLT(key).next(0), l.keyPrefix(key.UserKey)
	for n != nil && l.compare(n, key, kp) < 0 {
		n = n.next(0)
	}
	return n
}

// findLT returns the last node whose key sorts before key, or the head.
func (l *skiplist) findLT(key base.InternalKey) *node {
	p, kp := l.head, l.keyPrefix(key.UserKey)
	for i := int(l.height.Load()) - 1; i >= 0; i-- {
		for n := p.next(i); n != nil && l.compare(n, key, kp) < 0; n = n.next(i) {
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
	found = n != nil && m.cmp.Compare(n.userKey(), userKey) == 0
	var pointSeq SeqNum
	if found {
		pointSeq = n.key().SeqNum()
	}
	if m.numDels.Load() > 0 && rangedel.Deletes(m.cmp.Compare, m.RangeDels(), userKey, seq, found, pointSeq) {
		return nil, base.KindRangeDelete, true
	}
	if !found {
		return nil, 0, false
	}
	return n.value(), n.key().Kind(), true
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
		ts = append(ts, RangeTombstone{Start: x.userKey(), End: x.value(), Seq: x.key().SeqNum()})
	}
	c := &fragments{n: n, frags: rangedel.Fragment(m.cmp.Compare, ts)}
	m.frags.Store(c)
	return c.frags
}

// Reset empties m for reuse, keeping its memory: the next entries go
// where the last ones were, so a store that retires MemTables at a steady
// rate allocates none once it has one to reuse. The caller must make sure
// nothing uses m any more, nor anything m returned (keys, values, range
// tombstones, iterators): all of it is overwritten.
func (m *MemTable) Reset() {
	m.points.reset()
	m.rangeDels.reset()
	m.size.Store(0)
	m.count.Store(0)
	m.numDels.Store(0)
	m.frags.Store(nil)
	m.arena.reset()
	m.resets++
}

// reset empties the list: its head links to nothing.
func (l *skiplist) reset() {
	for i := range maxHeight {
		l.head.link(i).Store(nil)
	}
	l.height.Store(1)
}

// Size returns the approximate number of bytes the table holds: keys,
// values and per-entry bookkeeping.
func (m *MemTable) Size() int64 { return m.size.Load() }

// Len returns the number of entries.
func (m *MemTable) Len() int { return int(m.count.Load()) }
