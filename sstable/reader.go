package sstable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/golang/snappy"
)

// Reader reads a table. The index block, the filter block, the range
// tombstones and the properties stay in memory from NewReader to Close,
// reserved in the block cache (see Cache.Reserve) when the Reader has one:
// the cache's capacity bounds them with the data blocks, which are read on
// demand through it. A Reader is safe for concurrent use.
type Reader struct {
	f       vfs.File
	opts    ReaderOptions
	cmp     *base.Comparer
	name    string
	dataEnd uint64 // blocks lie below this offset; the footer starts there

	footer    footer
	metaindex []MetaEntry
	props     Properties

	index []byte // index block contents: entry i locates data block i
	// blocks[i] holds what the Reader keeps of data block i: the handle
	// of index entry i, decoded once, and its cache slot (see blockRef).
	// Under a bytewise comparer indexPrefixes[i] is keyPrefix of index
	// entry i's user key, so lookups rarely decode index entries at all.
	blocks        []blockRef
	indexPrefixes []uint64

	// filter is the filter block lookups ask while one is held (see
	// LoadFilter, DropFilter and HoldFilter); nil when none is held.
	// filterPolicy is set when the table's filter is usable, held or not.
	filter       atomic.Pointer[filterBlock]
	filterPolicy bloompolicy.FilterPolicy
	filterHandle BlockHandle // zero when the table has no filter block
	// filterSkipped says the table has a filter the reader cannot use
	// (see LookupStats.FilterSkipped).
	filterSkipped bool
	filterMu      sync.Mutex // serialises the swaps of filter (setFilterLocked)
	// filterBuilt says the filter held was built by BuildFilter, not
	// read from the table. Under filterMu.
	filterBuilt bool
	// cutAtPrefixes says the writer cut the index separators below each
	// new prefix of the reader's Split (see Writer.separatorLimit): the
	// table's filters hold prefixes of that Split. Then a prefix that the
	// filter of the block a seek lands in rules out is in no later block
	// either. A table written under another Split, or none, may hold it
	// from the next block on (see Iter.seekGE).
	cutAtPrefixes bool
	// unreserveFilter gives back the cache reservation of the filter
	// held; nil when none is held or there is no cache.
	unreserveFilter func()

	// misses counts the Get calls that found nothing (see Misses).
	misses atomic.Int64

	// rangeDels are the table's range tombstones, fragmented, loaded at
	// open.
	rangeDels []RangeTombstone

	// unreserve gives back what the Reader reserved in the cache; nil
	// without a cache.
	unreserve func()
}

// blockRef is what a Reader keeps in memory for one data block, side by
// side so that a lookup finds both in one cache line: the block's handle
// and the slot through which the block cache hands over its contents (see
// Cache). The filters' offsets keep an array of their own (filterBlock),
// an eighth the size: a lookup that a filter answers reads only that, and
// more of it stays in the CPU's caches.
type blockRef struct {
	handle BlockHandle
	cached cacheSlot
}

// MetaEntry is one entry of the metaindex: a named block and its handle.
type MetaEntry struct {
	Name   string
	Handle BlockHandle
}

// NewReader opens the table in f, checking its footer and loading its
// index, filter, range-deletion and properties blocks (checksums
// verified). The Reader owns f from then on and closes it on Close, or
// right away if NewReader fails.
func NewReader(f vfs.File, opts ReaderOptions) (*Reader, error) {
	r := &Reader{f: f, opts: opts, cmp: opts.Comparer, name: opts.FileName}
	if r.cmp == nil {
		r.cmp = base.DefaultComparer
	}
	if r.name == "" {
		r.name = "table " + opts.FileNum.String()
	}
	if err := r.cmp.CheckSplit(); err != nil {
		f.Close()
		return nil, fmt.Errorf("sstable: %w", err)
	}
	if err := r.open(); err != nil {
		f.Close()
		return nil, err
	}
	if opts.Cache != nil {
		r.unreserve = opts.Cache.Reserve(r.memSize())
		if fb := r.filter.Load(); fb != nil {
			r.unreserveFilter = opts.Cache.Reserve(filterMemSize(fb))
		}
	}
	return r, nil
}

