package kv

import "github.com/bloomkv/bloomkv/internal/base"

// Refresh moves the iterator to the newest state its source offers, as
// RocksDB's Iterator::Refresh does: an iterator from DB.NewIter then sees
// every write committed before Refresh, as a NewIter at that moment
// would. The memtables and tables of that state are taken, and those of
// the old view released (a long-lived iterator refreshed now and then
// pins no obsolete tables). The iterator keeps its options and bounds,
// and is left unpositioned: Valid is false until the next positioning
// call, as after SetBounds. It leaves prefix mode.
//
// What the newest state is depends on what the iterator reads:
//   - over the DB (DB.NewIter, or a clone of such an iterator): the DB's
//     current state;
//   - over a Snapshot: the snapshot's state, which never changes: the
//     iterator keeps its view (RocksDB, by contrast, refuses to refresh
//     an iterator with a snapshot). Refresh then only releases the tables
//     of the old read state. It fails with ErrClosed once the snapshot is
//     closed;
//   - over an indexed batch (Batch.NewIter): the batch's writes made so
//     far, those added since NewIter included, over the DB's current state
//     (or the batch's snapshot's). It fails with ErrNotIndexed once the
//     batch was closed, which drops its index.
//
// Clone, by contrast, keeps the view: a clone sees what its iterator
// sees. To read the DB as of now, Refresh the clone.
//
// Refresh starts afresh: an error that stopped the iterator is cleared,
// as a new iterator would not have it; Refresh returns the error that
// stops the refreshed one, if any (gathering the range deletions of a new
// state can fail). It keeps the iterator's memory, so a loop of Refresh,
// SetBounds and a seek allocates nothing while the DB's state stays the
// same; a new state costs its first reader the gathering of its tables'
// range deletions, as it costs a NewIter. While no flush, compaction or
// memtable switch has changed the DB's memtables and tables, Refresh of an
// iterator over the DB or a snapshot keeps the tables it has open and
// only takes the newest sequence number: a read loop of Refresh and a
// seek costs no more than the seek. Stats keep counting across it.
// On a closed iterator, or when what it reads is closed, it fails with
// ErrClosed and changes nothing.
func (i *Iterator) Refresh() error {
	if i.s == nil {
		return ErrClosed
	}
	return i.s.refresh()
}

// refresh is Iterator.Refresh.
func (s *iterState) refresh() error {
	snap := s.snap
	if b := s.src; b != nil {
		if err := b.checkRead(); err != nil {
			return err
		}
		snap = b.snap
	} else if snap != nil {
		if err := snap.check(); err != nil {
			return err
		}
	} else if err := s.db.checkOpen(); err != nil {
		return err
	}
	rs, seq := s.db.loadReadView(snap)
	if rs == s.rs && s.src == nil && s.err == nil && s.merging.Error() == nil {
		s.keepInputs(seq)
		return s.err
	}
	s.teardown()
	s.err = nil // an error closing the old inputs goes with them
	old := s.rs
	s.rs, s.snap, s.seq = rs, snap, seq
	old.unref()
	if b := s.src; b != nil {
		s.batch, s.batchLimit = b.index, b.visibleLimit()
	}
	s.build()
	return s.err
}

// keepInputs is refresh when the DB's read state is the one s holds (its
// reference taken again), seq the sequence number loaded with it: the
// same memtables and tables, so the inputs stand, tables open and all,
// and a read loop of Refresh and a seek neither closes nor reopens
// anything. Writes since may have raised the sequence number and added
// range tombstones to the memtable, which are gathered again (each
// memtable keeps its own fragmented); the position goes. An iterator over
// an indexed batch, or one an error stopped, is built afresh instead.
func (s *iterState) keepInputs(seq base.SeqNum) {
	s.rs.unref() // the reference refresh took; s holds its own
	s.seq = seq
	s.unposition()
	clear(s.rangeDels)
	s.rangeDels = s.rangeDels[:0]
	s.addDBRangeDels(s.rs)
}
