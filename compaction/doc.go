// Package compaction decides what to compact in a bloomkv store and carries
// compactions out.
//
// It has three parts: a [Picker] that chooses compactions under a leveled
// scheme, a merging iterator ([NewMergingIter]) that reads several sorted
// inputs as one, and [Run], which drains such an input, drops what no reader
// can see any more and writes the rest as new tables.
package compaction
