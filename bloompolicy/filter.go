package bloompolicy

import (
	"math"

	"github.com/cespare/xxhash/v2"
)

// This file holds the filter encoding shared by the writer (which sets bits)
// and MayContain (which tests them). doc.go draws the bytes.

const (
	// lineBits is the size of one line of the blocked layout: a 64-byte
	// cache line.
	lineBits  = 512
	lineBytes = lineBits / 8

	// maxProbes caps the probes per key the writer uses. The trailer could
	// say up to 63; past 32 the extra accuracy is worth nothing next to the
	// cost of probing.
	maxProbes = 32

	// plainMaxBytes bounds the plain layout's body, measured at the
	// textbook bits per key of the target or at the fixed bits per key (a
	// body sized exactly for a target may come out a few bytes larger): a
	// filter that would be larger uses the blocked layout, so a query
	// touches one cache line. Below it the whole filter is a few lines that
	// stay hot, and the plain layout gives the better rate for the bits.
	plainMaxBytes = 4096

	// plainReadLimit bounds the plain body MayContain accepts, so that a
	// bit position always fits the 32-bit multiply-shift reduction.
	plainReadLimit = 1 << 28

	// golden is 2^64 divided by the golden ratio, rounded to odd. Multiplying
	// by it scrambles the high bits of a hash, which makes the next probe.
	golden = 0x9e3779b97f4a7c15
)

// The trailer is the last byte of every filter: the layout in its top two
// bits and the probe count in the low six.
const (
	layoutPlain   = 0
	layoutBlocked = 1
	layoutShift   = 6
	probesMask    = 1<<layoutShift - 1

	// tagEmpty alone is the filter of zero keys: it contains nothing.
	tagEmpty = layoutPlain<<layoutShift | 0
)

func trailer(layout, probes int) byte {
	return byte(layout<<layoutShift | probes)
}

// hashKey is the one hash of a key; every probe derives from it.
func hashKey(key []byte) uint64 {
	return xxhash.Sum64(key)
}

// mayContain reports whether the filter f may hold key. It answers true for
// anything it cannot decode, and hashes key only once f has been checked.
func mayContain(f []byte, key []byte) bool {
	n := len(f) - 1
	if n < 0 {
		return true
	}
	tag := f[n]
	probes := int(tag & probesMask)
	switch tag >> layoutShift {
	case layoutBlocked:
		if probes == 0 || n == 0 || n%lineBytes != 0 || uint64(n/lineBytes) > math.MaxUint32 {
			return true
		}
		return blockedContains(f[:n], probes, hashKey(key))
	case layoutPlain:
		if n == 0 && probes == 0 {
			return false // the empty filter
		}
		if probes == 0 || n == 0 || n > plainReadLimit {
			return true
		}
		return plainContains(f[:n], probes, hashKey(key))
	}
	return true
}

// plainPosition maps a probe word onto [0, bits) by multiply-shift of its
// high 32 bits, which is uniform and cheaper than a division.
func plainPosition(x, bits uint64) uint64 {
	return (x >> 32) * bits >> 32
}

// plainContains tests a plain bit array: probe i is bit
// plainPosition(h * golden^i, 8*len(body)).
func plainContains(body []byte, probes int, h uint64) bool {
	bits := uint64(len(body)) * 8
	x := h
	for range probes {
		pos := plainPosition(x, bits)
		if body[pos>>3]&(1<<(pos&7)) == 0 {
			return false
		}
		x *= golden
	}
	return true
}

func plainAdd(body []byte, probes int, h uint64) {
	bits := uint64(len(body)) * 8
	x := h
	for range probes {
		pos := plainPosition(x, bits)
		body[pos>>3] |= 1 << (pos & 7)
		x *= golden
	}
}

// lineOffset picks the line of a key from the low 32 bits of its hash
// (multiply-shift again); the probes inside the line come from the high
// bits, so the two choices are independent.
func lineOffset(h uint64, lines int) int {
	return int((h&math.MaxUint32)*uint64(lines)>>32) * lineBytes
}

// blockedContains tests a blocked filter: probe i is bit (h*golden^i)>>55 of
// the key's line, the top nine bits of the probe word. It tests every probe
// without branching: the probes share one cache line, so the extra tests
// cost less than the mispredicted branch an early exit would take on about
// every absent key.
func blockedContains(body []byte, probes int, h uint64) bool {
	off := lineOffset(h, len(body)/lineBytes)
	line := (*[lineBytes]byte)(body[off : off+lineBytes])
	var missing byte // bit 0 collects the complement of every probed bit
	x := h
	for range probes {
		missing |= ^line[x>>58] >> (x >> 55 & 7)
		x *= golden
	}
	return missing&1 == 0
}

// bitMask[i] is byte with bit i set. Looking it up is cheaper than the
// variable shift it replaces, which on amd64 ties up the CX register.
var bitMask = [8]byte{1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5, 1 << 6, 1 << 7}

// blockedAdd sets the probes of h in a blocked body. It is the inner loop of
// building a large filter, so it handles three probes per iteration (the
// usual counts, 3 to 12, are multiples of three).
func blockedAdd(body []byte, probes int, h uint64) {
	off := lineOffset(h, len(body)/lineBytes)
	line := (*[lineBytes]byte)(body[off : off+lineBytes])
	x := h
	i := probes
	for ; i >= 3; i -= 3 {
		y := x * golden
		z := y * golden
		line[x>>58] |= bitMask[x>>55&7]
		line[y>>58] |= bitMask[y>>55&7]
		line[z>>58] |= bitMask[z>>55&7]
		x = z * golden
	}
	for ; i > 0; i-- {
		line[x>>58] |= bitMask[x>>55&7]
		x *= golden
	}
}