// memSize returns the bytes the Reader keeps on the heap from NewReader to
// Close: itself, its index block and the handles and prefixes decoded from
// it, its range tombstones, metaindex and properties. Buffers count by
// capacity. The filter block, which can be dropped and loaded again, is
// reserved on its own (see filterMemSize).
func (r *Reader) memSize() int64 {
	n := unsafe.Sizeof(*r) + uintptr(cap(r.index)) +
		uintptr(cap(r.blocks))*unsafe.Sizeof(blockRef{}) +
		uintptr(cap(r.indexPrefixes))*unsafe.Sizeof(uint64(0)) +
		uintptr(cap(r.rangeDels))*unsafe.Sizeof(RangeTombstone{}) +
		uintptr(cap(r.metaindex))*unsafe.Sizeof(MetaEntry{})
	for _, t := range r.rangeDels {
		n += uintptr(cap(t.Start) + cap(t.End))
	}
	for _, e := range r.metaindex {
		n += uintptr(len(e.Name))
	}
	p := &r.props
	n += uintptr(cap(p.SmallestKey) + cap(p.LargestKey) +
		len(p.FilterPolicyName) + len(p.FilterSplitName) + len(p.ComparerName))
	return int64(n)
}

// IndexSize returns the bytes the table's index takes in memory: the index
// block and what is decoded from it (each data block's handle and cache
// slot, and the keys' prefixes).
func (r *Reader) IndexSize() int64 {
	return int64(uintptr(cap(r.index)) +
		uintptr(cap(r.blocks))*unsafe.Sizeof(blockRef{}) +
		uintptr(cap(r.indexPrefixes))*unsafe.Sizeof(uint64(0)))
}

// open loads everything NewReader keeps in memory.
func (r *Reader) open() error {
	if err := r.readFooter(); err != nil {
		return err
	}
	if err := r.readMetaindex(); err != nil {
		return err
	}
	if r.props.ComparerName != r.cmp.Name {
		return fmt.Errorf("sstable: %s: keys ordered by %q, reader uses %q", r.name, r.props.ComparerName, r.cmp.Name)
	}
	if err := r.readIndex(); err != nil {
		return err
	}
	if err := r.applyGlobalSeqNum(); err != nil {
		return err
	}
	if err := r.readRangeDels(); err != nil {
		return err
	}
	return r.readFilter()
}

// applyGlobalSeqNum gives the properties' sequence numbers and keys the
// table's global sequence number, if it has one
// (ReaderOptions.GlobalSeqNum); the range tombstones and the data blocks'
// keys get it as they are decoded. A table written with other sequence
// numbers than 0 cannot take one, nor can any table one above
// SeqNumMax, which a key's trailer cannot hold.
func (r *Reader) applyGlobalSeqNum() error {
	g := r.opts.GlobalSeqNum
	if g == 0 {
		return nil
	}
	if g > base.SeqNumMax {
		return fmt.Errorf("sstable: %s: global sequence number %d is above the largest, %d", r.name, g, base.SeqNumMax)
	}
	p := &r.props
	if p.LargestSeqNum != 0 {
		return fmt.Errorf("sstable: %s holds sequence numbers up to %d; a global sequence number applies only to a table written with 0", r.name, p.LargestSeqNum)
	}
	p.SmallestSeqNum, p.LargestSeqNum = g, g
	p.SmallestKey = withSeqNum(p.SmallestKey, g)
	p.LargestKey = withSeqNum(p.LargestKey, g)
	return nil
}

// withSeqNum returns encoded internal key k with sequence number seq; an
// empty k (no entries) stays empty.
func withSeqNum(k []byte, seq base.SeqNum) []byte {
	ik, ok := base.DecodeInternalKey(k)
	if !ok {
		return k
	}
	return base.MakeInternalKey(ik.UserKey, seq, ik.Kind()).AppendEncoded(nil)
}

// corruptf returns an error wrapping base.ErrCorruption naming the file
// and an offset in it.
func (r *Reader) corruptf(off uint64, format string, args ...any) error {
	return base.CorruptionErrorf("sstable: %s: offset %d: %s", r.name, off, fmt.Sprintf(format, args...))
}

