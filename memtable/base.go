package memtable

import (
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// The vocabulary of memtables, shared with the rest of bloomkv. Each name
// is an alias of the engine's own type or a copy of its value, so a
// program outside this module can name what MemTable's methods take and
// return, and pass a memtable's iterator on (to compaction.Run, say).

// InternalKey is a user key with the sequence number and kind of one
// version of it: what Add takes and an iterator yields. It is the same type
// as the internal key of every bloomkv package (sstable.InternalKey too):
// its fields are UserKey []byte and Trailer uint64, seqnum<<8 | kind
// (see [github.com/bloomkv/bloomkv/sstable.InternalKey]).
type InternalKey = base.InternalKey

// SeqNum is a sequence number: a read at s sees the versions numbered s or
// lower. It is the same type as the sequence number of every bloomkv
// package.
type SeqNum = base.SeqNum

// SeqNumMax is the largest sequence number; Get at SeqNumMax returns the
// newest version. It is the same value as the engine's.
const SeqNumMax = base.SeqNumMax

// Kind says what an internal key records: a value or a tombstone. It is the
// same type as the kind of every bloomkv package.
type Kind = base.Kind

// The kinds of internal keys, the same values as the engine's.
const (
	// KindDelete is a tombstone: the user key has no value at this version.
	KindDelete = base.KindDelete
	// KindSet records a value.
	KindSet = base.KindSet
	// KindRangeDelete is a range tombstone: Add files it apart from the
	// point entries, its value being the range's end; Get reports a key it
	// deletes with this kind.
	KindRangeDelete = base.KindRangeDelete
)

// RangeTombstone deletes the user keys in [Start, End) at sequence number
// Seq: every version below Seq of every key in the span. RangeDels returns
// them. It is the same type as sstable.RangeTombstone.
type RangeTombstone = rangedel.Tombstone

// MakeInternalKey returns the internal key of one version of userKey, as
// Add wants it.
func MakeInternalKey(userKey []byte, seq SeqNum, kind Kind) InternalKey {
	return base.MakeInternalKey(userKey, seq, kind)
}

// Comparer orders user keys. It is the same type as the comparer of every
// bloomkv package: [github.com/bloomkv/bloomkv/sstable.Comparer] documents
// its fields (Compare, Separator, Successor, Split, SplitName,
// AbbreviatedKey, Name), and [github.com/bloomkv/bloomkv/sstable.Split]
// the invariants a Split must keep.
type Comparer = base.Comparer

// DefaultComparer orders keys bytewise; New(nil) uses it. It is the same
// comparer as the engine's default.
var DefaultComparer = base.DefaultComparer

// InternalIterator walks internal keys in order: user keys ascending, the
// versions of one user key newest first. NewIter returns one. It is the
// same interface as the iterators of every bloomkv package.
type InternalIterator = base.InternalIterator
