package sstable

import (
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// AddRangeDel adds a range tombstone to the table's range-deletion block.
// Tombstones must come fragmented (as rangedel.Fragment returns them): in
// order of start key, any two spans equal or disjoint, and the sequence
// numbers of one span descending. A tombstone that breaks the order, or an
// empty one, is rejected and the Writer stays usable. Tombstones and point
// entries may be added in any interleaving; the Writer copies t's keys.
func (w *Writer) AddRangeDel(t RangeTombstone) error {
	switch {
	case w.closed:
		return errWriterClosed
	case w.err != nil:
		return w.err
	case len(t.Start)+len(t.End)+base.TrailerLen > maxEntrySize:
		return fmt.Errorf("sstable: range tombstone of %d bytes exceeds the limit of %d",
			len(t.Start)+len(t.End)+base.TrailerLen, maxEntrySize)
	case w.rangeDelLen+entryRoom(len(t.Start)+base.TrailerLen, len(t.End)) > w.blockLimit:
		return fmt.Errorf("sstable: range tombstone %s: the table's range-deletion block would pass %d bytes; start another table", t, w.blockLimit)
	}
	pair := []RangeTombstone{t}
	if n := len(w.rangeDels); n > 0 {
		pair = []RangeTombstone{w.rangeDels[n-1], t}
	}
	if err := rangedel.CheckFragmented(w.cmp.Compare, pair); err != nil {
		return fmt.Errorf("sstable: %v", err)
	}
	t.Start = append([]byte(nil), t.Start...)
	t.End = append([]byte(nil), t.End...)
	w.rangeDels = append(w.rangeDels, t)
	w.rangeDelLen += entryRoom(len(t.Start)+base.TrailerLen, len(t.End))
	w.recordSeqNum(t.Seq)
	w.props.NumRangeDeletions++
	return nil
}

// writeRangeDels writes the range-deletion block, if the table has
// tombstones, and adds its metaindex entry.
func (w *Writer) writeRangeDels(meta *blockWriter) error {
	if len(w.rangeDels) == 0 {
		return nil
	}
	b := blockWriter{restartInterval: DefaultBlockRestartInterval}
	for _, t := range w.rangeDels {
		w.scratch = t.Key().AppendEncoded(w.scratch[:0])
		b.add(w.scratch, t.End)
	}
	h, err := w.writeBlock(b.finish())
	if err != nil {
		return err
	}
	meta.add([]byte(metaRangeDel), appendHandle(nil, h))
	return nil
}

// readRangeDels loads the range-deletion block named in the metaindex, if
// any, and checks that it is fragmented, that its tombstones lie within
// the properties' sequence numbers, and that their count matches the
// properties: a table whose tombstones went missing would resurrect keys.
func (r *Reader) readRangeDels() error {
	h, found := r.metaHandle(metaRangeDel)
	switch {
	case !found && r.props.NumRangeDeletions > 0:
		return r.corruptf(r.footer.metaindex.Offset, "properties count %d range deletions, the metaindex has no block",
			r.props.NumRangeDeletions)
	case !found:
		return nil
	case r.footer.version < 2:
		return r.corruptf(h.Offset, "format version %d table has a range-deletion block", r.footer.version)
	}
	ts, err := r.decodeRangeDels(h)
	if err != nil {
		return err
	}
	if uint64(len(ts)) != r.props.NumRangeDeletions {
		return r.corruptf(h.Offset, "range-deletion block has %d tombstones, properties say %d",
			len(ts), r.props.NumRangeDeletions)
	}
	r.rangeDels = ts
	return nil
}

// decodeRangeDels reads and decodes the range-deletion block h locates,
// checking that its sequence numbers lie within the properties'. The
// table's global sequence number, if any, replaces theirs.
func (r *Reader) decodeRangeDels(h BlockHandle) ([]RangeTombstone, error) {
	data, err := r.readBlock(h)
	if err != nil {
		return nil, err
	}
	ts, err := decodeRangeDelBlock(data, r.cmp.Compare, r.name, h.Offset)
	if err != nil {
		return nil, err
	}
	for i := range ts {
		if g := r.opts.GlobalSeqNum; g != 0 {
			ts[i].Seq = g
		}
		t := ts[i]
		if t.Seq < r.props.SmallestSeqNum || t.Seq > r.props.LargestSeqNum {
			return nil, r.corruptf(h.Offset, "range tombstone %s outside the table's seqnums %d-%d",
				t, r.props.SmallestSeqNum, r.props.LargestSeqNum)
		}
	}
	return ts, nil
}

// decodeRangeDelBlock decodes the contents of a range-deletion block
// (stored at offset off of file) and checks that its tombstones are
// fragmented under cmp. Damage gives an error wrapping
// base.ErrCorruption.
func decodeRangeDelBlock(data []byte, cmp base.Compare, file string, off uint64) ([]RangeTombstone, error) {
	var it blockIter
	if err := it.init(data, nil, file, off); err != nil {
		return nil, err
	}
	var ts []RangeTombstone
	for ok := it.First(); ok; ok = it.Next() {
		k, valid := base.DecodeInternalKey(it.rawKey)
		if !valid || k.Kind() != base.KindRangeDelete {
			return nil, it.corrupt(it.offset, fmt.Sprintf("bad range tombstone key %q", it.rawKey))
		}
		ts = append(ts, RangeTombstone{
			Start: append([]byte(nil), k.UserKey...),
			End:   append([]byte(nil), it.val...),
			Seq:   k.SeqNum(),
		})
	}
	if it.err != nil {
		return nil, it.err
	}
	if err := rangedel.CheckFragmented(cmp, ts); err != nil {
		return nil, base.CorruptionErrorf("sstable: %s: offset %d: range-deletion block: %v", file, off, err)
	}
	return ts, nil
}

// RangeDels returns the table's range tombstones, fragmented (see
// AddRangeDel). They are loaded once, at NewReader, and kept; the caller
// must not modify them.
func (r *Reader) RangeDels() []RangeTombstone { return r.rangeDels }

// Bounds returns the smallest and largest keys of the table, range
// tombstones included, as the Writer's Metadata reported them: the smaller
// of the first entry and the first tombstone's key, and the larger of the
// last entry and the sentinel of the last tombstone's end. Both are zero
// for a table with neither. They alias the Reader's memory: do not modify
// them.
func (r *Reader) Bounds() (smallest, largest InternalKey) {
	return tableBounds(r.cmp.Compare, &r.props, r.rangeDels)
}

// tableBounds computes a table's bounds (see Reader.Bounds) from its
// properties' entry keys and its range tombstones.
func tableBounds(cmp base.Compare, p *Properties, rangeDels []RangeTombstone) (smallest, largest base.InternalKey) {
	if p.NumEntries > 0 {
		smallest, _ = base.DecodeInternalKey(p.SmallestKey)
		largest, _ = base.DecodeInternalKey(p.LargestKey)
	}
	if len(rangeDels) == 0 {
		return smallest, largest
	}
	s, l := rangedel.Bounds(rangeDels)
	if p.NumEntries == 0 || base.InternalCompare(cmp, s, smallest) < 0 {
		smallest = s
	}
	if p.NumEntries == 0 || base.InternalCompare(cmp, l, largest) > 0 {
		largest = l
	}
	return smallest, largest
}

// rangeDeleted reports whether a range tombstone of the table deletes the
// version of userKey a lookup at seq found (found, with sequence number
// pointSeq) or, when it found none, any version: the newest tombstone
// visible at seq that covers userKey must be newer than the point.
func (r *Reader) rangeDeleted(userKey []byte, seq base.SeqNum, found bool, pointSeq base.SeqNum, stats *LookupStats) bool {
	if len(r.rangeDels) == 0 {
		return false
	}
	stats.RangeDelChecks++
	return rangedel.Deletes(r.cmp.Compare, r.rangeDels, userKey, seq, found, pointSeq)
}
