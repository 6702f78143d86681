package sstable

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bloomkv/bloomkv/bloompolicy"
)

// filterBlockWriter gathers one filter per data block. The filters are
// laid end to end, then their lengths as uvarints, then the offset where
// the lengths begin (see doc.go). A length costs one or two bytes, so the
// bookkeeping adds well under 0.2 bits per key to the filters themselves.
type filterBlockWriter struct {
	w       bloompolicy.FilterWriter
	filters []byte
	lengths []byte
	n       int // filters finished
}

func newFilterBlockWriter(p bloompolicy.FilterPolicy) *filterBlockWriter {
	return &filterBlockWriter{w: p.NewWriter()}
}

// addKey adds a user key to the current data block's filter. The caller
// passes each distinct user key of the block once.
func (f *filterBlockWriter) addKey(userKey []byte) { f.w.AddKey(userKey) }

// finishFilter closes the filter of the data block just written.
func (f *filterBlockWriter) finishFilter() {
	before := len(f.filters)
	f.filters = f.w.Finish(f.filters)
	f.lengths = binary.AppendUvarint(f.lengths, uint64(len(f.filters)-before))
	f.n++
}

// finish returns the filter block's contents, built on the filters'
// buffer; no filter may be added after it.
func (f *filterBlockWriter) finish() []byte {
	n := len(f.filters)
	f.filters = append(f.filters, f.lengths...)
	f.filters = binary.LittleEndian.AppendUint32(f.filters, uint32(n))
	return f.filters
}

// reuse makes f build the block in filters and lengths, emptied: the
// buffers of an earlier filterBlockWriter (see release).
func (f *filterBlockWriter) reuse(filters, lengths []byte) {
	f.filters, f.lengths = filters[:0], lengths[:0]
}

// release returns the buffers, for a later filterBlockWriter; f is then
// unusable.
func (f *filterBlockWriter) release() (filters, lengths []byte) {
	filters, lengths = f.filters, f.lengths
	f.filters, f.lengths = nil, nil
	return filters, lengths
}

// filterBlock is a decoded filter block: filter i covers data block i,
// and policy reads them (the table's own, or the one a Filter was built
// with).
type filterBlock struct {
	data    []byte
	offsets []uint32 // filter i is data[offsets[i]:offsets[i+1]]
	policy  bloompolicy.FilterPolicy
}

// decodeFilterBlock checks a filter block's structure and indexes its
// filters; it must hold exactly want filters.
func decodeFilterBlock(data []byte, want int) (filterBlock, error) {
	if len(data) < 4 || uint64(len(data)) > math.MaxUint32 {
		return filterBlock{}, fmt.Errorf("filter block of %d bytes", len(data))
	}
	end := len(data) - 4
	lengthsOff := int(binary.LittleEndian.Uint32(data[end:]))
	if lengthsOff > end {
		return filterBlock{}, fmt.Errorf("filter lengths offset %d beyond %d", lengthsOff, end)
	}
	if want > end-lengthsOff {
		return filterBlock{}, fmt.Errorf("room for at most %d filter lengths, want %d", end-lengthsOff, want)
	}
	offsets := make([]uint32, 1, want+1)
	p, sum := data[lengthsOff:end], uint64(0)
	for len(p) > 0 {
		l, n := binary.Uvarint(p)
		if n <= 0 || l > uint64(lengthsOff) {
			return filterBlock{}, fmt.Errorf("bad filter length %d", len(offsets)-1)
		}
		sum += l
		if sum > uint64(lengthsOff) {
			return filterBlock{}, fmt.Errorf("filters overrun their area of %d bytes", lengthsOff)
		}
		offsets = append(offsets, uint32(sum))
		p = p[n:]
	}
	if len(offsets)-1 != want || sum != uint64(lengthsOff) {
		return filterBlock{}, fmt.Errorf("%d filters of %d bytes, want %d filters of %d bytes",
			len(offsets)-1, sum, want, lengthsOff)
	}
	return filterBlock{data: data, offsets: offsets}, nil
}

// filter returns the filter of data block i.
func (fb *filterBlock) filter(i int) []byte {
	return fb.data[fb.offsets[i]:fb.offsets[i+1]:fb.offsets[i+1]]
}
