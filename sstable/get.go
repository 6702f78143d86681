package sstable

import (
	"fmt"
	"sync"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Get returns the newest version of userKey with a sequence number <= seq.
// found is false when the table holds no such version; kind tells a value
// (KindSet) from a tombstone (KindDelete). When one of the table's range
// tombstones visible at seq covers userKey and is newer than the version
// found, or covers it and no version was found, Get reports found with
// kind KindRangeDelete and no value: the key is deleted as of seq, and
// older tables need not be asked. value is immutable and stays valid after
// the call (it may alias a cached block: never modify it).
//
// The index is searched for the internal key (userKey, seq), so the lookup
// lands on the one data block that can hold the visible version, and that
// block's filter is asked first (about userKey's prefix, under a comparer
// with a Split): "absent" costs no data-block read. Should
// the block end inside userKey's versions, the lookup goes on to the next
// block, asking its filter too. The range tombstones, in memory, are
// searched whatever the filter says: a filter speaks only of point keys.
// stats (which may be nil) accumulates the filter verdicts, block reads
// and range-tombstone searches.
func (r *Reader) Get(userKey []byte, seq SeqNum, stats *LookupStats) (value []byte, kind Kind, found bool, err error) {
	if err := r.checkOpen(); err != nil {
		return nil, 0, false, err
	}
	if stats == nil {
		stats = new(LookupStats)
	}
	// Every version is at or below SeqNumMax; a larger seq would not fit
	// the search key's trailer and send the index search past userKey.
	seq = min(seq, base.SeqNumMax)
	value, key, found, err := r.getPoint(userKey, seq, stats)
	if err != nil {
		return nil, 0, false, err
	}
	if r.rangeDeleted(userKey, seq, found, key.SeqNum(), stats) {
		return nil, base.KindRangeDelete, true, nil
	}
	if !found && r.opts.CountMisses {
		r.misses.Add(1)
	}
	return value, key.Kind(), found, nil
}

// Misses returns the number of Get calls since the Reader was opened that
// found no version of their key in the table (nor a range tombstone
// covering it): the lookups to which the table's filter could have saved
// a data-block read, what a store that sizes filters by the lookups it
// serves weighs each table by. It counts only with
// ReaderOptions.CountMisses, and is 0 otherwise.
func (r *Reader) Misses() int64 { return r.misses.Load() }

// getPoint looks userKey up among the table's point entries, as Get
// describes; key carries the trailer (sequence number and kind) of the
// version found, and no user key.
func (r *Reader) getPoint(userKey []byte, seq base.SeqNum, stats *LookupStats) (value []byte, key base.InternalKey, found bool, err error) {
	target := base.MakeInternalKey(userKey, seq, base.KindMax)
	i, err := r.searchIndex(target)
	if err != nil {
		return nil, key, false, err
	}
	r.countConsidered(stats)
	filterKey, err := r.cmp.Prefix(userKey)
	if err != nil {
		return nil, key, false, fmt.Errorf("sstable: %s: %w", r.name, err)
	}
	fb := r.filter.Load() // nil: no filter held; read as if the table had none
	var it *blockIter     // taken from the pool only when a block must be read
	defer func() {
		if it != nil {
			putBlockIter(it)
		}
	}()
	for ; i < len(r.blocks); i++ {
		if fb != nil && !fb.policy.MayContain(fb.filter(i), filterKey) {
			stats.FilterNegatives++
			return nil, key, false, nil
		}
		if it == nil {
			it = blockIters.Get().(*blockIter)
		}
		res, err := r.searchBlock(it, i, userKey, seq, stats)
		if err != nil {
			return nil, key, false, err
		}
		countVerdict(stats, fb != nil, res.held, !res.held && fb != nil && r.blockHoldsPrefix(it, filterKey))
		if res.found || !res.exhausted {
			return res.value, res.key, res.found, nil
		}
		// The block ended inside userKey's versions: the next block can
		// hold more of them only if this block's index key has the same
		// user key.
		if more, err := r.indexKeyHasUserKey(i, userKey); !more || err != nil {
			return nil, key, false, err
		}
	}
	return nil, key, false, nil
}

// countConsidered counts a table a lookup asks, and whether its filter
// is skipped.
func (r *Reader) countConsidered(stats *LookupStats) {
	stats.TablesConsidered++
	if r.filterSkipped {
		stats.FilterSkipped++
	}
}

// countVerdict records whether a filter's "maybe" was borne out, when a
// filter was asked: held says the block held the key, prefixHeld that it
// held keys of the key's prefix (a prefix match, not a false positive:
// the filter holds prefixes).
func countVerdict(stats *LookupStats, asked, held, prefixHeld bool) {
	switch {
	case !asked:
	case held:
		stats.FilterTruePositives++
	case prefixHeld:
		stats.PrefixMatches++
	default:
		stats.FilterFalsePositives++
	}
}

// blockHoldsPrefix reports whether the data block it was initialized on
// holds a key of prefix, under a comparer with a Split and a table with a
// filter held (the caller's to check; false otherwise: the answer would
// count nothing). It reseeks
// it: keys of one prefix are contiguous and sort at or after the prefix
// itself, so the first key at or after the prefix tells.
func (r *Reader) blockHoldsPrefix(it *blockIter, prefix []byte) bool {
	if r.cmp.Split == nil {
		return false
	}
	return it.SeekGE(base.MakeSearchKey(prefix)) && r.cmp.HasPrefix(it.ikey.UserKey, prefix)
}

// searchIndex returns the first index entry >= target (the number of data
// blocks if none).
// Under a bytewise comparer the in-memory key prefixes find it without
// decoding index entries unless another entry shares target's 8-byte
// prefix; otherwise it binary-searches the index block.
func (r *Reader) searchIndex(target base.InternalKey) (int, error) {
	lo, hi := 0, len(r.blocks)
	if r.indexPrefixes != nil {
		p := base.KeyPrefix(target.UserKey)
		lo = lowerBound(r.indexPrefixes, p)
		for hi = lo; hi < len(r.indexPrefixes) && r.indexPrefixes[hi] == p; hi++ {
		}
		if lo == hi {
			return lo, nil
		}
	}
	var idx blockIter
	if err := r.initIndexIter(&idx); err != nil {
		return 0, err
	}
	if i := idx.searchRestartRange(target, lo, hi); i >= 0 {
		return i, nil
	}
	return 0, idx.err
}

// indexKeyHasUserKey reports whether index entry i's key has userKey as
// its user key.
func (r *Reader) indexKeyHasUserKey(i int, userKey []byte) (bool, error) {
	var idx blockIter
	if err := r.initIndexIter(&idx); err != nil {
		return false, err
	}
	k, ok := idx.restartKey(i)
	if !ok {
		return false, idx.err
	}
	return r.cmp.Compare(k.UserKey, userKey) == 0, nil
}

// lowerBound returns the first i with ps[i] >= p (len(ps) if none). The
// loop has no data-dependent branch, which pays off on random lookups.
func lowerBound(ps []uint64, p uint64) int {
	n := len(ps)
	if n == 0 {
		return 0
	}
	base := 0
	for n > 1 {
		half := n / 2
		if ps[base+half-1] < p {
			base += half
		}
		n -= half
	}
	if ps[base] < p {
		base++
	}
	return base
}

// blockIters holds the data-block iterators of finished lookups, so that
// Get does not allocate.
var blockIters = sync.Pool{New: func() any { return new(blockIter) }}

// putBlockIter pools it, keeping its key buffer but no reference to a
// block.
func putBlockIter(it *blockIter) {
	*it = blockIter{keyBuf: it.keyBuf[:0]}
	blockIters.Put(it)
}

// blockSearch is what searchBlock found in one data block.
type blockSearch struct {
	value     []byte
	key       base.InternalKey // the trailer of the version found; no user key
	found     bool             // a version visible at the lookup's seq
	held      bool             // the block holds some version of the user key
	exhausted bool             // the block ended before a larger user key
}

// searchBlock reads data block i and looks in it for the newest version of
// userKey visible at seq.
func (r *Reader) searchBlock(it *blockIter, i int, userKey []byte, seq base.SeqNum, stats *LookupStats) (blockSearch, error) {
	stats.BlockReads++
	data, err := r.dataBlock(i, stats)
	if err != nil {
		return blockSearch{}, err
	}
	if err := it.init(data, r.cmp.Compare, r.name, r.blocks[i].handle.Offset); err != nil {
		return blockSearch{}, err
	}
	it.globalSeq = r.opts.GlobalSeqNum
	var res blockSearch
	ok := it.SeekGE(base.MakeSearchKey(userKey))
	for ; ok && r.cmp.Compare(it.ikey.UserKey, userKey) == 0; ok = it.Next() {
		res.held = true
		if it.ikey.Visible(seq) {
			res.value, res.key, res.found = it.val, base.InternalKey{Trailer: it.ikey.Trailer}, true
			return res, nil
		}
	}
	if it.err != nil {
		return blockSearch{}, it.err
	}
	res.exhausted = !ok
	return res, nil
}

// dataBlock returns the contents of data block i, from the cache if it is
// there, else from the file (then cached). stats may be nil.
func (r *Reader) dataBlock(i int, stats *LookupStats) ([]byte, error) {
	if b := r.cachedBlock(i); b != nil {
		return b, nil
	}
	return r.readDataBlock(i, stats, nil)
}

// readDataBlock reads data block i, which the cache lacks, from the file,
// or through ra when not nil, into a buffer of its own, counts the miss
// in stats (which may be nil) and caches the block.
func (r *Reader) readDataBlock(i int, stats *LookupStats, ra *readahead) ([]byte, error) {
	if stats != nil {
		stats.BlockCacheMisses++
	}
	d := &r.blocks[i]
	var b []byte
	var err error
	if ra != nil {
		b, err = ra.block(r, d.handle, nil)
	} else {
		b, err = r.readBlock(d.handle)
	}
	if c := r.opts.Cache; err == nil && c != nil {
		c.set(r.opts.FileNum, d.handle.Offset, b, &d.cached)
	}
	return b, err
}

// cachedBlock returns data block i from the cache, or nil when it is not
// there or the Reader has no cache.
func (r *Reader) cachedBlock(i int) []byte {
	d := &r.blocks[i]
	return r.opts.Cache.get(r.opts.FileNum, d.handle.Offset, &d.cached)
}
