// Command extmod uses bloomkv's public packages the way a program in another
// module does: it imports nothing under internal/. TestExternalModule builds
// it in a module of its own and checks its output against want.txt.
package main

import (
	"errors"
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

func main() {
	fs := vfs.NewMem()
	policy, err := bloompolicy.New(0.01)
	check(err)
	filters()
	meta := writeTable(fs, policy)
	readTable(fs, policy)
	mem := fillMemTable()
	compact(fs, policy, mem, meta)
	store()
}

// filters builds standalone filters with bloomkv's policy and Pebble's.
func filters() {
	ours, err := bloompolicy.NewBitsPerKey(10)
	check(err)
	for _, p := range []bloompolicy.FilterPolicy{ours, pebbleadapter.FromPebble(bloom.FilterPolicy(10))} {
		w := p.NewWriter()
		w.AddKey([]byte("apple"))
		w.AddKey([]byte("cherry"))
		f := w.Finish(nil)
		fmt.Printf("filter %s: apple %v, durian %v\n", p.Name(),
			p.MayContain(f, []byte("apple")), p.MayContain(f, []byte("durian")))
	}
}

// writeTable writes 000001.sst: four versions of three keys, a Bloom filter
// per block.
func writeTable(fs vfs.FS, policy bloompolicy.FilterPolicy) sstable.WriterMetadata {
	f, err := fs.Create("000001.sst")
	check(err)
	w := sstable.NewWriter(f, sstable.WriterOptions{FilterPolicy: policy, Comparer: sstable.DefaultComparer})
	entries := []struct {
		key   string
		seq   sstable.SeqNum
		kind  sstable.Kind
		value string
	}{
		{"apple", 3, sstable.KindSet, "red"},
		{"banana", 5, sstable.KindDelete, ""},
		{"banana", 2, sstable.KindSet, "yellow"},
		{"cherry", 4, sstable.KindSet, "dark"},
	}
	for _, e := range entries {
		check(w.Add(sstable.MakeInternalKey([]byte(e.key), e.seq, e.kind), []byte(e.value)))
	}
	check(w.Close())
	m := w.Metadata()
	fmt.Printf("table: %d entries, keys %s to %s, filter %s\n",
		m.Properties.NumEntries, m.Smallest, m.Largest, m.Properties.FilterPolicyName)
	return m
}

// readTable looks keys up and iterates the table.
func readTable(fs vfs.FS, policy bloompolicy.FilterPolicy) {
	f, err := fs.Open("000001.sst")
	check(err)
	var n sstable.FileNum = 1
	r, err := sstable.NewReader(f, sstable.ReaderOptions{
		Cache:    sstable.NewCache(1 << 20),
		FileNum:  n,
		Filters:  map[string]bloompolicy.FilterPolicy{policy.Name(): policy},
		FileName: "000001.sst",
	})
	check(err)
	defer r.Close()

	var stats sstable.LookupStats
	for _, k := range []string{"apple", "banana", "blueberry"} {
		v, kind, found, err := r.Get([]byte(k), sstable.SeqNumMax, &stats)
		check(err)
		fmt.Printf("table get %s: %s\n", k, describe(found, kind, v))
	}
	fmt.Printf("filter negatives %d, block reads %d\n", stats.FilterNegatives, stats.BlockReads)

	smallest, ok := sstable.DecodeInternalKey(r.Properties().SmallestKey)
	fmt.Println("smallest key from the properties:", smallest, ok)
	var it sstable.InternalIterator
	it, err = r.NewIter(nil)
	check(err)
	var prev sstable.InternalKey
	for ok := it.First(); ok; ok = it.Next() {
		if prev.UserKey != nil && sstable.InternalCompare(sstable.DefaultComparer.Compare, prev, it.Key()) >= 0 {
			log.Fatalf("iterator out of order at %s", it.Key())
		}
		prev = it.Key().Clone()
		fmt.Printf("table iter %s = %q\n", it.Key(), it.Value())
	}
	check(it.Close())
}

// fillMemTable adds newer versions of two keys to a memtable, reads them
// back and iterates it.
func fillMemTable() *memtable.MemTable {
	mem := memtable.New(memtable.DefaultComparer)
	check(mem.Add(memtable.MakeInternalKey([]byte("apple"), 7, memtable.KindSet), []byte("green")))
	check(mem.Add(memtable.MakeInternalKey([]byte("cherry"), 8, memtable.KindDelete), nil))
	err := mem.Add(memtable.MakeInternalKey([]byte("apple"), 7, memtable.KindSet), []byte("again"))
	fmt.Println("memtable add twice:", errors.Is(err, memtable.ErrDuplicateKey))
	var before memtable.SeqNum = 6
	v, kind, found := mem.Get([]byte("apple"), before)
	fmt.Printf("memtable get apple at 6: %s\n", describe(found, kind, v))
	v, kind, found = mem.Get([]byte("apple"), memtable.SeqNumMax)
	fmt.Printf("memtable get apple, newest: %s\n", describe(found, kind, v))
	var it memtable.InternalIterator = mem.NewIter(nil, nil)
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("memtable iter %s\n", it.Key())
	}
	check(it.Close())
	return mem
}

