package kv

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/memtable"
)

// A batch is encoded as a 12-byte header and a sequence of records; the same
// bytes are the payload of one WAL record (see doc.go for the drawing).
//
//	header:  seqnum (8 B LE) | count (4 B LE)
//	record:  kind (1 B) | key len (uvarint) | key | value len (uvarint) | value
//
// The seqnum is that of the first record; record i is numbered seqnum+i. It
// stays zero until the batch is committed. A DEL record carries an empty
// value; a RANGEDEL record's key is the range's start and its value the
// end.
const batchHeaderLen = 12

// Batch is a set of writes applied atomically by [DB.Apply]: readers see all
// of them or none, and after a crash recovery restores all of them or none.
//
// Set and Delete copy their arguments, so the caller may reuse them at once.
// A write over the limits ([MaxKeySize], [MaxValueSize], [MaxBatchSize]) is
// refused and also spoils the batch: Apply then returns the same error
// rather than commit the rest. A Batch is not safe for concurrent use, and
// must not be modified while Apply is running.
type Batch struct {
	data  []byte
	count uint32
	err   error

	// index, for an indexed batch (NewIndexedBatch), holds a copy of
	// each write, for reads over db, or over snap when not nil.
	index *memtable.MemTable
	db    *DB
	snap  *Snapshot
}

// NewBatch returns an empty batch. The batch is not tied to the DB: it may be
// applied to any DB. Its buffer may come from batches closed before
// (Close): a program that builds many batches closes each once applied.
func (d *DB) NewBatch() *Batch {
	b := &Batch{}
	if p := batchBufs.Get(); p != nil {
		b.data = *p.(*[]byte)
	}
	return b
}

// batchBufs holds the buffers of closed batches, each as a *[]byte of
// length 0.
var batchBufs sync.Pool

// maxPooledBatchBuf bounds the buffers Close keeps: one huge batch does
// not pin its memory for the batches after it.
const maxPooledBatchBuf = 4 << 20

// Close releases the batch's buffer for later batches (NewBatch) and empties
// the batch, as Reset does; the batch may then be used again, as a new one
// (a plain one: an indexed batch loses its index). It must not be called
// while Apply is running, and the batch's bytes must not be used after it.
func (b *Batch) Close() {
	if c := cap(b.data); c > 0 && c <= maxPooledBatchBuf {
		buf := b.data[:0]
		batchBufs.Put(&buf)
	}
	*b = Batch{}
}

// Set adds a write of value under key.
func (b *Batch) Set(key, value []byte) error {
	return b.add(base.KindSet, key, value)
}

// Delete adds a deletion of key.
func (b *Batch) Delete(key []byte) error {
	return b.add(base.KindDelete, key, nil)
}

// DeleteRange adds a deletion of every key k with start <= k < end under
// the DB's comparer. An empty range (start >= end) deletes nothing, as in
// Pebble; it still takes its place and sequence number in the batch. Both
// keys are limited to MaxKeySize.
func (b *Batch) DeleteRange(start, end []byte) error {
	if b.err != nil {
		return b.err
	}
	if len(end) > MaxKeySize {
		b.err = fmt.Errorf("%w: range end of %d bytes", ErrKeyTooLarge, len(end))
		return b.err
	}
	return b.add(base.KindRangeDelete, start, end)
}

func (b *Batch) add(kind base.Kind, key, value []byte) error {
	if b.err != nil {
		return b.err
	}
	if err := checkLimits(key, value); err != nil {
		b.err = err
		return err
	}
	if len(b.data) == 0 {
		// A reset batch keeps its buffer: reused, it allocates nothing.
		b.data = slices.Grow(b.data, batchHeaderLen+len(key)+len(value)+16)[:batchHeaderLen]
		clear(b.data)
	}
	need := 1 + uvarintLen(len(key)) + len(key) + uvarintLen(len(value)) + len(value)
	if len(b.data)+need > MaxBatchSize {
		b.err = ErrBatchTooLarge
		return b.err
	}
	if cap(b.data)-len(b.data) < need {
		// Doubling (up to MaxBatchSize), where append grows big slices
		// by a quarter: a batch built up write by write copies its bytes
		// about twice, not four times.
		b.data = slices.Grow(b.data, max(need, min(len(b.data), MaxBatchSize-len(b.data))))
	}
	if err := b.indexWrite(kind, key, value); err != nil {
		b.err = err
		return err
	}
	b.data = append(b.data, byte(kind))
	b.data = binary.AppendUvarint(b.data, uint64(len(key)))
	b.data = append(b.data, key...)
	b.data = binary.AppendUvarint(b.data, uint64(len(value)))
	b.data = append(b.data, value...)
	b.count++
	binary.LittleEndian.PutUint32(b.data[8:12], b.count)
	return nil
}

