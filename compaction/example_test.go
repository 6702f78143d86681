package compaction_test

import (
	"fmt"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/cockroachdb/pebble/vfs"
)

// Two sorted inputs merged, then compacted. The snapshot at 1 still sees
// apple's first value, so it stays; pear's deletion hides only a version no
// snapshot sees, and nothing lies below, so both go.
func ExampleRun() {
	older, newer := memtable.New(nil), memtable.New(nil)
	older.Add(base.MakeInternalKey([]byte("apple"), 1, base.KindSet), []byte("red"))
	older.Add(base.MakeInternalKey([]byte("pear"), 2, base.KindSet), []byte("green"))
	newer.Add(base.MakeInternalKey([]byte("apple"), 3, base.KindSet), []byte("yellow"))
	newer.Add(base.MakeInternalKey([]byte("pear"), 4, base.KindDelete), nil)

	input := compaction.NewMergingIter(base.DefaultComparer.Compare, newer.NewIter(nil, nil), older.NewIter(nil, nil))
	defer input.Close()
	fs := vfs.NewMem()
	var next base.FileNum
	tables, stats, err := compaction.Run(input, compaction.RunConfig{
		Snapshots:      []base.SeqNum{1},
		ElideTombstone: func([]byte) bool { return true }, // nothing below
		NewOutput: func() (base.FileNum, vfs.File, error) {
			next++
			f, err := fs.Create(base.MakeFilename(base.FileTypeTable, next))
			return next, f, err
		},
	})
	if err != nil {
		fmt.Println(err)
		return
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
