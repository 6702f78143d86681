package bloompolicy

import (
	"math"
	"slices"
	"sync"
)

// chunkLen is the number of hashes in one chunk of a writer's buffer.
const chunkLen = 1024

type hashChunk [chunkLen]uint64

// chunkPool recycles hash chunks between writers, so building a large
// filter allocates nothing once the pool is warm and never copies hashes
// to grow a buffer.
var chunkPool = sync.Pool{New: func() any { return new(hashChunk) }}

// writer is the [FilterWriter] of a [Bloom]. It keeps one 64-bit hash per
// key, in chunks, and lays the filter out in Finish, once the key count is
// known.
type writer struct {
	policy *Bloom
	chunks []*hashChunk // all full but the last, which holds n % chunkLen
	n      int          // hashes held
	last   uint64       // the hash added last
}

// AddKey adds key. A key equal to the one added just before adds nothing
// (tables add every version of a key in a row), so it does not inflate the
// count the filter is sized for.
func (w *writer) AddKey(key []byte) {
	h := hashKey(key)
	if w.n > 0 && h == w.last {
		return
	}
	i := w.n % chunkLen
	if i == 0 && w.n/chunkLen == len(w.chunks) {
		w.chunks = append(w.chunks, chunkPool.Get().(*hashChunk))
	}
	w.chunks[w.n/chunkLen][i] = h
	w.n++
	w.last = h
}

// held returns the hashes of chunk c.
func (w *writer) held(c int) []uint64 {
	return w.chunks[c][:min(chunkLen, w.n-c*chunkLen)]
}

// Finish appends the filter of the keys added since the last Finish to dst
// and resets the writer. Up to plainMaxKeys keys get the plain layout, more
// the blocked one; no keys get the one-byte empty filter.
func (w *writer) Finish(dst []byte) []byte {
	var body []byte
	switch n := w.n; {
	case n == 0:
		dst = append(dst, tagEmpty)
	case n <= w.policy.plainMaxKeys:
		size := w.policy.plainSizeFor(n)
		dst, body = grow(dst, size.bytes)
		for c := range w.chunks {
			for _, h := range w.held(c) {
				plainAdd(body, size.probes, h)
			}
		}
		dst = append(dst, trailer(layoutPlain, size.probes))
	default:
		lines := int(math.Ceil(float64(n) * w.policy.bitsPerKey / lineBits))
		probes := w.policy.probes
		dst, body = grow(dst, lines*lineBytes)
		for c := range w.chunks {
			for _, h := range w.held(c) {
				blockedAdd(body, probes, h)
			}
		}
		dst = append(dst, trailer(layoutBlocked, probes))
	}
	w.reset()
	return dst
}

// reset empties the writer. It keeps its first chunk, enough for a
// per-block filter, and returns the others to the pool.
func (w *writer) reset() {
	for i := 1; i < len(w.chunks); i++ {
		chunkPool.Put(w.chunks[i])
		w.chunks[i] = nil
	}
	w.chunks = w.chunks[:min(1, len(w.chunks))]
	w.n = 0
}

// grow extends dst by n zero bytes, with room for the trailer, and returns
// the extended slice and the new bytes.
func grow(dst []byte, n int) (extended, body []byte) {
	start := len(dst)
	dst = slices.Grow(dst, n+1)[:start+n]
	body = dst[start:]
	clear(body)
	return dst, body
}
