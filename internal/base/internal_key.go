package base

import (
	"encoding/binary"
	"fmt"
)

// SeqNum is a sequence number. Every write is assigned the next one at
// commit; a read at sequence number s sees exactly the writes numbered s or
// lower. Sequence numbers fit in 56 bits so they share a uint64 trailer with
// the kind.
type SeqNum uint64

// SeqNumMax is the largest sequence number. A search key built with it sorts
// before every stored version of the same user key.
const SeqNumMax SeqNum = 1<<56 - 1

// Kind says what an internal key records.
type Kind uint8

// The kinds of internal keys. Their values are stored on disk (in tables,
// the WAL and batches) and must never change.
const (
	// KindDelete is a tombstone: the user key has no value at this version.
	KindDelete Kind = 0
	// KindSet records a value.
	KindSet Kind = 1
	// KindRangeDelete is a range tombstone: every user key k with
	// start <= k < end has no value at this version or below. The internal
	// key holds start; the value holds end. Range tombstones live apart
	// from point keys (their own memtable skiplist, their own table
	// block), so no point-key stream ever carries this kind.
	KindRangeDelete Kind = 2
	// KindMax is the largest kind. Among keys with equal user key and
	// sequence number it sorts first, which makes (key, seq, KindMax) the
	// right search key for "the newest version at or below seq". It must
	// stay the largest kind as kinds are added: the search key built with
	// SeqNumMax then sorts at or before every stored key of its user key,
	// range-deletion sentinels included.
	KindMax Kind = KindRangeDelete
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindDelete:
		return "DEL"
	case KindSet:
		return "SET"
	case KindRangeDelete:
		return "RANGEDEL"
	}
	return fmt.Sprintf("KIND(%d)", uint8(k))
}

// TrailerLen is the length of the trailer that ends an encoded internal key.
const TrailerLen = 8

// InternalKey is a user key with the sequence number and kind of one version
// of it.
//
// Encoded, it is the user key followed by an 8-byte little-endian trailer
// holding seqnum<<8 | kind:
//
//	+----------------+----------------------------------+
//	| user key (n B) | trailer: seqnum<<8 | kind (8 B LE)|
//	+----------------+----------------------------------+
//
// Internal keys sort by user key ascending, then by trailer descending, so
// the newest version of a user key comes first.
type InternalKey struct {
	UserKey []byte
	Trailer uint64
}

// MakeInternalKey returns the internal key for one version of userKey.
func MakeInternalKey(userKey []byte, seq SeqNum, kind Kind) InternalKey {
	return InternalKey{UserKey: userKey, Trailer: MakeTrailer(seq, kind)}
}

// MakeSearchKey returns the internal key that sorts before every version of
// userKey: seeking to it lands on the newest version.
func MakeSearchKey(userKey []byte) InternalKey {
	return MakeInternalKey(userKey, SeqNumMax, KindMax)
}

// MakeRangeDeleteSentinel returns the key that bounds a table whose last
// range tombstone ends at end (exclusive): (end, SeqNumMax,
// KindRangeDelete). It sorts before every stored version of end, so a
// table whose Largest is a sentinel holds no key of end's user key (see
// IsExclusiveSentinel).
func MakeRangeDeleteSentinel(end []byte) InternalKey {
	return MakeInternalKey(end, SeqNumMax, KindRangeDelete)
}

// IsExclusiveSentinel reports whether k is a range-deletion sentinel (see
// MakeRangeDeleteSentinel): as a table's largest key it excludes its own
// user key.
func (k InternalKey) IsExclusiveSentinel() bool {
	return k.Trailer == MakeTrailer(SeqNumMax, KindRangeDelete)
}

// MakeTrailer packs a sequence number and a kind into a trailer.
func MakeTrailer(seq SeqNum, kind Kind) uint64 {
	return uint64(seq)<<8 | uint64(kind)
}

// SeqNum returns the key's sequence number.
func (k InternalKey) SeqNum() SeqNum { return SeqNum(k.Trailer >> 8) }

// Kind returns the key's kind.
func (k InternalKey) Kind() Kind { return Kind(k.Trailer & 0xff) }

// Size returns the length of the encoded key.
func (k InternalKey) Size() int { return len(k.UserKey) + TrailerLen }

// Encode writes the encoded key into buf, which must hold Size bytes.
func (k InternalKey) Encode(buf []byte) {
	n := copy(buf, k.UserKey)
	binary.LittleEndian.PutUint64(buf[n:], k.Trailer)
}

// AppendEncoded appends the encoded key to dst and returns the extended slice.
func (k InternalKey) AppendEncoded(dst []byte) []byte {
	dst = append(dst, k.UserKey...)
	return binary.LittleEndian.AppendUint64(dst, k.Trailer)
}

// Clone returns a copy of the key that shares no memory with it.
func (k InternalKey) Clone() InternalKey {
	return InternalKey{UserKey: append([]byte(nil), k.UserKey...), Trailer: k.Trailer}
}

// Visible reports whether this version can be seen by a read at seq.
func (k InternalKey) Visible(seq SeqNum) bool { return k.SeqNum() <= seq }

// String formats the key as "userkey#seq,KIND" for tests and tools, seq
// in decimal, or "max" for SeqNumMax: the sequence number of search keys,
// of index separators and of range-deletion sentinels ("end#max,RANGEDEL").
// ParseInternalKey is its inverse.
func (k InternalKey) String() string {
	return fmt.Sprintf("%s#%s,%s", k.UserKey, formatSeqNum(k.SeqNum()), k.Kind())
}

// DecodeInternalKey splits an encoded internal key. The user key aliases
// encoded. ok is false when encoded is too short to hold a trailer or the
// kind is unknown; callers report that as corruption.
func DecodeInternalKey(encoded []byte) (key InternalKey, ok bool) {
	n := len(encoded) - TrailerLen
	if n < 0 {
		return InternalKey{}, false
	}
	key = InternalKey{UserKey: encoded[:n:n], Trailer: binary.LittleEndian.Uint64(encoded[n:])}
	return key, key.Kind() <= KindMax
}

// InternalCompare orders internal keys: user key ascending under userCmp,
// then trailer descending.
func InternalCompare(userCmp Compare, a, b InternalKey) int {
	if c := userCmp(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	switch {
	case a.Trailer > b.Trailer:
		return -1
	case a.Trailer < b.Trailer:
		return 1
	}
	return 0
}