func (r *Reader) readFooter() error {
	st, err := r.f.Stat()
	if err != nil {
		return fmt.Errorf("sstable: %s: stat: %w", r.name, err)
	}
	size := st.Size()
	if size < FooterLen {
		return base.CorruptionErrorf("%w: %s: %d bytes, shorter than a table footer (%d)",
			ErrNotTable, r.name, size, FooterLen)
	}
	r.dataEnd = uint64(size) - FooterLen
	var buf [FooterLen]byte
	if err := r.readAt(buf[:], r.dataEnd); err != nil {
		return err
	}
	if r.footer, err = decodeFooter(buf[:]); err != nil {
		if errors.Is(err, ErrNotTable) {
			return base.CorruptionErrorf("%s: offset %d: %w", r.name, r.dataEnd, err)
		}
		if errors.Is(err, ErrNewerFormat) {
			return fmt.Errorf("sstable: %s: offset %d: footer: %w", r.name, r.dataEnd, err)
		}
		return r.corruptf(r.dataEnd, "footer: %v", err)
	}
	return nil
}

// readAt fills p from offset off; a short file is corruption.
func (r *Reader) readAt(p []byte, off uint64) error {
	if err := r.checkOpen(); err != nil {
		return err
	}
	n, err := r.f.ReadAt(p, int64(off))
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return r.corruptf(off, "file ends %d bytes into a %d-byte read", n, len(p))
	}
	return fmt.Errorf("sstable: %s: read at %d: %w", r.name, off, err)
}

// readBlock reads the block h locates, verifies its checksum and returns
// its uncompressed contents in a new buffer, allocated rounded up to the
// allocator's size class and with that capacity: what it occupies, which
// is what the block cache charges for it.
func (r *Reader) readBlock(h BlockHandle) ([]byte, error) {
	return r.readBlockInto(h, nil)
}

// readBlockInto is readBlock, with the contents in dst's memory when it
// is large enough (dst's contents are overwritten), else in a new buffer.
// The stored bytes are read into a pooled buffer, so only the contents
// are allocated.
func (r *Reader) readBlockInto(h BlockHandle, dst []byte) ([]byte, error) {
	if err := r.checkHandle(h); err != nil {
		return nil, err
	}
	n := int(h.Length)
	raw := rawBlocks.Get().(*[]byte)
	buf := slices.Grow((*raw)[:0], n+blockTrailerLen)[:n+blockTrailerLen]
	data, err := r.decodeBlock(buf, h.Offset, dst)
	if cap(buf) <= maxRawBlockBuf {
		*raw = buf
		rawBlocks.Put(raw)
	}
	return data, err
}

// checkHandle returns an error unless block h and its trailer lie below
// the footer.
func (r *Reader) checkHandle(h BlockHandle) error {
	if h.Offset > r.dataEnd || h.Length > r.dataEnd-h.Offset || blockTrailerLen > r.dataEnd-h.Offset-h.Length {
		return r.corruptf(h.Offset, "block handle %s beyond the blocks' end %d", h, r.dataEnd)
	}
	return nil
}

// rawBlocks recycles the buffers blocks are read into: once copied or
// inflated, their bytes are garbage.
var rawBlocks = sync.Pool{New: func() any { return new([]byte) }}

// maxRawBlockBuf bounds the buffers rawBlocks keeps, so that reading one
// large block does not pin its size in every pool.
const maxRawBlockBuf = 256 << 10

// decodeBlock reads into buf, sized for the block and its trailer, the
// block at off, checks it and returns its contents, in dst's memory as
// readBlockInto describes.
func (r *Reader) decodeBlock(buf []byte, off uint64, dst []byte) ([]byte, error) {
	if err := r.readAt(buf, off); err != nil {
		return nil, err
	}
	return r.checkBlock(buf, off, dst)
}

