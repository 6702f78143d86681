package sstable

import (
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// The vocabulary of tables, shared with the rest of bloomkv. Each name is an
// alias of the engine's own type or a copy of its value, so keys, iterators
// and comparers pass between sstable, memtable, compaction and kv without
// conversion, and a program outside this module can name them.

// InternalKey is a user key with the sequence number and kind of one
// version of it: what Writer.Add takes and a table iterator yields. It is
// the same type as the internal key of every bloomkv package.
//
// Encoded, it is the user key followed by an 8-byte little-endian trailer
// holding seqnum<<8 | kind; internal keys sort by user key ascending, then
// by trailer descending, so the newest version of a user key comes first.
type InternalKey = base.InternalKey

// SeqNum is a sequence number: a read at s sees the versions numbered s or
// lower. It is the same type as the sequence number of every bloomkv
// package.
type SeqNum = base.SeqNum

// SeqNumMax is the largest sequence number; a read at SeqNumMax sees every
// version. It is the same value as the engine's.
const SeqNumMax = base.SeqNumMax

// Kind says what an internal key records: a value or a tombstone. It is the
// same type as the kind of every bloomkv package.
type Kind = base.Kind

// The kinds of internal keys, the same values as the engine's. They are
// stored on disk.
const (
	// KindDelete is a tombstone: the user key has no value at this version.
	KindDelete = base.KindDelete
	// KindSet records a value.
	KindSet = base.KindSet
	// KindRangeDelete marks a range tombstone's key (see RangeTombstone);
	// Reader.Get reports a key a range tombstone deletes with this kind.
	KindRangeDelete = base.KindRangeDelete
	// KindMax is the largest kind; among keys with equal user key and
	// sequence number it sorts first.
	KindMax = base.KindMax
)

// RangeTombstone deletes the user keys in [Start, End) at sequence number
// Seq: every version below Seq of every key in the span. Writer.AddRangeDel
// takes them and Reader.RangeDels returns them. It is the same type as
// memtable.RangeTombstone and as the range tombstones of every bloomkv
// package.
type RangeTombstone = rangedel.Tombstone

// MakeInternalKey returns the internal key of one version of userKey, as
// Writer.Add wants it.
func MakeInternalKey(userKey []byte, seq SeqNum, kind Kind) InternalKey {
	return base.MakeInternalKey(userKey, seq, kind)
}

// DecodeInternalKey splits an encoded internal key, such as
// Properties.SmallestKey, into user key and trailer. The user key aliases
// encoded. ok is false when encoded is too short or names an unknown kind.
func DecodeInternalKey(encoded []byte) (key InternalKey, ok bool) {
	return base.DecodeInternalKey(encoded)
}

// InternalCompare orders internal keys as tables store them: user key
// ascending under userCmp, then sequence number descending.
func InternalCompare(userCmp Compare, a, b InternalKey) int {
	return base.InternalCompare(userCmp, a, b)
}

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b. It is
// the same type as the engine's user-key comparison.
type Compare = base.Compare

// Split returns the length of the prefix of a user key that filters hold
// when a Comparer carries one (Comparer.Split). A prefix must be its own
// prefix, sort at or before every key bearing it, and order as its keys do;
// Split must be deterministic. It is the same type as the engine's.
type Split = base.Split

// Comparer orders user keys and names the ordering, which every table
// stores. It is the same type as the comparer of every bloomkv package.
type Comparer = base.Comparer

// DefaultComparer orders keys bytewise; a nil Comparer in the options means
// it. It is the same comparer as the engine's default.
var DefaultComparer = base.DefaultComparer

// InternalIterator walks internal keys in order: user keys ascending, the
// versions of one user key newest first. Reader.NewIter returns one. It is
// the same interface as the iterators of every bloomkv package, so a table's
// iterator can feed compaction.Run.
type InternalIterator = base.InternalIterator

// FileNum numbers a table; the block cache keys blocks by it. It is the same
// type as the file number of every bloomkv package.
type FileNum = base.FileNum

// ErrCorruption is wrapped by every error caused by damaged or truncated
// table bytes; test for it with errors.Is. It is the same value as the one
// every bloomkv package wraps (kv.ErrCorruption too).
var ErrCorruption = base.ErrCorruption

// ErrInvalidSplit is wrapped by the error of a Writer, Reader or lookup
// that met a Comparer.Split breaking its contract (a length outside its
// key, say; see Comparer.CheckSplit). It is the same value as
// kv.ErrInvalidSplit.
var ErrInvalidSplit = base.ErrInvalidSplit
