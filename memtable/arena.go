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
type arena struct {
	mu    sync.Mutex // held only to install a new chunk or slab
	chunk atomic.Pointer[chunk]
	// Slabs of the three node classes (see tallNode).
	nodes1  atomic.Pointer[slab[node]]
	nodes4  atomic.Pointer[slab[node4]]
	nodes16 atomic.Pointer[slab[node16]]
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

// nextChunk installs a new chunk, twice the size of full, unless another
// inserter replaced full already. n <= maxChunkSize/4, so the new chunk
// always holds it.
func (a *arena) nextChunk(full *chunk, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.chunk.Load() != full {
		return
	}
	size := firstChunkSize
	if full != nil {
		size = 2 * len(full.buf)
	}
	a.chunk.Store(&chunk{buf: make([]byte, min(max(size, n), maxChunkSize))})
}

// node returns a zeroed node with links for height levels.
func (a *arena) node(height int) *node {
	switch {
	case height == 1:
		return carve(a, &a.nodes1)
	case height <= 4:
		return &carve(a, &a.nodes4).n
	}
	return &carve(a, &a.nodes16).n
}

// carve takes the next element of the slab *s, installing a new slab of
// about slabBytes when it is used up.
func carve[T any](a *arena, s *atomic.Pointer[slab[T]]) *T {
	for {
		cur := s.Load()
		if cur != nil {
			if i := cur.used.Add(1); i <= int64(len(cur.items)) {
				return &cur.items[i-1]
			}
		}
		a.mu.Lock()
		if s.Load() == cur {
			var t T
			s.Store(&slab[T]{items: make([]T, max(1, slabBytes/int(unsafe.Sizeof(t))))})
		}
		a.mu.Unlock()
	}
}

// nodeSize returns the bytes a node of height takes: those of its class.
func nodeSize(height int) int {
	switch {
	case height == 1:
		return int(unsafe.Sizeof(node{}))
	case height <= 4:
		return int(unsafe.Sizeof(node4{}))
	}
	return int(unsafe.Sizeof(node16{}))
}
