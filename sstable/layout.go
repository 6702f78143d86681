package sstable

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Layout describes where a table keeps what, for tools such as
// `bloomkv sstable dump`. It is read-only: slices in it alias the Reader's
// memory and must not be modified.
type Layout struct {
	// Data lists the data blocks in order.
	Data []DataBlockInfo
	// Filter locates the filter block; zero when the table has none.
	Filter BlockHandle
	// FilterPolicyName names the policy of the filter block, if any.
	FilterPolicyName string
	// RangeDel locates the range-deletion block; zero when the table has
	// no range tombstones.
	RangeDel BlockHandle
	// Properties, Metaindex and Index locate those blocks.
	Properties, Metaindex, Index BlockHandle
	// MetaEntries are the metaindex's entries.
	MetaEntries []MetaEntry
	// Footer is the decoded footer.
	Footer FooterInfo
}

// DataBlockInfo describes one data block.
type DataBlockInfo struct {
	Handle BlockHandle
	// Separator is the block's index key: >= every key of the block and
	// < every key of the next.
	Separator InternalKey
	// Filter is the block's filter, nil when the table has none.
	Filter []byte
}

// FooterInfo is the footer as stored.
type FooterInfo struct {
	// Offset is where the footer starts: the table's size minus FooterLen.
	Offset           uint64
	Metaindex, Index BlockHandle
	Version          uint32
	Magic            uint64
}

// Layout returns the table's layout. Its filters are the table's own, as
// stored: it reads the filter block where the reader does not hold it
// (the reader does not know the policy, dropped the filter, or holds one
// that BuildFilter built).
func (r *Reader) Layout() (*Layout, error) {
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	l := &Layout{
		Metaindex:        r.footer.metaindex,
		Index:            r.footer.index,
		Filter:           r.filterHandle,
		FilterPolicyName: r.props.FilterPolicyName,
		MetaEntries:      slices.Clone(r.metaindex),
		Footer: FooterInfo{Offset: r.dataEnd, Metaindex: r.footer.metaindex, Index: r.footer.index,
			Version: r.footer.version, Magic: TableMagic},
	}
	l.Properties, _ = r.metaHandle(metaProperties)
	l.RangeDel, _ = r.metaHandle(metaRangeDel)
	fb, err := r.filterBlock()
	if err != nil {
		return nil, err
	}
	var it blockIter
	if err := r.initIndexIter(&it); err != nil {
		return nil, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		h, _ := decodeHandle(it.val)
		d := DataBlockInfo{Handle: h, Separator: it.ikey.Clone()}
		if fb != nil {
			d.Filter = fb.filter(len(l.Data))
		}
		l.Data = append(l.Data, d)
	}
	return l, it.err
}

// filterBlock returns the table's own filter block, reading it unless the
// reader holds it (a filter built by BuildFilter is not the table's);
// nil when the table has none.
func (r *Reader) filterBlock() (*filterBlock, error) {
	if r.filterHandle == (BlockHandle{}) {
		return nil, nil
	}
	r.filterMu.Lock()
	fb, built := r.filter.Load(), r.filterBuilt
	r.filterMu.Unlock()
	if fb != nil && !built {
		return fb, nil
	}
	return r.decodeFilter()
}

// Check reads every block from the file, bypassing the cache, and
// verifies checksums, decoding, key order, the range tombstones' fragmented
// order, the index separators, the
// blocks' tiling of the file, the properties' counts and, when the reader
// knows the filter policy, that every filter admits its block's keys.
func (r *Reader) Check() error {
	l, err := r.Layout()
	if err != nil {
		return err
	}
	if err := r.checkTiling(l); err != nil {
		return err
	}
	for _, h := range []BlockHandle{l.Metaindex, l.Properties, l.Index} {
		if _, err := r.readBlock(h); err != nil {
			return err
		}
	}
	if l.RangeDel != (BlockHandle{}) {
		if _, err := r.decodeRangeDels(l.RangeDel); err != nil {
			return err
		}
	}
	var c tableCheck
	for i := range l.Data {
		if err := r.checkDataBlock(&c, l.Data[i], i); err != nil {
			return err
		}
	}
	p := &r.props
	if c.entries != p.NumEntries || c.deletions != p.NumDeletions {
		return r.corruptf(0, "%d entries and %d deletions, properties say %d and %d",
			c.entries, c.deletions, p.NumEntries, p.NumDeletions)
	}
	if !bytes.Equal(c.first, p.SmallestKey) || !bytes.Equal(c.last, p.LargestKey) {
		return r.corruptf(0, "key range differs from the properties")
	}
	return nil
}

