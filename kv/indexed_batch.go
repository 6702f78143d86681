package kv

import (
	"errors"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/memtable"
)

// An indexed batch keeps, next to its encoded records, an index of them: a
// memtable (the skiplist the DB's writes go to) holding a copy of each
// write as it is added. Write i of the batch is numbered batchSeqFlag|i
// there, above every sequence number the DB assigns, so a read merging
// the index over the DB sees the batch's writes shadow the DB's, and each
// later write of the batch shadow the earlier ones, as Pebble's
// InternalKeySeqNumBatch does. The encoded records, and so Apply, are
// those of a plain batch.
const batchSeqFlag base.SeqNum = 1 << 55

// ErrNotIndexed is returned by the reads of a batch that was not made by
// NewIndexedBatch.
var ErrNotIndexed = errors.New("kv: batch is not indexed")

// NewIndexedBatch returns an empty batch that can also be read: its Get and
// NewIter see the batch's own writes, range deletions included, merged
// over the DB's state at the time of the read, as Pebble's indexed batch
// does. It is applied with Apply like any batch. Indexing costs each write
// a skiplist insert and a second copy of its key and value.
func (d *DB) NewIndexedBatch() *Batch {
	b := d.NewBatch()
	b.db, b.index = d, memtable.New(d.cmp)
	return b
}

// NewIndexedBatch returns an indexed batch (see DB.NewIndexedBatch) whose
// reads see its writes over the snapshot's state instead of the DB's
// current one: a read-modify-write against one point in time. Applied,
// its writes go to the DB as any batch's do. Its reads fail with
// ErrClosed once the snapshot is closed.
func (s *Snapshot) NewIndexedBatch() *Batch {
	b := s.db.NewIndexedBatch()
	b.snap = s
	return b
}

// Indexed reports whether the batch can be read (NewIndexedBatch).
func (b *Batch) Indexed() bool { return b.index != nil }

// indexWrite adds a write, numbered after the batch's count of writes so
// far, to the index of an indexed batch.
func (b *Batch) indexWrite(kind base.Kind, key, value []byte) error {
	if b.index == nil {
		return nil
	}
	return b.index.Add(base.MakeInternalKey(key, batchSeqFlag|base.SeqNum(b.count), kind), value)
}

// resetIndex empties the index of an indexed batch.
func (b *Batch) resetIndex() {
	if b.index != nil {
		b.index = memtable.New(b.db.cmp)
	}
}

// visibleLimit returns the batch-numbered sequence number below which the
// index's entries are the batch's writes so far.
func (b *Batch) visibleLimit() base.SeqNum { return batchSeqFlag + base.SeqNum(b.count) }

// checkRead checks that the batch is indexed and what it reads over is
// open.
func (b *Batch) checkRead() error {
	if b.index == nil {
		return ErrNotIndexed
	}
	if b.snap != nil {
		return b.snap.check()
	}
	return b.db.checkOpen()
}

// Get returns the value of key as the batch's writes, over the DB (or the
// snapshot the batch was made from), show it: the batch's newest write
// of key if it has one, ErrNotFound when that is a deletion or a range
// deletion covers key in the batch, else the DB's value. The returned
// slice is the caller's. It fails with ErrNotIndexed on a batch that is
// not indexed. It counts one lookup in the DB's Metrics (Lookups.Gets),
// whether the batch or the DB answers it.
func (b *Batch) Get(key []byte) ([]byte, error) {
	if err := b.checkRead(); err != nil {
		return nil, err
	}
	if key == nil {
		key = []byte{}
	}
	value, kind, found := b.index.Get(key, b.visibleLimit()-1)
	if found {
		b.db.countGet() // a lookup served, as one the memtable answers
		if kind != base.KindSet {
			return nil, ErrNotFound
		}
		return append(make([]byte, 0, len(value)), value...), nil
	}
	return b.db.get(key, b.snap)
}

// NewIter returns an iterator over the batch's writes merged over the DB's
// current state (or the snapshot the batch was made from), restricted to
// opts' bounds. It sees the writes the batch held when NewIter was called
// and none added later, as Pebble's does; a new iterator (or Clone of
// this one, which keeps its view) is needed to see them. It fails with
// ErrNotIndexed on a batch that is not indexed.
func (b *Batch) NewIter(opts *IterOptions) (*Iterator, error) {
	if err := b.checkRead(); err != nil {
		return nil, err
	}
	if err := b.db.checkIterOptions(opts); err != nil {
		return nil, err
	}
	s := iterStatePool.Get().(*iterState)
	s.batch, s.batchLimit, s.src = b.index, b.visibleLimit(), b
	s.init(b.db, opts, b.snap)
	return &Iterator{s: s}, nil
}

// addBatch adds the iterator over the batch's index, which must be the
// first input (the newest) and the first source of range tombstones.
func (s *iterState) addBatch() {
	s.batch.InitIter(&s.batchIter, s.lower, s.upper)
	s.inputs = append(s.inputs, &s.batchIter)
	if frags := s.batch.RangeDels(); len(frags) > 0 {
		s.rangeDels = append(s.rangeDels, frags)
		s.batchDels = true
	}
}
