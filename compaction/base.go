package compaction

import (
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// The vocabulary of compactions, shared with the rest of bloomkv. Each name
// is an alias of the engine's own type or a copy of its value, so a program
// outside this module can call Run and the Picker and read what they
// return. Keys, sequence numbers, comparers and iterators are the same
// types as sstable's and memtable's.

// InternalKey is a user key with the sequence number and kind of one
// version of it; FileMetadata bounds a table with two of them. It is the
// same type as the internal key of every bloomkv package: its fields are
// UserKey []byte and Trailer uint64, seqnum<<8 | kind (see
// [github.com/bloomkv/bloomkv/sstable.InternalKey]).
type InternalKey = base.InternalKey

// SeqNum is a sequence number: a read at s sees the versions numbered s or
// lower; RunConfig.Snapshots lists some. It is the same type as the
// sequence number of every bloomkv package.
type SeqNum = base.SeqNum

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b. It is
// the same type as the engine's user-key comparison.
type Compare = base.Compare

// Comparer orders user keys. It is the same type as the comparer of every
// bloomkv package: [github.com/bloomkv/bloomkv/sstable.Comparer] documents
// its fields (Compare, Separator, Successor, Split, SplitName,
// AbbreviatedKey, Name), and [github.com/bloomkv/bloomkv/sstable.Split]
// the invariants a Split must keep.
type Comparer = base.Comparer

// InternalIterator walks internal keys in order: user keys ascending, the
// versions of one user key newest first. Run drains one; a memtable's or a
// table's iterator will do. It is the same interface as the iterators of
// every bloomkv package.
type InternalIterator = base.InternalIterator

// FileNum numbers a table. It is the same type as the file number of every
// bloomkv package.
type FileNum = base.FileNum

// FileMetadata describes one table. Run returns one per table it writes; a
// Version lists them by level. It is the same type as the table metadata of
// the engine's versions. Its fields:
//
//	FileNum                       FileNum      the table's number
//	Size                          uint64       its length in bytes
//	Smallest, Largest             InternalKey  its first and last internal
//	                                           keys, range tombstones
//	                                           included; a Largest that is
//	                                           a range-deletion sentinel
//	                                           excludes its user key
//	SmallestSeqNum, LargestSeqNum SeqNum       the bounds of its sequence
//	                                           numbers; among L0 tables, a
//	                                           larger LargestSeqNum is newer
//	NumEntries                    uint64       its entries: every version,
//	                                           tombstones included
//	FilterBytes                   uint64       its filter block's size,
//	                                           offsets and trailer included;
//	                                           0 without a filter
//	GlobalSeqNum                  SeqNum       when not 0, the one sequence
//	                                           number of all the keys of an
//	                                           ingested table, which the
//	                                           file stores as 0
type FileMetadata = manifest.FileMetadata

// Version is one state of a store's tables, by level; the Picker chooses
// compactions from one. It is the same type as the engine's version. Its
// one field, Levels [NumLevels][]*FileMetadata, lists each level's tables
// (L0 first). Build one with NewVersion.
type Version = manifest.Version

// NumLevels is the number of levels of a Version: L0 and L1..L6. It is the
// same value as the engine's.
const NumLevels = manifest.NumLevels

// NewFileMetadata returns the metadata of table n as its writer describes
// it once closed: what Run records for each table it writes, and what a
// table written directly with sstable.Writer needs to join a Version.
func NewFileMetadata(n FileNum, m sstable.WriterMetadata) *FileMetadata {
	return &FileMetadata{
		FileNum:        n,
		Size:           m.Size,
		Smallest:       m.Smallest,
		Largest:        m.Largest,
		SmallestSeqNum: m.SmallestSeqNum,
		LargestSeqNum:  m.LargestSeqNum,
		NumEntries:     m.Properties.NumEntries,
		FilterBytes:    m.Properties.FilterSize,
	}
}

// NewVersion returns the Version holding levels[i] at level i, ordered as
// a store keeps them: L0 oldest first (by LargestSeqNum, then FileNum),
// deeper levels by key under cmp (nil: sstable.DefaultComparer). It fails
// when a table is nil, a table number repeats, a table's smallest key or
// sequence number exceeds its largest, or a table below L0 shares a user
// key with another of its level: no Version may hold those. Each table
// counts the new Version as one holder (see FileMetadata.Refs).
func NewVersion(cmp *Comparer, levels [NumLevels][]*FileMetadata) (*Version, error) {
	if cmp == nil {
		cmp = base.DefaultComparer
	}
	var edit manifest.VersionEdit
	for level, files := range levels {
		for _, f := range files {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: level, Meta: f})
		}
	}
	v, err := (&manifest.Version{}).Apply(cmp.Compare, &edit)
	if err != nil {
		return nil, fmt.Errorf("compaction: building a version: %w", err)
	}
	return v, nil
}
