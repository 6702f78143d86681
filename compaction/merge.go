package compaction

import "github.com/bloomkv/bloomkv/internal/iterator"

// NewMergingIter returns an iterator over the union of the entries of iters,
// in internal-key order: the input Run expects when a compaction reads
// several tables or memtables. Entries with equal internal keys are all
// returned, those of the iterator passed first first. It owns iters: Close
// closes every one of them. The first error of any of them makes the merged
// iterator invalid, and Error and Close report it.
//
// It is the read path's merging iterator (internal/iterator), offered here
// so that users of Run in other modules can build its input.
func NewMergingIter(cmp Compare, iters ...InternalIterator) InternalIterator {
	return iterator.NewMerging(cmp, iters...)
}
