package kv

import (
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Snapshot is a read-only view of the DB at one point in time: it sees the
// writes committed before NewSnapshot and none after. While it is open,
// compactions keep the versions it sees. Close it when done. A Snapshot is
// safe for concurrent use.
type Snapshot struct {
	db     *DB
	seq    base.SeqNum
	closed atomic.Bool
	// prev and next link the DB's open snapshots, oldest first.
	prev, next *Snapshot
}

// NewSnapshot returns a snapshot of the DB's current state. On a closed DB
// it returns a snapshot whose methods all return ErrClosed.
func (d *DB) NewSnapshot() *Snapshot {
	s := &Snapshot{db: d}
	if d.checkOpen() != nil {
		s.closed.Store(true)
		return s
	}
	d.mu.Lock()
	s.seq = base.SeqNum(d.visibleSeq.Load())
	d.mu.snaps.pushBack(s)
	d.mu.Unlock()
	return s
}

// Get returns the value key had when the snapshot was taken, or
// ErrNotFound. The returned slice is the caller's.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.db.get(key, s)
}

// GetAppend is DB.GetAppend as of the snapshot: it appends the value key
// had when the snapshot was taken to dst, allocating nothing when dst has
// room.
func (s *Snapshot) GetAppend(dst, key []byte) ([]byte, error) {
	if err := s.check(); err != nil {
		return dst, err
	}
	return s.db.lookup(dst, key, s)
}

// NewIter returns an iterator over the snapshot's state.
func (s *Snapshot) NewIter(opts *IterOptions) (*Iterator, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := s.db.checkIterOptions(opts); err != nil {
		return nil, err
	}
	return s.db.newIter(opts, s), nil
}

// Close releases the snapshot. Closing twice, or after the DB, returns
// ErrClosed.
func (s *Snapshot) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	d := s.db
	d.mu.Lock()
	d.mu.snaps.remove(s)
	d.mu.Unlock()
	return d.checkOpen()
}

func (s *Snapshot) check() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.db.checkOpen()
}

// snapshotList is the DB's open snapshots, oldest first, so their sequence
// numbers ascend. Guarded by d.mu.
type snapshotList struct {
	head, tail *Snapshot
	n          int
}

func (l *snapshotList) pushBack(s *Snapshot) {
	s.prev, s.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = s
	} else {
		l.head = s
	}
	l.tail = s
	l.n++
}

func (l *snapshotList) remove(s *Snapshot) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		l.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		l.tail = s.prev
	}
	s.prev, s.next = nil, nil
	l.n--
}

func (l *snapshotList) count() int { return l.n }

// seqNums returns the distinct sequence numbers of the open snapshots,
// ascending, as compaction.RunConfig wants them.
func (l *snapshotList) seqNums() []base.SeqNum {
	var seqs []base.SeqNum
	for s := l.head; s != nil; s = s.next {
		if len(seqs) == 0 || seqs[len(seqs)-1] != s.seq {
			seqs = append(seqs, s.seq)
		}
	}
	return seqs
}
