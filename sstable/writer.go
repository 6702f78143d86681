package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/golang/snappy"
)

// maxEntrySize bounds one entry's key and value together, so that block
// offsets always fit the format's 32-bit restart points.
const maxEntrySize = 1 << 30

// errWriterClosed is returned by a Writer used after Close.
var errWriterClosed = errors.New("sstable: writer is closed")

// Writer writes a table. Add the entries in increasing internal-key order,
// then Close. A Writer is not safe for concurrent use.
type Writer struct {
	f vfs.File
	// writerBuffers, from writerBufferPool, go back to it on Close.
	*writerBuffers
	opts   WriterOptions
	cmp    *base.Comparer
	offset uint64 // bytes handed to buf so far
	err    error  // first write error; the table is then lost
	closed bool

	filter *filterBlockWriter

	rangeDels []RangeTombstone // fragmented, in order; keys owned

	prevKey       base.InternalKey // last key added, in prevKeyBuf
	prevPrefixLen int              // length of prevKey's prefix, so that each key is split once
	pendingHandle BlockHandle      // block awaiting its index entry
	pending       bool

	// blockLimit bounds the index and range-deletion blocks' entries
	// (maxBlockLen; tests lower it); rangeDelLen is the most the
	// range-deletion block's entries take so far (entryRoom).
	blockLimit  int
	rangeDelLen int

	props   Properties
	meta    WriterMetadata
	digest  *xxhash.Digest
	trailer [blockTrailerLen]byte
}

// WriterMetadata describes a table once its Writer has closed.
type WriterMetadata struct {
	// Size is the table's length in bytes.
	Size uint64
	// Smallest and Largest bound the table's keys, range tombstones
	// included: the first key is the smaller of the first point key and
	// the first tombstone's key; the last is the larger of the last point
	// key and the sentinel of the last tombstone's end
	// (base.MakeRangeDeleteSentinel), which excludes that end. The caller
	// owns them.
	Smallest, Largest InternalKey
	// SmallestSeqNum and LargestSeqNum bound the sequence numbers, range
	// tombstones included.
	SmallestSeqNum, LargestSeqNum SeqNum
	// Properties are the table's properties as written.
	Properties Properties
}

// NewWriter returns a Writer that writes a table to f through a buffer.
// The Writer owns f: Close syncs and closes it.
func NewWriter(f vfs.File, opts WriterOptions) *Writer {
	opts = opts.withDefaults()
	w := &Writer{
		f:             f,
		writerBuffers: getWriterBuffers(f),
		opts:          opts,
		cmp:           opts.Comparer,
		digest:        xxhash.New(),
		blockLimit:    maxBlockLen,
	}
	w.data.restartInterval = opts.BlockRestartInterval
	w.index.restartInterval = 1 // the reader finds block i at restart i
	w.props.ComparerName = opts.Comparer.Name
	if err := opts.Comparer.CheckSplit(); err != nil {
		w.err = fmt.Errorf("sstable: %w", err)
	}
	if opts.FilterPolicy != nil {
		w.filter = newFilterBlockWriter(opts.FilterPolicy)
		w.filter.reuse(w.filters, w.lengths)
		w.props.FilterPolicyName = opts.FilterPolicy.Name()
		w.props.FilterSplitName = opts.Comparer.SplitName
	}
	return w
}

// indexRoom reports whether the index block has room for the entries
// adding key may come to need: the pending block's, if any (its
// separator no longer than the last key), and one for the block key
// joins (no longer than the block's last key, which a later Add checks in
// turn). Separators are never longer than the key they follow.
func (w *Writer) indexRoom(key InternalKey) bool {
	need := entryRoom(key.Size(), maxHandleLen)
	if w.pending {
		need += entryRoom(w.prevKey.Size(), maxHandleLen)
	}
	return len(w.index.buf)+need <= w.blockLimit
}