// compact rewrites the table with compaction.Run, keeping what a snapshot
// at 2 sees, then the table merged with the memtable; then asks a Picker
// about the result.
func compact(fs vfs.FS, policy bloompolicy.FilterPolicy, mem *memtable.MemTable, table sstable.WriterMetadata) {
	f, err := fs.Open("000001.sst")
	check(err)
	r, err := sstable.NewReader(f, sstable.ReaderOptions{})
	check(err)
	defer r.Close()
	input, err := r.NewIter(nil)
	check(err)
	defer input.Close()

	var next compaction.FileNum = 1
	cfg := compaction.RunConfig{
		Comparer:       sstable.DefaultComparer,
		Snapshots:      []compaction.SeqNum{2},
		ElideTombstone: func([]byte) bool { return true },
		NewOutput: func() (compaction.FileNum, vfs.File, error) {
			next++
			f, err := fs.Create(next.String() + ".sst")
			return next, f, err
		},
		Writer: sstable.WriterOptions{FilterPolicy: policy},
	}
	l1, stats, err := compaction.Run(input, cfg)
	check(err)
	fmt.Printf("run over the table: %d in, %d out, %d shadowed -> %s\n",
		stats.EntriesIn, stats.EntriesOut, stats.Shadowed, l1)

	again, err := r.NewIter(nil)
	check(err)
	merged := compaction.NewMergingIter(sstable.DefaultComparer.Compare, mem.NewIter(nil, nil), again)
	defer merged.Close()
	l0, stats, err := compaction.Run(merged, cfg)
	check(err)
	fmt.Printf("run over the memtable and the table: %d in, %d out, %d shadowed, %d tombstones elided -> %s\n",
		stats.EntriesIn, stats.EntriesOut, stats.Shadowed, stats.TombstonesElided, l0)
	old := compaction.NewFileMetadata(1, table)
	var levels [compaction.NumLevels][]*compaction.FileMetadata
	levels[0] = append(l0, old)
	levels[1] = l1
	v, err := compaction.NewVersion(nil, levels)
	check(err)
	fmt.Print(v.Describe(func(f *compaction.FileMetadata) string { return fmt.Sprintf("entries=%d", f.NumEntries) }))

	p := compaction.NewPicker(&compaction.Options{L0CompactionThreshold: 2}, nil)
	c := p.Pick(v, nil)
	if c == nil {
		log.Fatalf("nothing picked from scores %v", p.Scores(v))
	}
	fmt.Println("picked:", c)
	fmt.Println("conflicts with itself:", c.Conflicts(sstable.DefaultComparer.Compare, []*compaction.Compaction{c}))
	_, err = compaction.NewVersion(nil, [compaction.NumLevels][]*compaction.FileMetadata{1: {old, old}})
	fmt.Println("a table twice:", err != nil)
}

// store opens a kv.DB in memory, and shows ErrorIfNotExists and
// ErrorIfExists.
func store() {
	fs := vfs.NewMem()
	_, err := kv.Open("db", &kv.Options{FS: fs, ErrorIfNotExists: true})
	fmt.Println("open missing store:", errors.Is(err, kv.ErrDBDoesNotExist))
	db, err := kv.Open("db", &kv.Options{FS: fs, ErrorIfExists: true})
	check(err)
	check(db.Set([]byte("k"), []byte("v"), kv.Sync))
	v, err := db.Get([]byte("k"))
	check(err)
	fmt.Printf("kv get k: %s\n", v)
	check(db.Close())
	_, err = kv.Open("db", &kv.Options{FS: fs, ErrorIfExists: true})
	fmt.Println("create existing store:", errors.Is(err, kv.ErrDBAlreadyExists))
	fmt.Println("corruption sentinel shared:", kv.ErrCorruption == sstable.ErrCorruption)
}

// describe tells what a lookup found. kind is sstable.Kind and
// memtable.Kind alike: the one type of bloomkv's internal keys.
func describe(found bool, kind sstable.Kind, v []byte) string {
	switch {
	case !found:
		return "not found"
	case kind == memtable.KindDelete:
		return "deleted"
	}
	return fmt.Sprintf("%q", v)
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
