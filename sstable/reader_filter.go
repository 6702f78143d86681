package sstable

import (
	"strings"
	"unsafe"
)

// This file holds the Reader's filter block: found at open, loaded then
// unless ReaderOptions.DeferFilter, and dropped or loaded again at the
// owner's request (a store that caps its filter memory decides which
// tables hold theirs). A Reader whose filter is not held answers every
// lookup as a table without a filter would: correct, one data-block read
// per table considered.

// readFilter finds the filter block in the metaindex and, if the reader
// knows its policy and its filters hold what the reader's comparer asks
// them about (prefixes under the same Split, or whole keys), notes the
// policy and loads the block unless DeferFilter is set.
func (r *Reader) readFilter() error {
	r.cutAtPrefixes = r.cmp.Split != nil && r.props.FilterSplitName == r.cmp.SplitName
	for _, e := range r.metaindex {
		name, ok := strings.CutPrefix(e.Name, metaFilterPrefix)
		if !ok {
			continue
		}
		r.filterHandle = e.Handle
		policy := r.opts.Filters[name]
		if policy == nil || r.props.FilterSplitName != r.cmp.SplitName {
			// An unknown policy or another Split: read without the filter.
			r.filterSkipped = len(r.opts.Filters) > 0
			return nil
		}
		r.filterPolicy = policy
		if r.opts.DeferFilter {
			return nil
		}
		fb, err := r.decodeFilter()
		if err != nil {
			return err
		}
		r.filter.Store(fb)
		return nil
	}
	return nil
}

// decodeFilter reads and decodes the filter block.
func (r *Reader) decodeFilter() (*filterBlock, error) {
	data, err := r.readBlock(r.filterHandle)
	if err != nil {
		return nil, err
	}
	fb, err := decodeFilterBlock(data, len(r.blocks))
	if err != nil {
		return nil, r.corruptf(r.filterHandle.Offset, "filter block: %v", err)
	}
	fb.policy = r.filterPolicy
	return &fb, nil
}

// filterMemSize returns the heap bytes of a decoded filter block: its
// contents and the filters' offsets.
func filterMemSize(fb *filterBlock) int64 {
	return int64(unsafe.Sizeof(*fb) + uintptr(cap(fb.data)) +
		uintptr(cap(fb.offsets))*unsafe.Sizeof(uint32(0)))
}

// HasFilter reports whether the table has a filter this Reader can use,
// held or not.
func (r *Reader) HasFilter() bool { return r.filterPolicy != nil }

// FilterHeld reports whether the table's filter is in memory, asked by
// lookups.
func (r *Reader) FilterHeld() bool { return r.filter.Load() != nil }

// LoadFilter reads the table's own filter block into memory, in place of
// a filter held by HoldFilter if any, so that lookups ask it again, and
// reports whether it did: false when the table's own filter is already
// held or the table has no usable filter. Lookups ask the filter held
// until the table's own replaces it, never none. A corrupt filter block
// gives an error wrapping ErrCorruption; the table then keeps the filter
// it held, if any, and is read without one otherwise.
func (r *Reader) LoadFilter() (loaded bool, err error) {
	if err := r.checkOpen(); err != nil {
		return false, err
	}
	if r.filterPolicy == nil {
		return false, nil
	}
	r.filterMu.Lock()
	defer r.filterMu.Unlock()
	if r.filter.Load() != nil && !r.filterBuilt {
		return false, nil
	}
	fb, err := r.decodeFilter()
	if err != nil {
		return false, err
	}
	r.setFilterLocked(fb, false)
	return true, nil
}

// DropFilter lets go of the table's filter block and reports whether one
// was held. Lookups started after it read the table as if it had no
// filter; iterators already open keep the filter they began with.
func (r *Reader) DropFilter() (dropped bool) {
	r.filterMu.Lock()
	defer r.filterMu.Unlock()
	return r.setFilterLocked(nil, false) != nil
}

// setFilterLocked makes fb the filter lookups ask (nil: none) in one
// swap, built saying whether BuildFilter built it, moves the cache
// reservation from the filter held to fb, and returns the filter fb
// replaced. r.filterMu is held.
func (r *Reader) setFilterLocked(fb *filterBlock, built bool) (old *filterBlock) {
	old = r.filter.Swap(fb)
	r.filterBuilt = built
	if r.unreserveFilter != nil {
		r.unreserveFilter()
		r.unreserveFilter = nil
	}
	if c := r.opts.Cache; c != nil && fb != nil {
		r.unreserveFilter = c.Reserve(filterMemSize(fb))
	}
	return old
}
