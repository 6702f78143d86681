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
	// slabBytes is the size of a slab of nodes of one class.
	slabBytes = 16 << 10
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
	// Slabs of the three node classes (see tallNode).
	nodes1  atomic.Pointer[slab[node]]
	nodes4  atomic.Pointer[slab[node4]]
	nodes16 atomic.Pointer[slab[node16]]
	// Under mu: every chunk and slab installed, oldest first, and how
	// many of each list are in use since the last reset.
	chunks  reuseList[chunk]
	slabs1  reuseList[slab[node]]
	slabs4  reuseList[slab[node4]]
	slabs16 reuseList[slab[node16]]
}

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

// node returns a zeroed node with links for height levels.
func (a *arena) node(height int) *node {
	switch {
	case height == 1:
		return carve(a, &a.nodes1, &a.slabs1)
	case height <= 4:
		return &carve(a, &a.nodes4, &a.slabs4).n
	}
	return &carve(a, &a.nodes16, &a.slabs16).n
}

// carve takes the next element of the slab *s, installing the next slab
// of l, zeroed, or a new one of about slabBytes, when it is used up.
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
				var t T
				s.Store(l.add(&slab[T]{items: make([]T, max(1, slabBytes/int(unsafe.Sizeof(t))))}))
			}
		}
		a.mu.Unlock()
	}
}

// reset makes every chunk and slab free for reuse. Nothing may use the
// arena's memory any more, nor allocate from it meanwhile.
func (a *arena) reset() {
	a.chunk.Store(nil)
	a.nodes1.Store(nil)
	a.nodes4.Store(nil)
	a.nodes16.Store(nil)
	a.chunks.n, a.slabs1.n, a.slabs4.n, a.slabs16.n = 0, 0, 0, 0
}

// nodeSize returns the bytes a node of height takes: those of its class.
func nodeSize(height int) int {
	switch {
	case height == 1:
		return int(unsafe.Sizeof(node{}))
	case height <= 4:
		return int(unsafe.Sizeof(node4{}))
	}
	return MaxEntryOverhead
}

// MaxEntryOverhead is the most an entry adds to a MemTable's Size beyond
// the bytes of its user key and value: the node of the tallest class. A
// writer that must not underestimate what a batch adds to Size, before
// it is inserted, counts this much per entry.
const MaxEntryOverhead = int(unsafe.Sizeof(node16{}))
