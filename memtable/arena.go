package memtable

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

const (
	// firstChunkSize is the size of an arena's first chunk; each chunk
	// after it doubles, up to maxChunkSize, so small memtables stay small.
	firstChunkSize = 16 << 10
	maxChunkSize   = 256 << 10
	// firstSlabBytes is the size of the first slab of nodes of each
	// class; each slab after it doubles, up to maxSlabBytes, so a small
	// memtable, whose nodes spread over the 15 classes, stays small.
	firstSlabBytes = 1 << 10
	maxSlabBytes   = 16 << 10
)

// arena hands out memory that lives as long as the MemTable. Any number of
// inserters may call it at once: each allocation is one atomic add on the
// current chunk or slab (a bump of its offset), and only the inserter that
// finds it full takes mu, to start the next one.
//
// The memory handed out is kept for reuse: reset makes the arena hand out
// its chunks and slabs again, in the order it first did, before it
// allocates more (see MemTable.Reset).
type arena struct {
	mu    sync.Mutex // held only to install a new chunk or slab
	chunk atomic.Pointer[chunk]
	// Under mu: every chunk installed, oldest first, and how many are in
	// use since the last reset.
	chunks reuseList[chunk]
	// pools carve the nodes, one pool per slot class (see slotClass).
	pools [heightClasses][roomClasses]nodePool
}

// init readies a for its first allocation.
func (a *arena) init() { a.pools = newPools() }

// reuseList is the pieces of one kind an arena installed, oldest first:
// the first n are in use, the others are free for the next installs.
type reuseList[T any] struct {
	all []*T
	n   int
}

// next returns the next free piece, or nil when every one is in use.
func (l *reuseList[T]) next() *T {
	if l.n == len(l.all) {
		return nil
	}
	l.n++
	return l.all[l.n-1]
}

// add records x, a new piece, as in use.
func (l *reuseList[T]) add(x *T) *T {
	l.all = append(l.all, x)
	l.n = len(l.all)
	return x
}

// chunk is a piece of memory for keys and values; used counts the bytes
// handed out, and may run past len(buf) when allocations race for its
// last bytes (those that do not fit go to the next chunk).
type chunk struct {
	buf  []byte
	used atomic.Int64
}

// slab is an array of nodes of one class, handed out one at a time.
type slab[T any] struct {
	items []T
	used  atomic.Int64
}

// bytes returns a slice of n bytes whose capacity is exactly n, so appending
// to it can never reach a neighbour.
func (a *arena) bytes(n int) []byte {
	if n > maxChunkSize/4 {
		return make([]byte, n)
	}
	for {
		c := a.chunk.Load()
		if c != nil {
			if end := c.used.Add(int64(n)); end <= int64(len(c.buf)) {
				return c.buf[end-int64(n) : end : end]
			}
		}
		a.nextChunk(c, n)
	}
}

// nextChunk installs the next chunk, unless another inserter replaced
// full already: after a reset, the next chunk used before that holds n,
// else a new one twice the size of full. n <= maxChunkSize/4, so a new
// chunk always holds it.
func (a *arena) nextChunk(full *chunk, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.chunk.Load() != full {
		return
	}
	// The next reused chunk that holds n; those too small for it wait
	// for the next reset.
	for c := a.chunks.next(); c != nil; c = a.chunks.next() {
		if len(c.buf) >= n {
			c.used.Store(0)
			poison(c.buf)
			a.chunk.Store(c)
			return
		}
	}
	size := firstChunkSize
	if full != nil {
		size = 2 * len(full.buf)
	}
	a.chunk.Store(a.chunks.add(&chunk{buf: make([]byte, min(max(size, n), maxChunkSize))}))
}

// node returns a zeroed node with links for height levels and, if
// inline, room after it for a key of keyLen bytes (see slotClass), and
// the size of its slot.
func (a *arena) node(height, keyLen int, inline bool) (*node, int) {
	h, r := slotClass(height, keyLen, inline)
	return a.pools[h][r].carve(a), slotSizes[h][r]
}

// carve takes the next element of the slab *s, installing the next slab
// of l, zeroed, or a new one (see firstSlabBytes), when it is used up.
func carve[T any](a *arena, s *atomic.Pointer[slab[T]], l *reuseList[slab[T]]) *T {
	for {
		cur := s.Load()
		if cur != nil {
			if i := cur.used.Add(1); i <= int64(len(cur.items)) {
				return &cur.items[i-1]
			}
		}
		a.mu.Lock()
		if s.Load() == cur {
			if next := l.next(); next != nil {
				clear(next.items)
				next.used.Store(0)
				s.Store(next)
			} else {
				s.Store(l.add(&slab[T]{items: make([]T, nextSlabLen[T](l))}))
			}
		}
		a.mu.Unlock()
	}
}

// nextSlabLen returns the length of the next slab of l: twice the last
// one's, firstSlabBytes' worth for the first, at most maxSlabBytes' worth
// and at least one.
func nextSlabLen[T any](l *reuseList[slab[T]]) int {
	var t T
	size := int(unsafe.Sizeof(t))
	n := firstSlabBytes / size
	if k := len(l.all); k > 0 {
		n = 2 * len(l.all[k-1].items)
	}
	return max(1, min(n, maxSlabBytes/size))
}