// checkTiling verifies that the blocks and the footer cover the file
// exactly, without gaps or overlaps.
func (r *Reader) checkTiling(l *Layout) error {
	hs := []BlockHandle{l.Metaindex, l.Properties, l.Index}
	for _, h := range []BlockHandle{l.Filter, l.RangeDel} {
		if h != (BlockHandle{}) {
			hs = append(hs, h)
		}
	}
	for _, d := range l.Data {
		hs = append(hs, d.Handle)
	}
	slices.SortFunc(hs, func(a, b BlockHandle) int { return cmp.Compare(a.Offset, b.Offset) })
	var next uint64
	for _, h := range hs {
		if h.Offset != next {
			return r.corruptf(h.Offset, "block %s does not start where the previous one ends (%d)", h, next)
		}
		next = h.Offset + h.Length + blockTrailerLen
	}
	if next != r.dataEnd {
		return r.corruptf(next, "blocks end at %d, the footer starts at %d", next, r.dataEnd)
	}
	return nil
}

// tableCheck carries what Check tracks across data blocks.
type tableCheck struct {
	entries, deletions uint64
	first, last        []byte // encoded internal keys
	prevSep            base.InternalKey
	keys               [][]byte // the current block's distinct user keys
}

// checkDataBlock verifies one data block against its index entry and
// filter.
func (r *Reader) checkDataBlock(c *tableCheck, d DataBlockInfo, i int) error {
	var it blockIter
	if err := r.readBlockIter(&it, d.Handle, r.cmp.Compare); err != nil {
		return err
	}
	it.globalSeq = r.opts.GlobalSeqNum
	c.keys = c.keys[:0]
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		k := it.ikey
		switch {
		case c.entries > 0 && base.InternalCompare(r.cmp.Compare, mustDecode(c.last), k) >= 0:
			return it.corrupt(it.offset, fmt.Sprintf("key %s out of order", k))
		case base.InternalCompare(r.cmp.Compare, k, d.Separator) > 0:
			return it.corrupt(it.offset, fmt.Sprintf("key %s above the index separator %s", k, d.Separator))
		case i > 0 && base.InternalCompare(r.cmp.Compare, k, c.prevSep) <= 0:
			return it.corrupt(it.offset, fmt.Sprintf("key %s not above the previous separator", k))
		}
		if n == 0 || r.cmp.Compare(c.keys[len(c.keys)-1], k.UserKey) != 0 {
			c.keys = append(c.keys, slices.Clone(k.UserKey))
		}
		if c.entries == 0 {
			c.first = k.AppendEncoded(nil)
		}
		c.last = k.AppendEncoded(c.last[:0])
		c.entries++
		if k.Kind() == base.KindDelete {
			c.deletions++
		}
		n++
	}
	if it.err != nil {
		return it.err
	}
	if n == 0 {
		return r.corruptf(d.Handle.Offset, "empty data block")
	}
	c.prevSep = d.Separator
	if r.filterPolicy != nil {
		return r.checkFilterHolds(i, d, c.keys)
	}
	return nil
}

// checkFilterHolds checks that block i's filter holds what the writer
// added for each of its user keys: the key's prefix under the comparer's
// Split, the whole key without one.
func (r *Reader) checkFilterHolds(i int, d DataBlockInfo, keys [][]byte) error {
	for _, k := range keys {
		p, err := r.cmp.Prefix(k)
		if err != nil {
			return fmt.Errorf("sstable: %s: %w", r.name, err)
		}
		if !r.filterPolicy.MayContain(d.Filter, p) {
			return r.corruptf(d.Handle.Offset, "filter of block %d rejects its key %q (filtered as %q)", i, k, p)
		}
	}
	return nil
}

// mustDecode decodes an internal key already checked by a block iterator.
func mustDecode(b []byte) base.InternalKey {
	k, _ := base.DecodeInternalKey(b)
	return k
}