// uvarintLen returns the bytes of n's uvarint encoding.
func uvarintLen(n int) int { return (bits.Len64(uint64(n)|1) + 6) / 7 }

func checkLimits(key, value []byte) error {
	if len(key) > MaxKeySize {
		return fmt.Errorf("%w: %d bytes", ErrKeyTooLarge, len(key))
	}
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: %d bytes", ErrValueTooLarge, len(value))
	}
	return nil
}

// Count returns the number of writes in the batch.
func (b *Batch) Count() int { return int(b.count) }

// Len returns the size of the encoded batch in bytes.
func (b *Batch) Len() int { return max(len(b.data), batchHeaderLen) }

// Empty reports whether the batch holds no writes.
func (b *Batch) Empty() bool { return b.count == 0 }

// Reset empties the batch, and clears a spoiling error, so it can be reused.
func (b *Batch) Reset() {
	b.data = b.data[:0]
	b.count = 0
	b.err = nil
	b.resetIndex()
}

// setSeqNum stamps the sequence number of the batch's first record.
func (b *Batch) setSeqNum(seq base.SeqNum) {
	binary.LittleEndian.PutUint64(b.data[:8], uint64(seq))
}

// batchRecord is one decoded write. Key and Value alias the batch bytes.
type batchRecord struct {
	Kind       base.Kind
	Key, Value []byte
}

// batchReader decodes an encoded batch, as read back from the WAL. It checks
// every length against the bytes present and the record count against the
// header, so damaged bytes yield an error, never a panic.
type batchReader struct {
	data  []byte
	seq   base.SeqNum
	count uint32
	index uint32
	off   int
}

// newBatchReader checks the header of data and returns a reader over its
// records. The reader is a value, so decoding a batch on the write path
// allocates nothing.
func newBatchReader(data []byte) (batchReader, error) {
	if len(data) < batchHeaderLen {
		return batchReader{}, fmt.Errorf("kv: batch of %d bytes is shorter than its header", len(data))
	}
	r := batchReader{
		data:  data,
		seq:   base.SeqNum(binary.LittleEndian.Uint64(data[:8])),
		count: binary.LittleEndian.Uint32(data[8:12]),
		off:   batchHeaderLen,
	}
	if r.count > 0 && uint64(r.seq)+uint64(r.count)-1 > uint64(base.SeqNumMax) {
		return batchReader{}, fmt.Errorf("kv: batch seqnum %d + count %d overflows", r.seq, r.count)
	}
	return r, nil
}

// SeqNum returns the sequence number of the batch's first record.
func (r *batchReader) SeqNum() base.SeqNum { return r.seq }

// Count returns the number of records the header announces.
func (r *batchReader) Count() uint32 { return r.count }

// Next returns the next record and its sequence number. ok is false after
// the last record; err is set when the bytes do not decode or disagree with
// the header's count.
func (r *batchReader) Next() (rec batchRecord, seq base.SeqNum, ok bool, err error) {
	if r.index == r.count {
		if r.off != len(r.data) {
			return rec, 0, false, fmt.Errorf("kv: batch has %d trailing bytes after %d records",
				len(r.data)-r.off, r.count)
		}
		return rec, 0, false, nil
	}
	if r.off >= len(r.data) {
		return rec, 0, false, fmt.Errorf("kv: batch ends after %d of %d records", r.index, r.count)
	}
	rec.Kind = base.Kind(r.data[r.off])
	if rec.Kind > base.KindMax {
		return rec, 0, false, fmt.Errorf("kv: batch record %d has unknown kind %d at offset %d",
			r.index, rec.Kind, r.off)
	}
	r.off++
	if rec.Key, err = r.readBytes("key"); err != nil {
		return rec, 0, false, err
	}
	if rec.Value, err = r.readBytes("value"); err != nil {
		return rec, 0, false, err
	}
	if rec.Kind == base.KindDelete && len(rec.Value) != 0 {
		return rec, 0, false, fmt.Errorf("kv: batch record %d is a DEL with a value", r.index)
	}
	seq = r.seq + base.SeqNum(r.index)
	r.index++
	return rec, seq, true, nil
}

// readBytes reads one uvarint-prefixed byte string.
func (r *batchReader) readBytes(what string) ([]byte, error) {
	n, w := binary.Uvarint(r.data[r.off:])
	if w <= 0 {
		return nil, fmt.Errorf("kv: batch record %d: bad %s length at offset %d", r.index, what, r.off)
	}
	r.off += w
	if n > uint64(len(r.data)-r.off) {
		return nil, fmt.Errorf("kv: batch record %d: %s of %d bytes overruns the batch at offset %d",
			r.index, what, n, r.off)
	}
	b := r.data[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return b, nil
}
