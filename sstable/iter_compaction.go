package sstable

// NewCompactionIter returns an iterator over all of the table's internal
// keys for one pass, as a compaction makes. It reads a block the cache
// holds from the cache, and any other into a buffer of its own, reused
// from block to block, without caching it: a pass over a whole table
// neither evicts the blocks lookups want (as Pebble reads compaction
// inputs) nor leaves one buffer of garbage per block. So, unlike
// NewIter's, its Key and Value, value bytes included, are valid only
// until the next move.
func (r *Reader) NewCompactionIter() (InternalIterator, error) {
	it := new(Iter)
	if err := r.InitCompactionIter(it); err != nil {
		return nil, err
	}
	return it, nil
}

// InitCompactionIter readies it to iterate over the table as
// NewCompactionIter's iterator does; it is as for InitIter.
func (r *Reader) InitCompactionIter(it *Iter) error {
	buf := it.blockBuf
	if err := r.InitIter(it, nil, nil, nil); err != nil {
		return err
	}
	it.compaction, it.blockBuf = true, buf
	return nil
}

// dataBlock returns the contents of data block i for the iterator: for a
// compaction iterator, from the cache or read into its buffer (see
// NewCompactionIter); otherwise through the cache (Reader.dataBlock).
// stats may be nil.
func (it *Iter) dataBlock(i int, stats *LookupStats) ([]byte, error) {
	r := it.r
	if !it.compaction {
		return r.dataBlock(i, stats)
	}
	if b := r.cachedBlock(i); b != nil {
		return b, nil
	}
	b, err := r.readBlockInto(r.blocks[i].handle, it.blockBuf)
	if err == nil {
		it.blockBuf = b
	}
	return b, err
}
