package sstable

import (
	"errors"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Iter is an iterator over a table's internal keys (see Reader.NewIter).
// A caller may also keep one: its zero value is ready for Reader.InitIter,
// and after Close InitIter may point it at another table (or the same),
// reusing its buffers, so that walking many tables allocates nothing per
// table.
//
// It is a two-level iterator: it walks the data blocks in index order, by
// their handles, which the Reader decoded from the index block when it
// opened the table, and within each block the block's entries; seeks
// find their block with Reader.searchIndex, in memory, so no iterator
// decodes the index block again. It keeps to the user-key bounds
// [lower, upper). Errors are sticky: after one, the iterator stays
// invalid and Error reports it, until InitIter.
//
// After SeekPrefixGE the iterator is in prefix mode until the next absolute
// positioning call: it asks each data block's filter about the prefix
// before reading the block, and ends the iteration at the first "absent".
type Iter struct {
	r            *Reader
	cmp          base.Compare
	lower, upper []byte
	data         bidiBlockIter
	block        int // the data block data is on; -1 or len(r.blocks) past either end
	valid        bool
	err          error
	closed       bool

	prefix   []byte       // prefix mode's prefix; nil outside prefix mode
	filter   *filterBlock // the table's filters as the iterator was set up; nil: none held
	pending  bool         // a filter said "maybe" for the block loaded last: the verdict awaits its keys
	asked    bool         // the seek already asked block's filter (it said "maybe")
	stats    *LookupStats // what prefix seeks cost; &ownStats when the caller wants none
	ownStats LookupStats

	blockLoads int64 // data blocks loaded since InitIter, in any mode (BlockLoads)

	compaction bool      // IterOptions.Compaction: blocks not cached are read into blockBuf
	blockBuf   []byte    // the compaction iterator's block buffer, reused
	ahead      readahead // the bytes read ahead, of a compaction or a scan
}

// NewIter returns an iterator over the table's internal keys, configured
// by opts (nil: the whole table, read through the block cache, with
// nothing counted). Key and Value are valid until the next move; the value
// bytes themselves are immutable, except with opts.Compaction.
//
// Blocks the cache lacks are read from the file one at a time, as a seek
// needs, until the iterator has read three in a row, each next to the one
// before in the same direction: a scan. It then reads 64 KiB of the file
// at a time, ahead of it in its direction, and takes the next blocks from
// those bytes, caching each as before; one system call per block took a
// quarter of a long scan's time.
//
// Beyond the InternalIterator methods, the Iter has SeekPrefixGE, which
// seeks as SeekGE does but lets the data blocks' filters rule out a prefix:
// see Iter.SeekPrefixGE.
func (r *Reader) NewIter(opts *IterOptions) (*Iter, error) {
	it := new(Iter)
	if err := r.InitIter(it, opts); err != nil {
		return nil, err
	}
	return it, nil
}

// InitIter readies it to iterate over the table as NewIter's iterator
// does, with the options opts (nil: the defaults). it must be new (the
// zero Iter) or closed; it keeps its buffers, so that an iterator walking
// table after table allocates nothing per table. InitIter reads nothing:
// the table's index is in memory since NewReader, and the first
// positioning call reads the one data block it needs. So it fails only
// on a closed Reader (see Reader.Close), leaving it as it was; the error
// result also leaves room for a format whose iterators must read to
// start (it would leave it closed).
func (r *Reader) InitIter(it *Iter, opts *IterOptions) error {
	if err := r.checkOpen(); err != nil {
		return err
	}
	var o IterOptions
	if opts != nil {
		o = *opts
	}
	data, buf, ahead := it.data, it.blockBuf, it.ahead
	data.release()
	ahead.reset() // another table's bytes, or this one's from before
	*it = Iter{r: r, cmp: r.cmp.Compare, lower: o.LowerBound, upper: o.UpperBound, stats: o.Stats, data: data,
		filter: r.filter.Load(), ahead: ahead}
	if it.stats == nil {
		it.stats = &it.ownStats
	}
	if o.Compaction {
		it.compaction, it.blockBuf = true, buf
	}
	return nil
}

// fail records err (if it is the first) and invalidates the iterator.
func (it *Iter) fail(err error) bool {
	if it.err == nil {
		it.err = err
	}
	it.valid = false
	return false
}

// loadBlock points the data iterator at block it.block, which must exist.
// In prefix mode, moving forward, it asks the block's filter first: on
// "absent" it ends the iteration and returns false, without an error.
func (it *Iter) loadBlock(forward bool) bool {
	var stats *LookupStats
	if it.prefix != nil && forward {
		if !it.blockMayContainPrefix() {
			it.stats.FilterNegatives++
			it.valid = false
			return false
		}
		it.pending = it.filter != nil
		stats = it.stats
		stats.BlockReads++
	}
	it.blockLoads++
	data, err := it.dataBlock(it.block, stats)
	if err == nil {
		err = it.data.init(data, it.cmp, it.r.name, it.r.blocks[it.block].handle.Offset)
		it.data.globalSeq = it.r.opts.GlobalSeqNum
	}
	if err != nil {
		return it.fail(err)
	}
	return true
}

// blockMayContainPrefix asks the filter of block it.block about the
// iterator's prefix; true when the table has no usable filter.
func (it *Iter) blockMayContainPrefix() bool {
	if it.filter == nil {
		return true
	}
	if it.asked {
		it.asked = false
		return true
	}
	return it.filter.policy.MayContain(it.filter.filter(it.block), it.prefix)
}

// countVerdict settles a pending filter verdict: the block just loaded
// held a key of the prefix where the iterator landed (ok), or did not.
func (it *Iter) countVerdict(ok bool) {
	if !it.pending {
		return
	}
	it.pending = false
	switch {
	case ok && it.r.cmp.HasPrefix(it.data.ikey.UserKey, it.prefix):
		it.stats.FilterTruePositives++
	case it.blockHoldsPrefix():
		it.stats.PrefixMatches++
	default:
		it.stats.FilterFalsePositives++
	}
}

// blockHoldsPrefix reports whether the block loaded last holds a key of
// the prefix (below the seek key, where the iterator did not land),
// searching it with an iterator of its own so that it.data stays put.
func (it *Iter) blockHoldsPrefix() bool {
	if it.r.cmp.Split == nil || it.data.err != nil {
		return false
	}
	b := blockIters.Get().(*blockIter)
	defer putBlockIter(b)
	if b.init(it.data.data, it.cmp, it.r.name, it.r.blocks[it.block].handle.Offset) != nil {
		return false
	}
	return it.r.blockHoldsPrefix(b, it.prefix)
}

// settle checks the data iterator's last move: on an error it fails, past
// the block it moves to the neighbouring block (forward or back), and it
// applies the bound on that side.
func (it *Iter) settle(ok, forward bool) bool {
	it.countVerdict(ok)
	for !ok {
		if it.data.err != nil {
			return it.fail(it.data.err)
		}
		if forward {
			it.block++
		} else {
			it.block--
		}
		if it.block < 0 || it.block >= len(it.r.blocks) {
			it.valid = false
			return false
		}
		if !it.loadBlock(forward) {
			return false
		}
		if forward {
			ok = it.data.First()
		} else {
			ok = it.data.Last()
		}
		it.countVerdict(ok)
	}
	k := it.data.ikey.UserKey
	if forward && it.upper != nil && it.cmp(k, it.upper) >= 0 ||
		!forward && it.lower != nil && it.cmp(k, it.lower) < 0 {
		it.valid = false
		return false
	}
	it.valid = true
	return true
}

// usable reports whether the iterator may move, leaving prefix mode; it
// fails after Close.
func (it *Iter) usable() bool {
	if it.closed {
		return it.fail(errors.New("sstable: iterator used after Close"))
	}
	it.valid, it.prefix, it.pending, it.asked = false, nil, false, false
	return it.err == nil
}

// SeekGE moves to the first entry whose user key is >= key (and >= lower).
func (it *Iter) SeekGE(key []byte) bool {
	if !it.usable() {
		return false
	}
	return it.seekGE(key)
}

// seekGE is SeekGE once the iterator is usable; in prefix mode it asks the
// landing block's filter first.
func (it *Iter) seekGE(key []byte) bool {
	if it.lower != nil && it.cmp(key, it.lower) < 0 {
		key = it.lower
	}
	target := base.MakeSearchKey(key)
	i, err := it.r.searchIndex(target)
	switch {
	case err != nil:
		return it.fail(err)
	case i == len(it.r.blocks):
		return false
	case it.prefix != nil && it.filter != nil:
		// Prefix mode on a table with filters: the block's filter is
		// asked before the block is read.
		if !it.filter.policy.MayContain(it.filter.filter(i), it.prefix) {
			// The block holds no key of the prefix. Unless the writer cut
			// the separators below each new prefix, the separator above
			// it may sort at or after key while the prefix's keys begin
			// in the next block; they cannot begin later, since the keys
			// of a prefix are contiguous and the next block's sort after
			// key.
			if it.r.cutAtPrefixes || i+1 == len(it.r.blocks) ||
				!it.filter.policy.MayContain(it.filter.filter(i+1), it.prefix) {
				it.stats.FilterNegatives++
				return false
			}
			i++
		}
		it.asked = true
	}
	it.block = i
	if !it.loadBlock(true) {
		return false
	}
	return it.settle(it.data.SeekGE(target), true)
}

// SeekPrefixGE moves to the first entry whose user key is >= key (and >=
// lower), unless the filter of the block that would hold it rules prefix
// (the comparer's Prefix of key) out: then the table holds no key of
// prefix at or after key, since the writer cuts separators below a new
// prefix (see Writer.addIndexEntry), and the iterator reports no entry
// without reading a data block. (A table written under another Split,
// or none, whose filters were built under this one by BuildFilter, is
// not cut so: the next block's filter must rule prefix out too.) The
// iterator is then in prefix mode (see Iter): Next stops at the first
// block whose filter rules the prefix out, and Prev must not be called
// before another absolute positioning call.
// It may land on entries of another prefix: the caller checks. What the
// seeks cost is added to IterOptions.Stats.
func (it *Iter) SeekPrefixGE(prefix, key []byte) bool {
	if !it.usable() {
		return false
	}
	it.prefix = prefix
	it.r.countConsidered(it.stats)
	return it.seekGE(key)
}

// SeekLT moves to the last entry whose user key is < key (and < upper).
func (it *Iter) SeekLT(key []byte) bool {
	if !it.usable() {
		return false
	}
	if it.upper != nil && it.cmp(key, it.upper) > 0 {
		key = it.upper
	}
	target := base.MakeSearchKey(key)
	i, err := it.r.searchIndex(target)
	switch {
	case err != nil:
		return it.fail(err)
	case i == len(it.r.blocks):
		// Every block lies below target: the answer is the last entry.
		return it.lastEntry()
	}
	it.block = i
	if !it.loadBlock(false) {
		return false
	}
	return it.settle(it.data.SeekLT(target), false)
}

// First moves to the first entry (with user key >= lower).
func (it *Iter) First() bool {
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	if !it.usable() || len(it.r.blocks) == 0 {
		return false
	}
	it.block = 0
	if !it.loadBlock(true) {
		return false
	}
	return it.settle(it.data.First(), true)
}

// Last moves to the last entry (with user key < upper).
func (it *Iter) Last() bool {
	if it.upper != nil {
		return it.SeekLT(it.upper)
	}
	if !it.usable() {
		return false
	}
	return it.lastEntry()
}

// lastEntry moves to the table's last entry, bounded below by lower.
func (it *Iter) lastEntry() bool {
	if len(it.r.blocks) == 0 {
		return false
	}
	it.block = len(it.r.blocks) - 1
	if !it.loadBlock(false) {
		return false
	}
	return it.settle(it.data.Last(), false)
}

// Next moves to the following entry.
func (it *Iter) Next() bool {
	if !it.valid {
		return false
	}
	return it.settle(it.data.Next(), true)
}

// Prev moves to the preceding entry.
func (it *Iter) Prev() bool {
	if !it.valid {
		return false
	}
	return it.settle(it.data.Prev(), false)
}

// Valid reports whether the iterator is at an entry.
func (it *Iter) Valid() bool { return it.valid }

// Key returns the current internal key.
func (it *Iter) Key() InternalKey { return it.data.ikey }

// Value returns the current value.
func (it *Iter) Value() []byte { return it.data.val }

// Error returns the first error met.
func (it *Iter) Error() error { return it.err }

// BlockLoads returns the number of data blocks the iterator has loaded
// since it was initialized, in any mode, from the block cache or the file.
// Close keeps it; the next InitIter sets it to zero.
func (it *Iter) BlockLoads() int64 { return it.blockLoads }

// Close releases the blocks the iterator holds and returns Error. The
// iterator keeps its buffers for a later InitIter, but for its readahead,
// which goes back to a pool: most compaction iterators serve one table,
// and most others never read ahead.
func (it *Iter) Close() error {
	it.closed, it.valid = true, false
	it.data.release()
	it.ahead.release()
	it.r, it.stats = nil, nil
	return it.err
}
