package sstable

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cespare/xxhash/v2"
)

// Sizes and constants of the on-disk format (drawn in doc.go).
const (
	// blockTrailerLen is the length of the trailer that follows every
	// block: a compression type byte and a 32-bit checksum.
	blockTrailerLen = 5
	// FooterLen is the length of the footer that ends every table.
	FooterLen = 56
	// footerHandlesLen is the room the footer keeps for its two
	// varint-encoded handles, zero-padded.
	footerHandlesLen = 40
	// maxHandleLen is the longest encoded BlockHandle: two 10-byte uvarints.
	maxHandleLen = 2 * binary.MaxVarintLen64
	// TableMagic ends every table.
	TableMagic uint64 = 0x31766b6d6f6f6c62 // stored little-endian, its bytes spell "bloomkv1"
	// FormatVersion is the table format version this package writes. It
	// reads every version from MinFormatVersion to FormatVersion.
	//
	// Version 2 added the range-deletion block and the range-deletions
	// property, and its index separators carry the kind
	// base.KindRangeDelete (base.KindMax) where version 1's carry
	// base.KindSet. A version 1 table has no range tombstones; a reader
	// that knows only version 1 refuses version 2 tables rather than
	// ignore their tombstones and show deleted keys.
	FormatVersion uint32 = 2
	// MinFormatVersion is the oldest table format version this package
	// reads.
	MinFormatVersion uint32 = 1
)

// blockType is the compression type byte of a block trailer.
type blockType byte

const (
	blockTypeNone   blockType = 0
	blockTypeSnappy blockType = 1
)

// BlockHandle locates a block in a table: its offset and the length of its
// stored (possibly compressed) contents, trailer excluded.
type BlockHandle struct {
	Offset, Length uint64
}

// String formats the handle as "(offset, length)".
func (h BlockHandle) String() string { return fmt.Sprintf("(%d, %d)", h.Offset, h.Length) }

// appendHandle appends h as two uvarints.
func appendHandle(dst []byte, h BlockHandle) []byte {
	dst = binary.AppendUvarint(dst, h.Offset)
	return binary.AppendUvarint(dst, h.Length)
}

// decodeHandle reads a handle from the front of src and returns the number
// of bytes it used; n <= 0 means src does not start with a valid handle.
func decodeHandle(src []byte) (h BlockHandle, n int) {
	off, n1 := binary.Uvarint(src)
	if n1 <= 0 {
		return BlockHandle{}, 0
	}
	length, n2 := binary.Uvarint(src[n1:])
	if n2 <= 0 {
		return BlockHandle{}, 0
	}
	return BlockHandle{Offset: off, Length: length}, n1 + n2
}

// checksum is the block checksum: the low 32 bits of the xxhash64 of b,
// which is a block's contents followed by its compression type byte.
func checksum(b []byte) uint32 { return uint32(xxhash.Sum64(b)) }

// footer is the fixed-size end of a table.
type footer struct {
	metaindex, index BlockHandle
	version          uint32
}

// encode returns the footer's FooterLen bytes.
func (f footer) encode() []byte {
	buf := make([]byte, FooterLen)
	p := appendHandle(buf[:0], f.metaindex)
	appendHandle(p, f.index)
	binary.LittleEndian.PutUint32(buf[footerHandlesLen:], f.version)
	binary.LittleEndian.PutUint32(buf[footerHandlesLen+4:], checksum(buf[:footerHandlesLen+4]))
	binary.LittleEndian.PutUint64(buf[footerHandlesLen+8:], TableMagic)
	return buf
}

// ErrNewerFormat is returned (wrapped) by NewReader for a table whose footer
// is intact but names a format version above FormatVersion: the table was
// written by a newer bloomkv and is not corrupt. It is the same value kv
// returns, so errors.Is works whichever package reports it.
var ErrNewerFormat = base.ErrNewerFormat

// ErrNotTable is wrapped by the error of NewReader for a file that is not
// a bloomkv table at all: shorter than a footer, or not ending in
// TableMagic (a CURRENT or MANIFEST file, another engine's table). The
// error wraps ErrCorruption too, since a table of a store that reads so
// has been damaged; a tool given any file says "not a bloomkv table".
var ErrNotTable = errors.New("sstable: not a bloomkv table")

// decodeFooter parses the last FooterLen bytes of a table. An error wraps
// ErrNewerFormat when only the version is unknown; otherwise it does not
// wrap ErrCorruption, and the caller adds the file and offset.
func decodeFooter(buf []byte) (footer, error) {
	if len(buf) != FooterLen {
		return footer{}, fmt.Errorf("footer is %d bytes, want %d", len(buf), FooterLen)
	}
	if m := binary.LittleEndian.Uint64(buf[footerHandlesLen+8:]); m != TableMagic {
		return footer{}, fmt.Errorf("%w: bad magic %#016x, want %#016x", ErrNotTable, m, TableMagic)
	}
	want := binary.LittleEndian.Uint32(buf[footerHandlesLen+4:])
	if got := checksum(buf[:footerHandlesLen+4]); got != want {
		return footer{}, fmt.Errorf("footer checksum %#08x, want %#08x", got, want)
	}
	var f footer
	f.version = binary.LittleEndian.Uint32(buf[footerHandlesLen:])
	switch {
	case f.version > FormatVersion:
		return footer{}, base.NewerFormatErrorf("format version %d, this bloomkv reads up to %d", f.version, FormatVersion)
	case f.version < MinFormatVersion:
		return footer{}, fmt.Errorf("unsupported format version %d", f.version)
	}
	n1, n2 := 0, 0
	if f.metaindex, n1 = decodeHandle(buf[:footerHandlesLen]); n1 <= 0 {
		return footer{}, fmt.Errorf("bad metaindex handle")
	}
	if f.index, n2 = decodeHandle(buf[n1:footerHandlesLen]); n2 <= 0 {
		return footer{}, fmt.Errorf("bad index handle")
	}
	for _, c := range buf[n1+n2 : footerHandlesLen] {
		if c != 0 {
			return footer{}, fmt.Errorf("nonzero footer padding")
		}
	}
	return f, nil
}
