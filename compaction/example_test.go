package compaction_test

import (
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// Two sorted inputs merged, then compacted. The snapshot at 1 still sees
// apple's first value, so it stays; pear's deletion hides only a version no
// snapshot sees, and nothing lies below, so both go.
func ExampleRun() {
	older, newer := memtable.New(nil), memtable.New(nil)
	for _, err := range []error{
		older.Add(memtable.MakeInternalKey([]byte("apple"), 1, memtable.KindSet), []byte("red")),
		older.Add(memtable.MakeInternalKey([]byte("pear"), 2, memtable.KindSet), []byte("green")),
		newer.Add(memtable.MakeInternalKey([]byte("apple"), 3, memtable.KindSet), []byte("yellow")),
		newer.Add(memtable.MakeInternalKey([]byte("pear"), 4, memtable.KindDelete), nil),
	} {
		if err != nil {
			log.Fatal(err)
		}
	}

	input := compaction.NewMergingIter(sstable.DefaultComparer.Compare, newer.NewIter(nil, nil), older.NewIter(nil, nil))
	defer input.Close()
	fs := vfs.NewMem()
	var next compaction.FileNum
	tables, stats, err := compaction.Run(input, compaction.RunConfig{
		Snapshots:      []compaction.SeqNum{1},
		ElideTombstone: func([]byte) bool { return true }, // nothing below
		NewOutput: func() (compaction.FileNum, vfs.File, error) {
			next++
			f, err := fs.Create(next.String() + ".sst")
			return next, f, err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tables {
		fmt.Printf("%s: %d entries\n", t, t.NumEntries)
	}
	fmt.Printf("read %d, wrote %d, shadowed %d, tombstones elided %d\n",
		stats.EntriesIn, stats.EntriesOut, stats.Shadowed, stats.TombstonesElided)
	// Output:
	// 000001:[apple#3,SET-apple#1,SET]: 2 entries
	// read 4, wrote 2, shadowed 1, tombstones elided 1
}

// A Picker asked about a Version whose L0 holds as many tables as its
// threshold: all three overlapping L0 tables go down, with the L1 table
// under them.
func ExamplePicker_Pick() {
	var levels [compaction.NumLevels][]*compaction.FileMetadata
	levels[0] = []*compaction.FileMetadata{exampleTable(7, "c", "f", 30), exampleTable(5, "a", "d", 10), exampleTable(6, "b", "e", 20)}
	levels[1] = []*compaction.FileMetadata{exampleTable(2, "a", "c", 1), exampleTable(3, "x", "z", 2)}
	v, err := compaction.NewVersion(nil, levels)
	if err != nil {
		log.Fatal(err)
	}
	p := compaction.NewPicker(&compaction.Options{L0CompactionThreshold: 3}, nil)
	fmt.Printf("L0 score %.1f\n", p.Scores(v)[0])
	fmt.Println(p.Pick(v, nil))
	// Output:
	// L0 score 1.0
	// L0->L1 [000005 000006 000007] + [000002] range [a, f]
}

// A store whose writes have stopped asks PickOrSettle. Two overlapping
// L0 tables under a threshold of 4 make no level due, so Pick has
// nothing; but L0's read amplification, 2, has reached half the
// threshold, so L0 settles: both tables go down together, into the base
// level, L6 while nothing lies below L0.
func ExamplePicker_PickOrSettle() {
	var levels [compaction.NumLevels][]*compaction.FileMetadata
	levels[0] = []*compaction.FileMetadata{exampleTable(5, "a", "d", 10), exampleTable(6, "b", "e", 20)}
	v, err := compaction.NewVersion(nil, levels)
	if err != nil {
		log.Fatal(err)
	}
	p := compaction.NewPicker(&compaction.Options{L0CompactionThreshold: 4}, nil)
	fmt.Println("Pick:", p.Pick(v, nil))
	fmt.Println("PickOrSettle:", p.PickOrSettle(v, nil))
	// Output:
	// Pick: <nil>
	// PickOrSettle: L0->L6 [000005 000006] + [] range [a, e]
}

// exampleTable is the metadata of a 1 MiB table n holding keys smallest
// to largest, all at sequence number seq: the Picker examples' tables.
func exampleTable(n compaction.FileNum, smallest, largest string, seq compaction.SeqNum) *compaction.FileMetadata {
	return &compaction.FileMetadata{
		FileNum:        n,
		Size:           1 << 20,
		Smallest:       sstable.MakeInternalKey([]byte(smallest), seq, sstable.KindSet),
		Largest:        sstable.MakeInternalKey([]byte(largest), seq, sstable.KindSet),
		SmallestSeqNum: seq,
		LargestSeqNum:  seq,
	}
}
