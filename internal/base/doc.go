// Package base holds the vocabulary every other bloomkv package speaks: the
// internal key (a user key tagged with a sequence number and a kind), the
// comparer that orders user keys, the internal iterator interface, file
// numbers and names, the ErrCorruption and ErrNewerFormat sentinels, and
// SetDefault, the rule by which every options type fills its zero fields.
//
// It imports nothing from the rest of the module, so the format packages
// (sstable, memtable) and the engine (kv, compaction) can share it without
// depending on each other.
package base
