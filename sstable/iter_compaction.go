package sstable

// dataBlock returns the contents of data block i for the iterator: for a
// compaction iterator, from the cache or read into its buffer (see
// IterOptions.Compaction); otherwise through the cache (Reader.dataBlock).
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
