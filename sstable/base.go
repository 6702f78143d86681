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
// Its fields are UserKey []byte and Trailer uint64, which packs the
// sequence number and the kind as seqnum<<8 | kind (the methods SeqNum
// and Kind unpack them; MakeInternalKey packs them). Encoded, it is the
// user key followed by the trailer, 8 bytes little-endian; internal keys
// sort by user key ascending, then by trailer descending, so the newest
// version of a user key comes first. String formats it "userkey#seq,KIND".
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

// Split returns the length of the prefix of a user key: the part a filter
// holds when a Comparer carries a Split, as Pebble's Comparer.Split does
// for an MVCC key's version suffix. Keys that share a prefix share a
// filter entry, so a filter can rule out a whole prefix (Get and
// SeekPrefixGE ask it about key[:Split(key)]).
//
// Split must return 0 <= n <= len(key) for every key the store may hold,
// and keep these invariants with prefix(k) = k[:Split(k)], for all keys a
// and b:
//
//  1. A prefix is a byte prefix of its key (it is a slice of it).
//  2. A prefix is its own prefix: Split(prefix(a)) == len(prefix(a)), and
//     it sorts before or at every key that bears it:
//     Compare(prefix(a), a) <= 0.
//  3. Prefixes order as their keys do: Compare(a, b) <= 0 implies
//     Compare(prefix(a), prefix(b)) <= 0. So the keys of one prefix are
//     contiguous in key order.
//  4. Split is deterministic and depends on the key alone.
//
// A Split that breaks them makes filters answer "absent" for present keys.
// Tables record the name of the Split their filters were built under
// (Comparer.SplitName), so changing how keys split needs a new name.
//
// It is the same type as the engine's Split.
type Split = base.Split

// Comparer orders user keys and names the ordering, which every table and
// the MANIFEST store: a store written under one ordering must never be read
// under another, so change Name whenever the order changes. It is the same
// type as the comparer of every bloomkv package. Its fields:
//
//	Compare   func(a, b []byte) int
//	    orders user keys: -1, 0 or +1.
//	Separator func(dst, a, b []byte) []byte
//	    appends to dst a key k with a <= k < b, preferably short, and
//	    returns the extended slice; index blocks store such separators in
//	    place of whole keys. It may append a itself.
//	Successor func(dst, a []byte) []byte
//	    appends to dst a key k >= a, preferably short; the index entry of
//	    a table's last block uses it.
//	Split     Split
//	    when not nil, makes filters hold key prefixes rather than whole
//	    keys; it must keep the invariants listed at [Split]. nil means
//	    whole keys: every key is its own prefix.
//	SplitName string
//	    names Split and must be set with it. Tables store it with their
//	    filters: a reader whose comparer splits differently (or not at
//	    all) reads such a table without its filter, correct but slower.
//	    Change it whenever Split changes.
//	AbbreviatedKey func(key []byte) uint64
//	    when not nil, a fixed-length summary of a user key that orders as
//	    the keys do wherever summaries differ: AbbreviatedKey(a) <
//	    AbbreviatedKey(b) implies Compare(a, b) < 0, and > implies > 0
//	    (Pebble's contract).
//	    It must hold for every key the store is given, sought or written.
//	    The memtable decides most steps of a search by it. A bytewise
//	    comparer needs none.
//	Name      string
//	    identifies the ordering.
//
// Its methods: Prefix(key) returns key[:Split(key)], or key itself without
// a Split; CheckSplit reports an error when only one of Split and
// SplitName is set; Bytewise reports whether Compare is bytes.Compare
// itself; Abbreviator returns the summary function the memtable uses (the
// first 8 bytes under a bytewise Compare, else AbbreviatedKey). [NewSplitComparer] builds the common one: bytewise, with a
// Split.
type Comparer = base.Comparer

// DefaultComparer orders keys bytewise; a nil Comparer in the options means
// it. It is the same comparer as the engine's default.
var DefaultComparer = base.DefaultComparer

// NewSplitComparer returns a comparer that orders keys bytewise, as
// DefaultComparer does and under its Name, with split as its Split, named
// splitName (see [Comparer]). It is the comparer of the common prefix
// setup: keys such as "user/42/name" whose filters should hold a prefix
// ("user/42/"). split must keep the invariants listed at [Split]. Since
// the ordering is DefaultComparer's, a store written without a Split opens
// under it, and its tables are read without their filters until
// compactions rewrite them.
func NewSplitComparer(splitName string, split Split) *Comparer {
	return base.NewSplitComparer(splitName, split)
}

// PrefixEnd returns the smallest key, under bytewise order, that sorts
// after every key beginning with prefix: prefix with its last byte below
// 0xff incremented and what follows that byte dropped. [prefix,
// PrefixEnd(prefix)) is then the range of the keys bearing prefix, for a
// DeleteRange and for iterator bounds (Pebble users write such a helper,
// or reach for Comparer.ImmediateSuccessor). It returns nil when no such
// key exists (prefix is empty or all 0xff bytes): the range then has no
// upper end. The result does not alias prefix.
func PrefixEnd(prefix []byte) []byte { return base.PrefixEnd(prefix) }

// ImmediateSuccessor returns the smallest key, under bytewise order, that
// sorts after key: key followed by a zero byte, as Pebble's
// DefaultComparer.ImmediateSuccessor gives. [key, ImmediateSuccessor(key))
// holds key alone, so it turns an inclusive end into the exclusive end that
// DeleteRange and upper bounds take. The result does not alias key.
func ImmediateSuccessor(key []byte) []byte { return base.ImmediateSuccessor(key) }

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
