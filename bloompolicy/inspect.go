package bloompolicy

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// ErrInvalidFilter is wrapped by the errors of [Inspect] for bytes that are
// not a filter of this encoding. MayContain answers true for such bytes.
var ErrInvalidFilter = errors.New("bloompolicy: invalid filter")

// FilterInfo describes one encoded filter, for tools.
type FilterInfo struct {
	Size    int  // bytes of the filter, trailer included
	Bits    int  // bits of the body: 8 × (Size - 1)
	Probes  int  // probes per key
	Blocked bool // the cache-line-blocked layout; false: a plain bit array
	Lines   int  // 512-bit lines of a blocked filter; 0 for a plain one
	Empty   bool // the filter of zero keys, which contains nothing
	BitsSet int  // bits of the body that are 1

	// EstimatedKeys estimates how many distinct keys were added, from the
	// share of bits set; +Inf if every bit is set.
	EstimatedKeys float64
	// EstimatedFPR is the chance that a key never added passes this
	// filter: (bits set / bits)^probes for a plain filter, that averaged
	// over the lines of a blocked one.
	EstimatedFPR float64
}

// Inspect decodes the trailer of filter and counts its bits. It returns an
// error wrapping [ErrInvalidFilter] for bytes MayContain cannot decode.
func Inspect(filter []byte) (FilterInfo, error) {
	n := len(filter) - 1
	if n < 0 {
		return FilterInfo{}, fmt.Errorf("%w: no trailer byte", ErrInvalidFilter)
	}
	tag := filter[n]
	info := FilterInfo{Size: len(filter), Bits: 8 * n, Probes: int(tag & probesMask)}
	switch layout := int(tag >> layoutShift); {
	case layout == layoutPlain && n == 0 && info.Probes == 0:
		info.Empty = true
		return info, nil
	case layout != layoutPlain && layout != layoutBlocked:
		return FilterInfo{}, fmt.Errorf("%w: trailer %#02x names unknown layout %d", ErrInvalidFilter, tag, layout)
	case info.Probes == 0:
		return FilterInfo{}, fmt.Errorf("%w: trailer %#02x gives zero probes", ErrInvalidFilter, tag)
	case n == 0:
		return FilterInfo{}, fmt.Errorf("%w: trailer %#02x follows an empty body", ErrInvalidFilter, tag)
	case layout == layoutBlocked:
		if n%lineBytes != 0 || uint64(n/lineBytes) > math.MaxUint32 {
			return FilterInfo{}, fmt.Errorf("%w: blocked body of %d bytes is not a whole number of 64-byte lines", ErrInvalidFilter, n)
		}
		info.Blocked = true
		info.Lines = n / lineBytes
	case n > plainReadLimit:
		return FilterInfo{}, fmt.Errorf("%w: plain body of %d bytes exceeds %d", ErrInvalidFilter, n, plainReadLimit)
	}
	info.count(filter[:n])
	return info, nil
}

// count fills in BitsSet and the estimates, treating the body as one
// region (plain) or as its lines (blocked).
func (info *FilterInfo) count(body []byte) {
	region := len(body)
	if info.Blocked {
		region = lineBytes
	}
	var fpr, keys float64
	for off := 0; off < len(body); off += region {
		set := 0
		for _, b := range body[off : off+region] {
			set += bits.OnesCount8(b)
		}
		info.BitsSet += set
		m := float64(8 * region)
		fpr += math.Pow(float64(set)/m, float64(info.Probes))
		// Each probe leaves a given bit clear with chance 1-1/m.
		keys += math.Log1p(-float64(set)/m) / (float64(info.Probes) * math.Log1p(-1/m))
	}
	regions := float64(len(body) / region)
	info.EstimatedFPR = fpr / regions
	info.EstimatedKeys = keys
}