// reset makes every chunk and slab free for reuse. Nothing may use the
// arena's memory any more, nor allocate from it meanwhile.
func (a *arena) reset() {
	a.chunk.Store(nil)
	a.chunks.n = 0
	for i := range a.pools {
		for _, p := range a.pools[i] {
			p.reset()
		}
	}
}

// A node lives in a slot: its links above level 0, the node, and, for a
// key of up to maxInlineKey bytes whose neighbours share its prefix, the
// key, right after the node (see skiplist.inlineKey). A search that must
// compare that key then finds it beside the node it reads anyway, at an
// address it knows without loading the node, rather than in the arena's
// chunks. Other keys go to the chunks, before their values.
//
//	[ level h-1 | ... | level 1 ] [ node ] [ key, up to room bytes ]
//	 \______ up: links ________/
//
// Slots come in classes of 3 heights (1; up to 4, about 23% of nodes; up
// to maxHeight, about 0.4%) by 5 rooms (0, 16, 32, 48, 64 bytes: a key
// takes the smallest that holds it), each carved from slabs of its own.
type (
	slot[U, K any] struct {
		up  U
		n   node
		key K
	}
	// bareSlot is a slot without room: its node's key is in the chunks.
	bareSlot[U any] struct {
		up U
		n  node
	}
)

func (s *slot[U, K]) node() *node  { return &s.n }
func (s *bareSlot[U]) node() *node { return &s.n }

// The slot classes: heightClasses heights by roomClasses rooms, which
// are the multiples of roomStep up to maxInlineKey, the longest key a
// slot holds, and none.
const (
	maxInlineKey  = 64
	roomStep      = 16
	heightClasses = 3
	roomClasses   = 1 + maxInlineKey/roomStep
)

// slotClass returns the height class and the room class of the slot of a
// node of height, holding a key of keyLen bytes in the slot if inline:
// room class 0 has no room, class r holds keys of up to r*roomStep bytes.
func slotClass(height, keyLen int, inline bool) (h, r int) {
	switch {
	case height == 1:
	case height <= 4:
		h = 1
	default:
		h = 2
	}
	if inline {
		r = 1 + max(keyLen-1, 0)/roomStep
	}
	return h, r
}

// nodePool carves the nodes of one slot class.
type nodePool interface {
	// carve returns the node of a zeroed slot of the class.
	carve(a *arena) *node
	// reset makes every slab of the class free for reuse.
	reset()
	// layout returns the number of links before a slot's node, and the
	// bytes of room after it.
	layout() (links, room int)
}

// slotPtr is a pointer to a slot of type T.
type slotPtr[T any] interface {
	*T
	node() *node
}

// pool carves slots of type T.
type pool[T any, P slotPtr[T]] struct {
	cur  atomic.Pointer[slab[T]]
	list reuseList[slab[T]] // under arena.mu
}

func newPool[T any, P slotPtr[T]]() nodePool { return &pool[T, P]{} }

func (p *pool[T, P]) carve(a *arena) *node { return P(carve(a, &p.cur, &p.list)).node() }

func (p *pool[T, P]) reset() {
	p.cur.Store(nil)
	p.list.n = 0
}

func (p *pool[T, P]) layout() (links, room int) {
	var t T
	at := int(uintptr(unsafe.Pointer(P(&t).node())) - uintptr(unsafe.Pointer(&t)))
	return at / linkSize, int(unsafe.Sizeof(t)) - at - nodeBytes
}

// newPools returns a pool of each slot class, empty.
func newPools() [heightClasses][roomClasses]nodePool {
	type (
		up1  = [0]link
		up4  = [3]link
		up16 = [maxHeight - 1]link
	)
	return [heightClasses][roomClasses]nodePool{
		{newPool[bareSlot[up1]](), newPool[slot[up1, [16]byte]](), newPool[slot[up1, [32]byte]](),
			newPool[slot[up1, [48]byte]](), newPool[slot[up1, [64]byte]]()},
		{newPool[bareSlot[up4]](), newPool[slot[up4, [16]byte]](), newPool[slot[up4, [32]byte]](),
			newPool[slot[up4, [48]byte]](), newPool[slot[up4, [64]byte]]()},
		{newPool[bareSlot[up16]](), newPool[slot[up16, [16]byte]](), newPool[slot[up16, [32]byte]](),
			newPool[slot[up16, [48]byte]](), newPool[slot[up16, [64]byte]]()},
	}
}

// slotSizes are the sizes of the slot classes.
var slotSizes = func() (sizes [heightClasses][roomClasses]int) {
	for h, row := range newPools() {
		for r, p := range row {
			links, room := p.layout()
			sizes[h][r] = links*linkSize + nodeBytes + room
		}
	}
	return sizes
}()

// MaxEntryOverhead is the most an entry adds to a MemTable's Size beyond
// the bytes of its user key and value: the slot of the tallest class with
// the most room. A writer that must not underestimate what a batch adds
// to Size, before it is inserted, counts this much per entry.
const MaxEntryOverhead = int(unsafe.Sizeof(slot[[maxHeight - 1]link, [maxInlineKey]byte]{}))
