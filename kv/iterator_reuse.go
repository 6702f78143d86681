package kv

import "github.com/bloomkv/bloomkv/internal/base"

// IteratorStats is what one Iterator's reads of tables cost, as
// Iterator.Stats reports it. The reads of memtables and of an indexed
// batch cost no table and are not counted.
type IteratorStats struct {
	// TablesConsidered counts the tables the iterator's positioning
	// calls considered, as LookupMetrics.TablesConsidered counts those of
	// lookups: a seek, First or Last counts, in each level (each L0
	// table on its own), the table it positions, the first whose key
	// range reaches the key (a prefix seek: those that may hold the
	// prefix); a move that goes on to the next table counts that one.
	// Moves within a table count nothing, and a table is counted again by
	// each call that positions it, whether or not it was open already.
	TablesConsidered int64
	// FilterNegatives counts the data-block filters that answered "absent"
	// to a prefix seek (SeekPrefixGE, or SeekGE with
	// IterOptions.PrefixOnly): data-block reads saved. Other moves do not
	// ask the filters.
	FilterNegatives int64
	// BlockReads counts the data blocks the iterator loaded, from the
	// block cache or the file, in any mode.
	BlockReads int64
}

// Stats returns what the iterator's reads have cost since NewIter (or
// Clone), SetBounds and Refresh included. On a closed iterator it
// returns zeros.
func (i *Iterator) Stats() IteratorStats {
	if i.s == nil {
		return IteratorStats{}
	}
	st := i.s.counts
	for _, l := range i.s.levels[:i.s.nLevels] {
		if l.loaded {
			st.BlockReads += l.table.BlockLoads()
		}
	}
	return st
}

// SetBounds changes the iterator's bounds to [lower, upper) (nil: that
// side unbounded), as new IterOptions bounds would, and leaves it
// unpositioned: Valid is false until the next positioning call. The
// iterator keeps its point-in-time view (the DB's state at NewIter, or
// its snapshot's or batch's), so a scan after SetBounds shows what a
// fresh iterator at that moment would have, and costs no new NewIter;
// Refresh moves it to the DB's current state. It leaves prefix mode.
//
// SetBounds copies the bounds: the caller may reuse them at once. It
// keeps the iterator's memory, so a loop of SetBounds and a scan with
// bounds no longer than before allocates nothing. An error that stopped
// the iterator stays. On a closed iterator it does nothing.
func (i *Iterator) SetBounds(lower, upper []byte) {
	if i.s != nil {
		i.s.setBounds(lower, upper)
	}
}

// setBounds is Iterator.SetBounds: it closes the inputs and builds them
// again, within the new bounds, from the same read state.
func (s *iterState) setBounds(lower, upper []byte) {
	s.teardown()
	s.lower, s.lowerBuf = keepBound(s.lowerBuf, lower)
	s.upper, s.upperBuf = keepBound(s.upperBuf, upper)
	s.build()
}

// teardown closes the inputs and forgets the position, keeping the
// memory and the read state, for build to make the inputs again: what
// SetBounds and Refresh share. An error closing the inputs stops the
// iterator, unless an error already has.
func (s *iterState) teardown() {
	if err := s.merging.Close(); err != nil && s.err == nil {
		s.err = err
	}
	for _, l := range s.levels[:s.nLevels] {
		l.harvest()
	}
	clear(s.inputs)
	clear(s.rangeDels)
	s.inputs, s.rangeDels, s.nLevels, s.batchDels = s.inputs[:0], s.rangeDels[:0], 0, false
	s.unposition()
}

// unposition forgets the position and leaves prefix mode: Valid is false
// until the next positioning call, and Next and Prev find nothing.
func (s *iterState) unposition() {
	s.valid, s.key, s.value, s.prefix, s.dir = false, nil, nil, nil, 0
}

// Clone returns a new iterator over the same point-in-time view as i,
// with the same bounds and options, unpositioned. The two are
// independent: each has its own position and bounds, and each must be
// closed. A clone of an iterator over an indexed batch sees the batch's
// writes that i sees, and no later ones. A clone costs what a NewIter
// does (its state comes from the same pool), but sees i's state, where a
// NewIter would see the writes made since (a Refresh of the clone moves
// it to them). It fails with ErrClosed on a closed iterator or DB. An
// iterator over a Snapshot closed since keeps the view it holds, and so
// does its clone; a Refresh of either then fails with ErrClosed.
func (i *Iterator) Clone() (*Iterator, error) {
	if i.s == nil {
		return nil, ErrClosed
	}
	if err := i.s.db.checkOpen(); err != nil {
		return nil, err
	}
	c := iterStatePool.Get().(*iterState)
	c.cloneFrom(i.s)
	return &Iterator{s: c}, nil
}

// cloneFrom readies c, fresh from the pool, as an iterator over s's read
// state, sequence number and batch, with s's bounds and options.
func (c *iterState) cloneFrom(s *iterState) {
	c.db, c.cmp, c.bytewise = s.db, s.cmp, s.bytewise
	c.db.openIters.Add(1) // counted as init counts a NewIter's
	c.lower, c.lowerBuf = keepBound(c.lowerBuf, s.lower)
	c.upper, c.upperBuf = keepBound(c.upperBuf, s.upper)
	c.prefixOnly = s.prefixOnly
	s.rs.refs.Add(1) // s holds one: rs cannot be released meanwhile
	c.rs, c.seq = s.rs, s.seq
	c.batch, c.batchLimit = s.batch, s.batchLimit
	c.snap, c.src = s.snap, s.src
	c.build()
}

// visible reports whether the iterator sees entry k: a write to the DB at
// or below its sequence number, or a write of its indexed batch made
// before it was created.
func (s *iterState) visible(k base.InternalKey) bool {
	seq := k.SeqNum()
	return seq <= s.seq || seq < s.batchLimit && seq >= batchSeqFlag
}
