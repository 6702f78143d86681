package sstable

import (
	"bytes"
	"fmt"

	"github.com/bloomkv/bloomkv/bloompolicy"
)

// This file builds a table's filters anew, in memory, from the table's own
// keys: a store that caps its filter memory holds each table's filters at
// the size its allocation gives the table now, which may differ from the
// size the table was written with (see Reader.BuildFilter). The table on
// disk is not touched: it keeps the filter it was written with, and a
// Reader opened later reads that one.

// Filter is a table's filter block built in memory by [Reader.BuildFilter],
// held by [Reader.HoldFilter].
type Filter struct {
	fb   filterBlock
	keys int64 // distinct keys (or prefixes) per block, summed
	read int64 // the data blocks' stored bytes, trailers included
}

// Size returns the bytes of f's filter block: its filters, their lengths
// and the lengths' offset, as the block would take on disk less its
// trailer.
func (f *Filter) Size() int64 { return int64(len(f.fb.data)) }

// BytesRead returns the bytes of the table's data blocks, as stored, that
// building f read (from the file, or the block cache where it held them):
// the cost of a build, in the terms of a compaction's input.
func (f *Filter) BytesRead() int64 { return f.read }

// Keys returns the number of keys f's filters hold, a key counted once per
// data block it has versions in (prefixes instead, under a Split).
func (f *Filter) Keys() int64 { return f.keys }

// BuildFilter builds a filter for each of the table's data blocks with
// policy p, over the keys the table's own filters would hold (each
// distinct user key of the block, or its prefix under the Reader's
// comparer's Split), reading every data block once without filling the
// block cache. It neither holds the filter nor changes the file: see
// HoldFilter. A data block that cannot be read gives its error, wrapping
// ErrCorruption when the bytes are bad.
func (r *Reader) BuildFilter(p bloompolicy.FilterPolicy) (*Filter, error) {
	if p == nil {
		return nil, fmt.Errorf("sstable: %s: BuildFilter with a nil policy", r.name)
	}
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	fw := newFilterBlockWriter(p)
	it, err := r.NewIter(&IterOptions{Compaction: true})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var prev []byte
	var keys int64
	done := 0     // filters finished: one per data block before it.block
	first := true // the key is the first of its block
	for ok := it.First(); ok; ok = it.Next() {
		for ; done < it.block; done++ {
			fw.finishFilter()
			first = true
		}
		prefix, err := r.cmp.Prefix(it.Key().UserKey)
		if err != nil {
			return nil, fmt.Errorf("sstable: %s: %w", r.name, err)
		}
		if first || !bytes.Equal(prev, prefix) {
			fw.addKey(prefix)
			keys++
		}
		prev, first = append(prev[:0], prefix...), false
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	for ; done < len(r.blocks); done++ {
		fw.finishFilter()
	}
	data := fw.finish()
	fb, err := decodeFilterBlock(data[:len(data):len(data)], len(r.blocks))
	if err != nil {
		return nil, fmt.Errorf("sstable: %s: built filter block: %v", r.name, err) // a bug, not the file's
	}
	fb.policy = p
	var read int64
	for i := range r.blocks {
		read += int64(r.blocks[i].handle.Length) + blockTrailerLen
	}
	return &Filter{fb: fb, keys: keys, read: read}, nil
}

// HoldFilter makes f the filter lookups ask, in place of the one held, if
// any (the table's own, or one built earlier), and reports whether it
// replaced one. f must have been built by this Reader's BuildFilter.
// After Close it holds nothing and returns false.
// Iterators already open keep the filter they began with.
func (r *Reader) HoldFilter(f *Filter) (replaced bool) {
	r.filterMu.Lock()
	defer r.filterMu.Unlock()
	if r.checkOpen() != nil {
		return false // Close let go of the filter and its reservation
	}
	fb := f.fb
	return r.setFilterLocked(&fb, true) != nil
}