// checkBlock checks buf, the stored bytes of the block at off and its
// trailer, and returns the block's contents, in dst's memory as
// readBlockInto describes; never in buf's.
func (r *Reader) checkBlock(buf []byte, off uint64, dst []byte) ([]byte, error) {
	if err := r.checkTrailer(buf, off); err != nil {
		return nil, err
	}
	n := len(buf) - blockTrailerLen
	if blockType(buf[n]) == blockTypeSnappy {
		return r.decompress(buf[:n], off, dst)
	}
	// append sizes a new buffer to a size class, as slices.Grow does.
	return append(dst[:0], buf[:n]...), nil
}

// checkTrailer checks buf, the stored bytes of the block at off and its
// trailer, against the trailer: the checksum, and a compression type the
// reader knows.
func (r *Reader) checkTrailer(buf []byte, off uint64) error {
	n := len(buf) - blockTrailerLen
	if got, want := checksum(buf[:n+1]), binary.LittleEndian.Uint32(buf[n+1:]); got != want {
		return r.corruptf(off, "block checksum %#08x, want %#08x", got, want)
	}
	if t := blockType(buf[n]); t != blockTypeNone && t != blockTypeSnappy {
		return r.corruptf(off, "unknown compression type %d", buf[n])
	}
	return nil
}

// VerifyChecksums reads every data block from the file, bypassing the
// cache, and checks its trailer (checksum and compression type) without
// decoding it: the share of Check that finds damaged bytes, at the cost
// of one read of the file, blocks that lie end to end read together, up
// to verifyReadBytes at once. The other blocks a Reader reads, and so
// checks, at open (the filter block too, unless deferred or of a policy
// it does not know). Whether the blocks tile the file is Check's.
func (r *Reader) VerifyChecksums() error {
	if err := r.checkOpen(); err != nil {
		return err
	}
	var buf []byte
	for i := 0; i < len(r.blocks); {
		// Blocks i..j-1, each with its trailer, take one read.
		start := r.blocks[i].handle.Offset
		end, j := start, i
		for j < len(r.blocks) && r.blocks[j].handle.Offset == end &&
			(j == i || end-start+r.blocks[j].handle.Length+blockTrailerLen <= verifyReadBytes) {
			end += r.blocks[j].handle.Length + blockTrailerLen
			j++
		}
		buf = slices.Grow(buf[:0], int(end-start))[:end-start]
		if err := r.readAt(buf, start); err != nil {
			return err
		}
		for ; i < j; i++ {
			h := r.blocks[i].handle
			at := h.Offset - start
			if err := r.checkTrailer(buf[at:at+h.Length+blockTrailerLen], h.Offset); err != nil {
				return err
			}
		}
	}
	return nil
}

// verifyReadBytes bounds the bytes VerifyChecksums reads at once, and so
// the buffer it takes, but for a larger block.
const verifyReadBytes = 1 << 20

// decompress inflates a Snappy block into dst's memory, or a new buffer,
// refusing decoded lengths Snappy cannot reach from src (no allocation
// from a lying header).
func (r *Reader) decompress(src []byte, off uint64, dst []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil || n > 24*len(src)+32 {
		return nil, r.corruptf(off, "bad snappy block header")
	}
	dst = slices.Grow(dst[:0], n)[:n]
	out, err := snappy.Decode(dst, src)
	if err != nil || len(out) != n {
		return nil, r.corruptf(off, "bad snappy block: %v", err)
	}
	return dst, nil
}

// readBlockIter reads the block h locates and points it at it; cmp is as
// for blockIter (nil for blocks whose keys are not internal keys).
func (r *Reader) readBlockIter(it *blockIter, h BlockHandle, cmp base.Compare) error {
	data, err := r.readBlock(h)
	if err != nil {
		return err
	}
	return it.init(data, cmp, r.name, h.Offset)
}

// initIndexIter points it at the index block, held in memory since open.
func (r *Reader) initIndexIter(it *blockIter) error {
	return it.init(r.index, r.cmp.Compare, r.name, r.footer.index.Offset)
}

