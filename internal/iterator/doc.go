// Package iterator holds the read path's iterators over internal keys: the
// pieces a store assembles into one sorted view of its memtables and
// tables, for user iterators and for compactions alike.
//
//   - [Merging] merges any number of sorted inputs into one stream in
//     internal-key order, forward and backward, keeping every entry (it
//     drops nothing: hiding shadowed versions is the reader's job, and
//     dropping them the compaction's).
//   - [Level] reads the tables of one sorted, non-overlapping level as one
//     input, opening a table only when the iteration reaches it, through a
//     [TableOpener] the store supplies (kv backs it with its table cache),
//     so this package opens no files itself.
//
// A user iterator of the kv package is a Merging over the memtables, one
// Level per L0 table and one Level per deeper level:
//
//	Merging
//	├── memtable, immutable memtables (newest first)
//	├── Level{one L0 table} ... (newest first)
//	└── Level{L1 tables} ... Level{L6 tables}
//
// Every iterator here implements base.InternalIterator, and reports the
// first error of any input through Valid (false) and Error.
package iterator
