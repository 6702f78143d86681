package kv

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/sstable"
)

// SeekPrefixGE moves to the first key >= key that has key's prefix under
// the DB's Comparer.Split, asking each table's filters about the prefix
// first: a table whose filter rules it out costs no data-block read. It
// reports whether it found such a key. It needs a Comparer with a Split;
// without one it fails with an error wrapping ErrInvalidPrefixSeek.
//
// It puts the iterator in prefix mode, as Pebble's SeekPrefixGE does, until
// the next absolute positioning call (First, Last, SeekGE or SeekLT, which
// behave as ever and leave the mode; or SeekPrefixGE again). In prefix
// mode:
//   - Next stops at the end of the prefix: it never shows a key of another
//     prefix;
//   - Prev is not supported: it makes the iterator invalid with the error
//     ErrReversePrefixIteration, until the next absolute positioning call.
//
// A key below LowerBound is moved up to it when the bound has the same
// prefix, and fails with ErrInvalidPrefixSeek otherwise; likewise above
// UpperBound. For keys that merely share a leading string, bounds are the
// tool: SeekPrefixGE is for a comparer whose Split cuts keys where the
// filters should.
//
// What a prefix seek costs is counted in Metrics().Lookups: PrefixSeeks, and
// per level the tables considered, filter verdicts and block reads.
func (i *Iterator) SeekPrefixGE(key []byte) bool { return i.s != nil && i.s.seekPrefixGE(key) }

// seekPrefixGE is Iterator.SeekPrefixGE.
func (i *iterState) seekPrefixGE(key []byte) bool {
	if !i.reposition() {
		return false
	}
	split := i.db.cmp.Split
	if split == nil {
		return i.invalidPrefixSeek("the DB's Comparer has no Split")
	}
	i.prefixBuf = append(i.prefixBuf[:0], key[:split(key)]...)
	i.prefix = i.prefixBuf
	key, ok := i.clampPrefixSeek(key)
	if !ok {
		return false
	}
	i.db.metrics.prefixSeeks.Add(1)
	i.merging.SeekPrefixGE(i.prefix, key)
	ok = i.findNext()
	i.flushStats()
	return ok
}

// clampPrefixSeek moves a seek key outside the bounds onto the bound it
// crossed, as long as that bound has the same prefix.
func (i *iterState) clampPrefixSeek(key []byte) ([]byte, bool) {
	switch {
	case i.lower != nil && i.cmp(key, i.lower) < 0:
		if !bytes.Equal(i.db.cmp.Prefix(i.lower), i.prefix) {
			return nil, i.invalidPrefixSeek("key below LowerBound, of another prefix")
		}
		return i.lower, true
	case i.upper != nil && i.cmp(key, i.upper) > 0:
		if !bytes.Equal(i.db.cmp.Prefix(i.upper), i.prefix) {
			return nil, i.invalidPrefixSeek("key above UpperBound, of another prefix")
		}
		return i.upper, true
	}
	return key, true
}

// invalidPrefixSeek fails the seek with an error wrapping
// ErrInvalidPrefixSeek.
func (i *iterState) invalidPrefixSeek(why string) bool {
	i.valid, i.prefix = false, nil
	i.err = fmt.Errorf("%w: %s", ErrInvalidPrefixSeek, why)
	return false
}

// hasPrefix reports whether userKey's prefix is the prefix mode's.
func (i *iterState) hasPrefix(userKey []byte) bool {
	return bytes.HasPrefix(userKey, i.prefix) && i.db.cmp.Split(userKey) == len(i.prefix)
}

// reposition readies the iterator for an absolute positioning call: it
// leaves prefix mode and forgets an error of its misuse.
func (i *iterState) reposition() bool {
	i.prefix = nil
	if errors.Is(i.err, ErrReversePrefixIteration) || errors.Is(i.err, ErrInvalidPrefixSeek) {
		i.err = nil
	}
	return i.usable()
}

// flushStats adds what the tables' prefix seeks cost since the last flush
// to the DB's lookup counters.
func (i *iterState) flushStats() {
	for level := range i.stats {
		if s := &i.stats[level]; *s != (sstable.LookupStats{}) {
			i.db.metrics.levels[level].lookups.addStats(s)
			*s = sstable.LookupStats{}
		}
	}
}
