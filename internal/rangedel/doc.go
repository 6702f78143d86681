// Package rangedel holds range tombstones and the one representation every
// layer stores and searches them in: fragments.
//
// A range tombstone [start, end)#seq deletes every version of every user
// key k with start <= k < end whose sequence number is below seq; readers
// at sequence numbers below seq do not see it. Tombstones written at
// different times overlap arbitrarily. Fragmenting cuts them at every start
// and end so that any two fragments either cover exactly the same span or
// do not overlap at all; the fragments of one span form a stack of
// sequence numbers:
//
//	written:     [a-------------e)#9
//	                  [c-------------------h)#5
//	fragmented:  [a---c)#9  [c---e)#9,#5  [e-----h)#5
//
// A fragmented list is sorted by start, and within one span by sequence
// number descending; it is how memtables cache their tombstones, how
// tables store them (one entry per fragment and sequence number, in this
// order) and how compactions and iterators search them. An empty span
// (start >= end) deletes nothing and is dropped, as Pebble does.
package rangedel