// Add appends an entry. Keys must strictly increase in internal-key order
// (user key ascending, then sequence number descending); a key that does
// not is rejected with an error and the Writer stays usable. The Writer
// copies key and value.
func (w *Writer) Add(key InternalKey, value []byte) error {
	switch {
	case w.closed:
		return errWriterClosed
	case w.err != nil:
		return w.err
	case key.Kind() > base.KindMax:
		return fmt.Errorf("sstable: key %s has an unknown kind", key)
	case key.Kind() == base.KindRangeDelete:
		return fmt.Errorf("sstable: key %s is a range tombstone: add it with AddRangeDel", key)
	case key.Size()+len(value) > maxEntrySize:
		return fmt.Errorf("sstable: entry of %d bytes exceeds the limit of %d", key.Size()+len(value), maxEntrySize)
	case w.props.NumEntries > 0 && base.InternalCompare(w.cmp.Compare, w.prevKey, key) >= 0:
		return fmt.Errorf("sstable: key %s added after %s: keys must increase", key, w.prevKey)
	case !w.indexRoom(key):
		return fmt.Errorf("sstable: key %s: the table's index block would pass %d bytes; start another table", key, w.blockLimit)
	}
	prefix, err := w.cmp.Prefix(key.UserKey)
	if err != nil {
		return fmt.Errorf("sstable: adding %s: %w", key, err)
	}
	if w.pending {
		w.addIndexEntry(&key, prefix)
	}
	if w.filter != nil {
		w.addFilterKey(prefix)
	}
	w.prevPrefixLen = len(prefix)
	w.scratch = key.AppendEncoded(w.scratch[:0])
	w.data.add(w.scratch, value)
	w.record(key, len(value))
	if w.data.estimatedSize() >= w.opts.BlockSize {
		return w.flushDataBlock()
	}
	return nil
}

// addFilterKey adds prefix, the new key's (the whole key without a
// Split), to the current block's filter, once per block: the keys of one
// prefix are contiguous, so comparing with the previous key's prefix
// suffices.
func (w *Writer) addFilterKey(prefix []byte) {
	if w.data.empty() || !bytes.Equal(w.prevKey.UserKey[:w.prevPrefixLen], prefix) {
		w.filter.addKey(prefix)
	}
}

// record updates the properties for an added entry and keeps its key.
func (w *Writer) record(key base.InternalKey, valueLen int) {
	p := &w.props
	if p.NumEntries == 0 {
		p.SmallestKey = key.AppendEncoded(nil)
	}
	w.recordSeqNum(key.SeqNum())
	p.NumEntries++
	if key.Kind() == base.KindDelete {
		p.NumDeletions++
	}
	p.RawKeySize += uint64(key.Size())
	p.RawValueSize += uint64(valueLen)
	w.prevKeyBuf = append(w.prevKeyBuf[:0], key.UserKey...)
	w.prevKey = base.InternalKey{UserKey: w.prevKeyBuf, Trailer: key.Trailer}
}

// recordSeqNum widens the properties' sequence numbers to seq.
func (w *Writer) recordSeqNum(seq base.SeqNum) {
	p := &w.props
	if p.NumEntries == 0 && p.NumRangeDeletions == 0 {
		p.SmallestSeqNum, p.LargestSeqNum = seq, seq
	}
	p.SmallestSeqNum = min(p.SmallestSeqNum, seq)
	p.LargestSeqNum = max(p.LargestSeqNum, seq)
}

// EstimatedSize returns the bytes written so far plus the pending data
// block's.
func (w *Writer) EstimatedSize() uint64 {
	if w.closed || w.data.empty() {
		return w.offset
	}
	return w.offset + uint64(w.data.estimatedSize()+blockTrailerLen)
}

// flushDataBlock writes the pending data block and closes its filter; its
// index entry waits for the next key (or Close) to pick a separator.
func (w *Writer) flushDataBlock() error {
	h, err := w.writeBlock(w.data.finish())
	w.data.reset()
	if err != nil {
		return err
	}
	if w.filter != nil {
		w.filter.finishFilter()
	}
	w.pendingHandle, w.pending = h, true
	w.props.NumDataBlocks++
	w.props.DataSize += h.Length + blockTrailerLen
	return nil
}