// readMetaindex loads the metaindex and, through it, the properties.
func (r *Reader) readMetaindex() error {
	h := r.footer.metaindex
	var it blockIter
	if err := r.readBlockIter(&it, h, nil); err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		bh, n := decodeHandle(it.val)
		if n <= 0 || n != len(it.val) {
			return it.corrupt(it.offset, fmt.Sprintf("bad handle for %q", it.rawKey))
		}
		r.metaindex = append(r.metaindex, MetaEntry{Name: string(it.rawKey), Handle: bh})
	}
	if it.err != nil {
		return it.err
	}
	propsHandle, found := r.metaHandle(metaProperties)
	if !found {
		return r.corruptf(h.Offset, "metaindex has no properties entry")
	}
	data, err := r.readBlock(propsHandle)
	if err != nil {
		return err
	}
	r.props, err = decodeProperties(data, r.name, propsHandle.Offset)
	return err
}

// metaHandle returns the handle of the metaindex entry called name (the
// last, should the name repeat); found is false when there is none.
func (r *Reader) metaHandle(name string) (h BlockHandle, found bool) {
	for _, e := range r.metaindex {
		if e.Name == name {
			h, found = e.Handle, true
		}
	}
	return h, found
}

// readIndex loads the index block and checks every entry's handle, so that
// lookups can trust them.
func (r *Reader) readIndex() error {
	h := r.footer.index
	var it blockIter
	if err := r.readBlockIter(&it, h, r.cmp.Compare); err != nil {
		return err
	}
	// Every entry is a restart point (checked below), so the restart
	// count, bounded by the block's size, sizes the decoded slices; they
	// are allocated rounded up to a size class, as Reserve is told.
	bytewise := r.cmp.Bytewise()
	r.blocks = slices.Grow(r.blocks, it.numRestarts)
	if bytewise {
		r.indexPrefixes = slices.Grow(r.indexPrefixes, it.numRestarts)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if bytewise {
			r.indexPrefixes = append(r.indexPrefixes, base.KeyPrefix(it.ikey.UserKey))
		}
		if n >= it.numRestarts || it.offset != it.restartOffset(n) {
			return it.corrupt(it.offset, "index entry is not a restart point")
		}
		bh, hn := decodeHandle(it.val)
		if hn <= 0 || hn != len(it.val) || bh.Offset > r.dataEnd || bh.Length > r.dataEnd-bh.Offset {
			return it.corrupt(it.offset, "bad data block handle")
		}
		r.blocks = append(r.blocks, blockRef{handle: bh})
		n++
	}
	if it.err != nil {
		return it.err
	}
	if n != it.numRestarts || uint64(n) != r.props.NumDataBlocks {
		return r.corruptf(h.Offset, "index has %d entries for %d restarts and %d data blocks",
			n, it.numRestarts, r.props.NumDataBlocks)
	}
	r.index = it.data
	return nil
}

// Properties returns the table's properties. The caller must not modify
// them.
func (r *Reader) Properties() *Properties { return &r.props }

// errReaderClosed is wrapped by the error of a Reader's method that needs
// the file, and of an iterator's move that needs a block not in memory,
// once the Reader is closed (Pebble's reader returns its own for the
// same).
var errReaderClosed = errors.New("sstable: reader is closed")

// checkOpen returns an error wrapping errReaderClosed once the Reader is
// closed.
func (r *Reader) checkOpen() error {
	if r.f == nil {
		return fmt.Errorf("%w: %s", errReaderClosed, r.name)
	}
	return nil
}

// Close closes the file. Blocks already handed out stay valid. After
// Close, the methods that read the table (Get, NewIter, InitIter, Check,
// VerifyChecksums, Layout, LoadFilter, BuildFilter, EstimateDiskUsage)
// return an error that says the reader is closed, as do the moves of an
// iterator still open that need a block it does not hold; HoldFilter
// holds nothing. What the Reader keeps in memory (Properties, Bounds,
// RangeDels) stays readable. A second Close returns an error.
func (r *Reader) Close() error {
	if r.f == nil {
		return errors.New("sstable: reader already closed")
	}
	err := r.f.Close()
	r.f = nil
	if c := r.opts.Cache; c != nil {
		for i := range r.blocks {
			c.unlink(r.opts.FileNum, r.blocks[i].handle.Offset, &r.blocks[i].cached)
		}
	}
	if r.unreserve != nil {
		r.unreserve()
	}
	r.DropFilter()
	if err != nil {
		return fmt.Errorf("sstable: %s: close: %w", r.name, err)
	}
	return nil
}
