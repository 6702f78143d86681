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
// A Split that cuts the seek key, or a key the seek meets, outside that
// key stops the iterator with an error wrapping ErrInvalidSplit, which no
// positioning call clears.
//
// What a prefix seek costs is counted in Metrics().Lookups: PrefixSeeks, and
// per level the tables considered, filter verdicts and block reads.
func (i *Iterator) SeekPrefixGE(key []byte) bool { return i.s != nil && i.s.seekPrefixGE(key) }

// seekPrefixGE is Iterator.SeekPrefixGE.
func (s *iterState) seekPrefixGE(key []byte) bool {
	if !s.reposition() {
		return false
	}
	if s.db.cmp.Split == nil {
		return s.invalidPrefixSeek("the DB's Comparer has no Split")
	}
	prefix, err := s.db.cmp.Prefix(key)
	if err != nil {
		return s.failSplit(err)
	}
	s.prefixBuf = append(s.prefixBuf[:0], prefix...)
	s.prefix = s.prefixBuf
	if s.prefix == nil {
		// An empty prefix (the empty key's) is still prefix mode, which
		// nil would end; appending nothing to a nil buffer gives nil.
		s.prefix = []byte{}
	}
	key, ok := s.clampPrefixSeek(key)
	if !ok {
		return false
	}
	s.db.metrics.prefixSeeks.Add(1)
	s.merging.SeekPrefixGE(s.prefix, key)
	ok = s.findNext()
	s.flushStats()
	return ok
}

// clampPrefixSeek moves a seek key outside the bounds onto the bound it
// crossed, as long as that bound has the same prefix.
func (s *iterState) clampPrefixSeek(key []byte) ([]byte, bool) {
	switch {
	case s.lower != nil && s.cmp(key, s.lower) < 0:
		if !s.db.cmp.HasPrefix(s.lower, s.prefix) {
			return nil, s.invalidPrefixSeek("key below LowerBound, of another prefix")
		}
		return s.lower, true
	case s.upper != nil && s.cmp(key, s.upper) > 0:
		if !s.db.cmp.HasPrefix(s.upper, s.prefix) {
			return nil, s.invalidPrefixSeek("key above UpperBound, of another prefix")
		}
		return s.upper, true
	}
	return key, true
}

// failSplit stops the iterator with the error of a Split that broke its
// contract; no positioning call clears it.
func (s *iterState) failSplit(err error) bool {
	s.valid, s.prefix = false, nil
	s.err = fmt.Errorf("kv: %w", err)
	return false
}

// invalidPrefixSeek fails the seek with an error wrapping
// ErrInvalidPrefixSeek.
func (s *iterState) invalidPrefixSeek(why string) bool {
	s.valid, s.prefix = false, nil
	s.err = fmt.Errorf("%w: %s", ErrInvalidPrefixSeek, why)
	return false
}

// hasPrefix reports whether userKey's prefix is the prefix mode's. A
// Split that cuts userKey outside it stops the iterator with an error.
func (s *iterState) hasPrefix(userKey []byte) bool {
	if !bytes.HasPrefix(userKey, s.prefix) {
		return false
	}
	p, err := s.db.cmp.Prefix(userKey)
	if err != nil {
		return s.failSplit(err)
	}
	return len(p) == len(s.prefix)
}

// reposition readies the iterator for an absolute positioning call: it
// leaves prefix mode and forgets an error of its misuse.
func (s *iterState) reposition() bool {
	s.prefix = nil
	if errors.Is(s.err, ErrReversePrefixIteration) || errors.Is(s.err, ErrInvalidPrefixSeek) {
		s.err = nil
	}
	return s.usable()
}

// flushStats adds what the tables' prefix seeks cost since the last flush
// to the DB's lookup counters.
func (s *iterState) flushStats() {
	for level := range s.stats {
		if st := &s.stats[level]; *st != (sstable.LookupStats{}) {
			s.counts.FilterNegatives += st.FilterNegatives
			s.db.metrics.levels[level].lookups.addStats(st)
			*st = sstable.LookupStats{}
		}
	}
}
