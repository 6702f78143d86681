package sstable

import (
	"github.com/bloomkv/bloomkv/internal/base"
)

// Get returns the newest version of userKey with a sequence number <= seq.
// found is false when the table holds no such version; kind tells a value
// (KindSet) from a tombstone (KindDelete). value is immutable and stays
// valid after the call (it may alias a cached block: never modify it).
//
// The index is searched for the internal key (userKey, seq), so the lookup
// lands on the one data block that can hold the visible version, and that
// block's filter is asked first: "absent" costs no data-block read. Should
// the block end inside userKey's versions, the lookup goes on to the next
// block, asking its filter too. stats (which may be nil) accumulates the
// filter verdicts and block reads.
func (r *Reader) Get(userKey []byte, seq base.SeqNum, stats *LookupStats) (value []byte, kind base.Kind, found bool, err error) {
	if stats == nil {
		stats = new(LookupStats)
	}
	g := getIters.Get()
	defer g.release()
	idx := &g.index
	if err := idx.init(r.index, r.cmp.Compare, r.name, r.footer.index.Offset); err != nil {
		return nil, 0, false, err
	}
	target := base.MakeInternalKey(userKey, seq, base.KindMax)
	i := idx.searchRestarts(target)
	if i < 0 {
		return nil, 0, false, idx.err
	}
	for ; i < r.numBlocks; i++ {
		if !idx.seekRestart(i) {
			return nil, 0, false, idx.err
		}
		if r.filter != nil && !r.filterPolicy.MayContain(r.filter.filter(i), userKey) {
			stats.FilterNegatives++
			return nil, 0, false, nil
		}
		h, _ := decodeHandle(idx.val) // checked by NewReader
		res, err := r.searchBlock(&g.data, h, userKey, seq, stats)
		if err != nil {
			return nil, 0, false, err
		}
		if r.filter != nil {
			if res.held {
				stats.FilterTruePositives++
			} else {
				stats.FilterFalsePositives++
			}
		}
		if res.found {
			return res.value, res.kind, true, nil
		}
		// Only a block that ends inside userKey's versions, under an index
		// key of the same user key, leaves more versions for the next one.
		if !res.exhausted || r.cmp.Compare(idx.ikey.UserKey, userKey) != 0 {
			return nil, 0, false, nil
		}
	}
	return nil, 0, false, nil
}

// getState holds the iterators of one Get, pooled so that lookups do not
// allocate.
type getState struct {
	index, data blockIter
}

var getIters = newPool(func() *getState { return new(getState) })

// release drops the state's references to blocks and pools it.
func (g *getState) release() {
	g.index.data, g.data.data = nil, nil
	g.index.rawKey, g.data.rawKey = nil, nil
	g.index.val, g.data.val = nil, nil
	g.index.ikey, g.data.ikey = base.InternalKey{}, base.InternalKey{}
	getIters.Put(g)
}

// blockSearch is what searchBlock found in one data block.
type blockSearch struct {
	value     []byte
	kind      base.Kind
	found     bool // a version visible at the lookup's seq
	held      bool // the block holds some version of the user key
	exhausted bool // the block ended before a larger user key
}

// searchBlock reads data block h and looks in it for the newest version of
// userKey visible at seq.
func (r *Reader) searchBlock(it *blockIter, h BlockHandle, userKey []byte, seq base.SeqNum, stats *LookupStats) (blockSearch, error) {
	stats.BlockReads++
	data, err := r.dataBlock(h, stats)
	if err != nil {
		return blockSearch{}, err
	}
	if err := it.init(data, r.cmp.Compare, r.name, h.Offset); err != nil {
		return blockSearch{}, err
	}
	var res blockSearch
	ok := it.SeekGE(base.MakeSearchKey(userKey))
	for ; ok && r.cmp.Compare(it.ikey.UserKey, userKey) == 0; ok = it.Next() {
		res.held = true
		if it.ikey.Visible(seq) {
			res.value, res.kind, res.found = it.val, it.ikey.Kind(), true
			return res, nil
		}
	}
	if it.err != nil {
		return blockSearch{}, it.err
	}
	res.exhausted = !ok
	return res, nil
}

// dataBlock returns the contents of data block h, from the cache if it is
// there, else from the file (then cached). stats may be nil.
func (r *Reader) dataBlock(h BlockHandle, stats *LookupStats) ([]byte, error) {
	c := r.opts.Cache
	if c != nil {
		if b := c.get(r.opts.FileNum, h.Offset); b != nil {
			return b, nil
		}
	}
	if stats != nil {
		stats.BlockCacheMisses++
	}
	b, err := r.readBlock(h)
	if err == nil && c != nil {
		c.set(r.opts.FileNum, h.Offset, b)
	}
	return b, err
}
