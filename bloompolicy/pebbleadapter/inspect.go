package pebbleadapter

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
)

// ErrInvalidPebbleFilter is wrapped by the errors of [InspectPebbleFilter]
// for bytes that are not a usable filter of Pebble's Bloom encoding.
var ErrInvalidPebbleFilter = errors.New("pebbleadapter: invalid Pebble bloom filter")

// PebbleFilterInfo describes one filter in Pebble's Bloom encoding, for
// tools.
type PebbleFilterInfo struct {
	Size    int // bytes of the filter, trailer included
	Bits    int // bits of the array: 8 × (Size - 5)
	Probes  int // probes per key
	Lines   int // cache lines the array is cut into
	BitsSet int // bits of the array that are 1

	// EstimatedKeys estimates how many distinct keys were added from the
	// share of bits set, −(m/k)·ln(1 − X/m); +Inf if every bit is set.
	EstimatedKeys float64
}

// InspectPebbleFilter decodes the trailer of a filter written by Pebble's
// bloom.FilterPolicy and counts its bits. It returns an error wrapping
// [ErrInvalidPebbleFilter] for bytes that FromPebble would not hand to
// Pebble's decoder, and for a filter of zero probes (which matches every
// key and estimates nothing).
func InspectPebbleFilter(filter []byte) (PebbleFilterInfo, error) {
	if !validBloomFilter(filter) {
		return PebbleFilterInfo{}, ErrInvalidPebbleFilter
	}
	n := len(filter) - bloomTrailerLen
	info := PebbleFilterInfo{
		Size:   len(filter),
		Bits:   8 * n,
		Probes: int(filter[n]),
		Lines:  int(binary.LittleEndian.Uint32(filter[n+1:])),
	}
	if info.Probes == 0 {
		return PebbleFilterInfo{}, ErrInvalidPebbleFilter
	}
	for _, b := range filter[:n] {
		info.BitsSet += bits.OnesCount8(b)
	}
	m, k, x := float64(info.Bits), float64(info.Probes), float64(info.BitsSet)
	info.EstimatedKeys = -(m / k) * math.Log1p(-x/m)
	return info, nil
}
