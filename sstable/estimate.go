package sstable

import "github.com/bloomkv/bloomkv/internal/base"

// EstimateDiskUsage returns the bytes of the data blocks that may hold
// user keys in [start, end] (both inclusive; nil is unbounded), as
// Pebble's Reader.EstimateDiskUsage: from the block the index search for
// start lands on to the one the search for end lands on, trailers
// included, whole blocks even where they hold keys outside the range.
// The index is in memory: nothing is read. A range outside the table's
// keys gives 0.
func (r *Reader) EstimateDiskUsage(start, end []byte) (uint64, error) {
	if err := r.checkOpen(); err != nil {
		return 0, err
	}
	if len(r.blocks) == 0 || (start != nil && end != nil && r.cmp.Compare(start, end) > 0) {
		return 0, nil
	}
	first, last := 0, len(r.blocks)-1
	if start != nil {
		i, err := r.searchIndex(base.MakeSearchKey(start))
		if err != nil {
			return 0, err
		}
		if i == len(r.blocks) {
			return 0, nil
		}
		first = i
	}
	if end != nil {
		// The first block whose separator is >= end's newest version
		// holds end's first version, if any; end's versions may go on
		// into the next block, which the estimate leaves out.
		j, err := r.searchIndex(base.MakeSearchKey(end))
		if err != nil {
			return 0, err
		}
		last = min(j, len(r.blocks)-1)
	}
	if last < first {
		return 0, nil
	}
	lo, hi := r.blocks[first].handle, r.blocks[last].handle
	return hi.Offset + hi.Length + blockTrailerLen - lo.Offset, nil
}