// addIndexEntry adds the pending block's index entry: a key k with
// last <= k < next (next nil: k >= last), as short as the comparer can
// make it. Shortened user keys get the largest trailer, so k still sorts
// below every version of next's user key.
//
// Under a Split, when last and next have different prefixes, k also sorts
// below next's prefix. Then a seek for a key of prefix p lands on a block
// that holds a key >= it, or on one followed by no key of prefix p, so that
// block's filter alone can rule p out (see Iter.SeekPrefixGE).
func (w *Writer) addIndexEntry(next *base.InternalKey, nextPrefix []byte) {
	last := w.prevKey
	var sep, limit []byte
	if next != nil {
		limit = w.separatorLimit(next.UserKey, nextPrefix)
		sep = w.cmp.Separator(w.sepBuf[:0], last.UserKey, limit)
	} else {
		sep = w.cmp.Successor(w.sepBuf[:0], last.UserKey)
	}
	w.sepBuf = sep
	// The comparer's key is taken only where it keeps the contract
	// (last < sep < limit, and no longer than last): one that breaks it
	// would send the index's searches to the wrong block, and lookups
	// would miss keys that are there. last always keeps it.
	k := last
	if len(sep) <= len(last.UserKey) && w.cmp.Compare(last.UserKey, sep) < 0 &&
		(next == nil || w.cmp.Compare(sep, limit) < 0) {
		k = base.MakeSearchKey(sep)
	}
	w.scratch = k.AppendEncoded(w.scratch[:0])
	var hb [maxHandleLen]byte
	w.index.add(w.scratch, appendHandle(hb[:0], w.pendingHandle))
	w.pending = false
}

// separatorLimit returns the key a block separator must sort below: next,
// or under a Split next's prefix when the last key's differs (the last key
// sorts below it by the Split's invariants; should it not, next).
func (w *Writer) separatorLimit(next, nextPrefix []byte) []byte {
	last := w.prevKey.UserKey
	if w.cmp.Split == nil || bytes.Equal(last[:w.prevPrefixLen], nextPrefix) || w.cmp.Compare(last, nextPrefix) >= 0 {
		return next
	}
	return nextPrefix
}

// compress returns the form in which contents are stored, compressed into
// *dst (grown as needed and kept for the next block, whether compression
// pays or not) or contents itself, and its compression type.
func (w *Writer) compress(dst *[]byte, contents []byte) ([]byte, blockType) {
	if w.opts.Compression != SnappyCompression {
		return contents, blockTypeNone
	}
	n := snappy.MaxEncodedLen(len(contents))
	if cap(*dst) < n {
		*dst = make([]byte, n)
	}
	c := snappy.Encode((*dst)[:n], contents)
	if len(c) <= len(contents)-len(contents)/8 {
		return c, blockTypeSnappy
	}
	return contents, blockTypeNone
}

// writeBlock compresses contents if that pays and writes them with their
// trailer.
func (w *Writer) writeBlock(contents []byte) (BlockHandle, error) {
	stored, typ := w.compress(&w.snappy, contents)
	return w.writeStored(stored, typ)
}

// writeStored writes a block's stored bytes and its trailer.
func (w *Writer) writeStored(stored []byte, typ blockType) (BlockHandle, error) {
	h := BlockHandle{Offset: w.offset, Length: uint64(len(stored))}
	t := w.trailer[:]
	t[0] = byte(typ)
	w.digest.Reset()
	w.digest.Write(stored)
	w.digest.Write(t[:1])
	binary.LittleEndian.PutUint32(t[1:], uint32(w.digest.Sum64()))
	if err := w.write(stored); err != nil {
		return h, err
	}
	return h, w.write(t)
}

// write appends p to the file, remembering the first error.
func (w *Writer) write(p []byte) error {
	if w.err != nil {
		return w.err
	}
	n, err := w.buf.Write(p)
	w.offset += uint64(n)
	if err != nil {
		w.err = fmt.Errorf("sstable: write: %w", err)
	}
	return w.err
}
