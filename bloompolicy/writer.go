package bloompolicy

import (
	"iter"
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
	full   []*hashChunk // chunks filled, in order
	cur    *hashChunk   // the chunk being filled, nil before the first key
	used   int          // hashes in cur
	last   uint64       // the hash added last
}

// AddKey adds key. A key equal to the one added just before adds nothing
// (tables add every version of a key in a row), so it does not inflate the
// count the filter is sized for.
func (w *writer) AddKey(key []byte) {
	h := hashKey(key)
	if h == w.last && w.count() > 0 {
		return
	}
	if w.used == chunkLen || w.cur == nil {
		w.nextChunk()
	}
	w.cur[w.used&(chunkLen-1)] = h
	w.used++
	w.last = h
}

func (w *writer) nextChunk() {
	if w.cur != nil {
		w.full = append(w.full, w.cur)
	}
	w.cur = chunkPool.Get().(*hashChunk)
	w.used = 0
}

// count returns the number of hashes held.
func (w *writer) count() int { return len(w.full)*chunkLen + w.used }

// Finish appends the filter of the keys added since the last Finish to dst
// and resets the writer. Up to plainMaxKeys keys get the plain layout, more
// the blocked one; no keys get the one-byte empty filter.
func (w *writer) Finish(dst []byte) []byte {
	switch n := w.count(); {
	case n == 0:
		dst = append(dst, tagEmpty)
	case n <= w.policy.plainMaxKeys:
		size := w.policy.plainSizeFor(n)
		var body []byte
		dst, body = grow(dst, size.bytes)
		for hashes := range w.chunks() {
			for _, h := range hashes {
				plainAdd(body, size.probes, h)
			}
		}
		dst = append(dst, trailer(layoutPlain, size.probes))
	default:
		lines := int(math.Ceil(float64(n) * w.policy.bitsPerKey / lineBits))
		probes := w.policy.probes
		var body []byte
		dst, body = grow(dst, lines*lineBytes)
		for hashes := range w.chunks() {
			for _, h := range hashes {
				blockedAdd(body, probes, h)
			}
		}
		dst = append(dst, trailer(layoutBlocked, probes))
	}
	w.reset()
	return dst
}

// chunks iterates over the hashes held, a chunk at a time.
func (w *writer) chunks() iter.Seq[[]uint64] {
	return func(yield func([]uint64) bool) {
		for _, c := range w.full {
			if !yield(c[:]) {
				return
			}
		}
		if w.cur != nil {
			yield(w.cur[:w.used])
		}
	}
}

// reset empties the writer. It keeps the chunk it was filling, enough for
// a per-block filter, and returns the others to the pool.
func (w *writer) reset() {
	for i, c := range w.full {
		chunkPool.Put(c)
		w.full[i] = nil
	}
	w.full = w.full[:0]
	w.used = 0
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
