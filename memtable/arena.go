package memtable

import "unsafe"

const (
	// firstChunkSize is the size of an arena's first chunk; each chunk
	// after it doubles, up to maxChunkSize, so small memtables stay small.
	firstChunkSize = 16 << 10
	maxChunkSize   = 256 << 10
	// slabBytes is the size of a slab of nodes of one class.
	slabBytes = 16 << 10
)

// arena hands out memory that lives as long as the MemTable. Only the
// writer calls it.
type arena struct {
	chunk     []byte // unused rest of the current chunk
	chunkSize int
	// Slabs of the three node classes (see tallNode).
	nodes1  []node
	nodes4  []node4
	nodes16 []node16
}

// bytes returns a slice of n bytes whose capacity is exactly n, so appending
// to it can never reach a neighbour.
func (a *arena) bytes(n int) []byte {
	if n > maxChunkSize/4 {
		return make([]byte, n)
	}
	if n > len(a.chunk) {
		// n <= maxChunkSize/4, so the new chunk always holds it.
		a.chunkSize = min(max(2*a.chunkSize, firstChunkSize, n), maxChunkSize)
		a.chunk = make([]byte, a.chunkSize)
	}
	p := a.chunk[:n:n]
	a.chunk = a.chunk[n:]
	return p
}

// node returns a zeroed node with links for height levels.
func (a *arena) node(height int) *node {
	switch {
	case height == 1:
		return &carve(&a.nodes1)[0]
	case height <= 4:
		return &carve(&a.nodes4)[0].n
	}
	return &carve(&a.nodes16)[0].n
}

// carve takes the first element of *slab, refilled with a new slab of
// about slabBytes when empty, and returns it as a one-element slice.
func carve[T any](slab *[]T) []T {
	if len(*slab) == 0 {
		var t T
		*slab = make([]T, max(1, slabBytes/int(unsafe.Sizeof(t))))
	}
	x := (*slab)[:1:1]
	*slab = (*slab)[1:]
	return x
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
