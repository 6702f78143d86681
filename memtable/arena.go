package memtable

import "sync/atomic"

const (
	// firstChunkSize is the size of an arena's first chunk; each chunk
	// after it doubles, up to maxChunkSize, so small memtables stay small.
	firstChunkSize = 16 << 10
	maxChunkSize   = 1 << 20
	// slabLen is how many nodes, and tower links, each slab holds.
	slabLen = 256
)

// arena hands out memory that lives as long as the MemTable. Only the
// writer calls it.
type arena struct {
	chunk     []byte // unused rest of the current chunk
	chunkSize int
	nodes     []node
	links     []atomic.Pointer[node]
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

// node returns a zeroed node with a tower of height links.
func (a *arena) node(height int) *node {
	if len(a.nodes) == 0 {
		a.nodes = make([]node, slabLen)
	}
	if height > len(a.links) {
		a.links = make([]atomic.Pointer[node], slabLen)
	}
	n := &a.nodes[0]
	a.nodes = a.nodes[1:]
	n.tower = a.links[:height:height]
	a.links = a.links[height:]
	return n
}
