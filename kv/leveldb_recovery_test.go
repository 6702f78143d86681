package kv_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestLevelDB_Recover ports DBTest.Recover: writes survive reopens, each
// reopen replaying the WAL and taking new writes on top.
func TestLevelDB_Recover(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	ldbSet(t, db, "foo", "v1")
	ldbSet(t, db, "baz", "v5")
	db = ldbReopen(t, db, fs, nil)
	ldbWant(t, db, "foo", "v1")
	ldbWant(t, db, "baz", "v5")
	ldbSet(t, db, "bar", "v2")
	ldbSet(t, db, "foo", "v3")
	db = ldbReopen(t, db, fs, nil)
	ldbWant(t, db, "foo", "v3")
	ldbSet(t, db, "foo", "v4")
	ldbWant(t, db, "foo", "v4")
	ldbWant(t, db, "bar", "v2")
	ldbWant(t, db, "baz", "v5")
	ldbClose(t, db)
}

// TestLevelDB_RecoveryWithEmptyLog ports DBTest.RecoveryWithEmptyLog: a
// reopen that leaves an empty WAL behind loses nothing at the next one.
func TestLevelDB_RecoveryWithEmptyLog(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	ldbSet(t, db, "foo", "v1")
	ldbSet(t, db, "foo", "v2")
	db = ldbReopen(t, db, fs, nil)
	db = ldbReopen(t, db, fs, nil)
	ldbSet(t, db, "foo", "v3")
	db = ldbReopen(t, db, fs, nil)
	ldbWant(t, db, "foo", "v3")
	ldbClose(t, db)
}

// TestLevelDB_RecoverDuringMemtableCompaction ports
// DBTest.RecoverDuringMemtableCompaction: writes that switched memtables
// (a value bigger than the memtable among them) are all there after a
// reopen, flushed or not.
func TestLevelDB_RecoverDuringMemtableCompaction(t *testing.T) {
	fs := vfs.NewMem()
	o := ldbSmall(64 << 10)
	db := ldbOpen(t, fs, o)
	big1 := strings.Repeat("x", 300<<10)
	big2 := strings.Repeat("y", 1000)
	ldbSet(t, db, "foo", "v1")
	ldbSet(t, db, "big1", big1)
	ldbSet(t, db, "big2", big2)
	ldbSet(t, db, "bar", "v2")
	db = ldbReopen(t, db, fs, o)
	ldbWant(t, db, "foo", "v1")
	ldbWant(t, db, "bar", "v2")
	ldbWant(t, db, "big1", big1)
	ldbWant(t, db, "big2", big2)
	ldbClose(t, db)
}

// TestLevelDB_MinorCompactionsHappen ports DBTest.MinorCompactionsHappen:
// writing five hundred times a 10 KB memtable flushes it to tables, and
// every value reads back, before and after a reopen.
func TestLevelDB_MinorCompactionsHappen(t *testing.T) {
	fs := vfs.NewMem()
	o := ldbSmall(10000)
	db := ldbOpen(t, fs, o)
	n := 500
	if testing.Short() {
		n = 200
	}
	value := func(i int) string { return ldbKey(i) + strings.Repeat("v", 1000) }
	before := db.Metrics().Flush.Count
	for i := range n {
		ldbSet(t, db, ldbKey(i), value(i))
	}
	if after := db.Metrics().Flush.Count; after <= before {
		t.Fatalf("flushes %d before, %d after %d KB of writes", before, after, n)
	}
	for i := range n {
		ldbWant(t, db, ldbKey(i), value(i))
	}
	db = ldbReopen(t, db, fs, o)
	for i := range n {
		ldbWant(t, db, ldbKey(i), value(i))
	}
	ldbClose(t, db)
}

// TestLevelDB_RecoverWithLargeLog ports DBTest.RecoverWithLargeLog: a WAL
// written under big memtables is replayed by a store opened with small
// ones. (LevelDB asserts that the replay writes three L0 tables; bloomkv
// replays into memtables, so this port asserts the values, after the
// reopen and after a flush and another reopen.)
func TestLevelDB_RecoverWithLargeLog(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	want := map[string]string{
		"big1":   strings.Repeat("1", 200000),
		"big2":   strings.Repeat("2", 200000),
		"small3": strings.Repeat("3", 10),
		"small4": strings.Repeat("4", 10),
	}
	for _, k := range []string{"big1", "big2", "small3", "small4"} {
		ldbSet(t, db, k, want[k])
	}
	small := ldbSmall(100000)
	for round := range 2 {
		db = ldbReopen(t, db, fs, small)
		for k, v := range want {
			ldbWant(t, db, k, v)
		}
		if round == 0 {
			ldbFlush(t, db)
		}
	}
	ldbClose(t, db)
}

// TestLevelDB_CompactionsGenerateMultipleFiles ports
// DBTest.CompactionsGenerateMultipleFiles: compacting more than a target
// file size of data writes several tables, and every value reads back.
func TestLevelDB_CompactionsGenerateMultipleFiles(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: 64 << 20, TargetFileSize: 64 << 10}
	db := ldbOpen(t, fs, o)
	rng := rand.New(rand.NewPCG(301, 0))
	values := make([]string, 80)
	for i := range values {
		values[i] = ldbRandom(rng, 10000)
		ldbSet(t, db, ldbKey(i), values[i])
	}
	db = ldbReopen(t, db, fs, o)
	ldbCompact(t, db, "", "")
	if n := ldbTables(db); n <= 1 {
		t.Fatalf("compacting 800 KB at a 64 KB target wrote %d tables (%s)", n, ldbLevels(db))
	}
	for i, v := range values {
		ldbWant(t, db, ldbKey(i), v)
	}
	ldbClose(t, db)
}

// TestLevelDB_RepeatedWritesToSameKey ports
// DBTest.RepeatedWritesToSameKey: overwriting one key with values twice
// the memtable's size keeps the store within the tables L0's stop
// threshold and the levels allow; compactions keep up.
func TestLevelDB_RepeatedWritesToSameKey(t *testing.T) {
	const size = 16 << 10
	o := ldbSmall(size)
	db := ldbOpen(t, vfs.NewMem(), o)
	defer ldbClose(t, db)
	maxFiles := 7 + kv.DefaultL0StopWritesThreshold
	rng := rand.New(rand.NewPCG(301, 0))
	value := ldbRandom(rng, 2*size)
	rounds := 5 * maxFiles
	if testing.Short() {
		rounds = 2 * maxFiles
	}
	for i := range rounds {
		ldbSet(t, db, "key", value)
		if n := ldbTables(db); n > maxFiles {
			t.Fatalf("after write %d: %d tables (%s), want at most %d", i, n, ldbLevels(db), maxFiles)
		}
	}
	ldbWant(t, db, "key", value)
}

// TestLevelDB_SparseMerge ports DBTest.SparseMerge: a small update to keys
// at both ends of a large range (A, B100, C) followed by a flush does not
// make the automatic compactions rewrite the whole range below. (LevelDB
// bounds the bytes a future compaction would read,
// MaxNextLevelOverlappingBytes; the port bounds the bytes the background
// compactions that follow read.)
func TestLevelDB_SparseMerge(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{TargetFileSize: 64 << 10})
	defer ldbClose(t, db)
	n := 10000
	if testing.Short() {
		n = 3000
	}
	rng := rand.New(rand.NewPCG(301, 0))
	b := db.NewBatch()
	b.Set([]byte("A"), []byte("va"))
	for i := range n {
		b.Set([]byte(fmt.Sprintf("B%010d", i)), []byte(ldbRandom(rng, 100)))
	}
	b.Set([]byte("C"), []byte("vc"))
	if err := db.Apply(b, kv.NoSync); err != nil {
		t.Fatal(err)
	}
	ldbCompact(t, db, "", "")
	total := uint64(0)
	for _, l := range db.Metrics().Levels {
		total += uint64(l.Size)
	}
	for round := range 3 {
		before := db.Metrics().Compact.BytesRead
		ldbSet(t, db, "A", fmt.Sprint("va", round))
		ldbSet(t, db, "B100", fmt.Sprint("bvalue", round))
		ldbSet(t, db, "C", fmt.Sprint("vc", round))
		ldbFlush(t, db)
		waitLDB(t, db)
		if read := uint64(db.Metrics().Compact.BytesRead - before); read > total/2 {
			t.Fatalf("round %d: a flush of three keys made compactions read %d bytes of a %d-byte store", round, read, total)
		}
	}
	ldbWant(t, db, "A", "va2")
	ldbWant(t, db, "B100", "bvalue2")
	ldbWant(t, db, "C", "vc2")
}

// TestLevelDB_ApproximateSizes ports DBTest.ApproximateSizes to
// EstimateDiskUsage: nothing for an empty store or one whose writes are
// all in the memtable; after a flush and after a compaction into several
// tables, about one value's size per key of a range, for every prefix of
// the keys (EstimateDiskUsage's end is inclusive, LevelDB's exclusive: a
// range to key i holds i+1 keys).
func TestLevelDB_ApproximateSizes(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: 64 << 20, TargetFileSize: 100 << 10}
	db := ldbOpen(t, fs, o)
	defer func() { ldbClose(t, db) }()
	usage := func(start, end string) uint64 {
		t.Helper()
		var s []byte
		if start != "" {
			s = []byte(start)
		}
		n, err := db.EstimateDiskUsage(s, []byte(end))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := usage("", "xyz"); n != 0 {
		t.Fatalf("empty store: %d bytes", n)
	}
	const n, size = 80, 10000
	rng := rand.New(rand.NewPCG(301, 0))
	for i := range n {
		ldbSet(t, db, ldbKey(i), ldbRandom(rng, size))
	}
	if got := usage("", ldbKey(50)); got != 0 {
		t.Fatalf("writes in the memtable: %d bytes", got)
	}
	for _, step := range []string{"flush", "reopen", "compact"} {
		switch step {
		case "flush":
			ldbFlush(t, db)
		case "reopen":
			db = ldbReopen(t, db, fs, o)
		case "compact":
			ldbCompact(t, db, "", "")
		}
		for i := 0; i < n; i += 10 {
			got := usage("", ldbKey(i))
			if lo, hi := uint64(i*size), uint64((i+1)*(size+500)+4096); got < lo || got > hi {
				t.Fatalf("%s: usage to %s = %d, want in [%d, %d] (%s)", step, ldbKey(i), got, lo, hi, ldbLevels(db))
			}
			if got := usage(ldbKey(i), ldbKey(i)); got < size || got > 2*size+4096 {
				t.Fatalf("%s: usage of %s alone = %d, want about %d", step, ldbKey(i), got, size)
			}
		}
		if got := usage(ldbKey(n), "xyz"); got != 0 {
			t.Fatalf("%s: usage past the keys = %d", step, got)
		}
	}
	if n := ldbTables(db); n < 2 {
		t.Fatalf("compaction wrote %d tables, want several", n)
	}
}

// TestLevelDB_ApproximateSizesMixOfSmallAndLarge ports
// DBTest.ApproximateSizes_MixOfSmallAndLarge: with values of 10,000,
// 100 and 300,000 bytes mixed, the usage of each prefix of the keys sums
// the sizes of its values, after a flush and after a compaction into
// several tables. (LevelDB's offset of key i counts the blocks before
// it; bloomkv's inclusive end counts key i's block too.)
func TestLevelDB_ApproximateSizesMixOfSmallAndLarge(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{MemTableSize: 64 << 20, TargetFileSize: 100 << 10})
	defer ldbClose(t, db)
	sizes := []int{10000, 10000, 100, 10000, 10000, 300000, 10000, 10000}
	rng := rand.New(rand.NewPCG(301, 0))
	for i, n := range sizes {
		ldbSet(t, db, ldbKey(i), ldbRandom(rng, n))
	}
	for _, step := range []string{"flush", "compact"} {
		if step == "flush" {
			ldbFlush(t, db)
		} else {
			ldbCompact(t, db, "", "")
		}
		sum := 0
		for i, n := range sizes {
			sum += n
			got, err := db.EstimateDiskUsage(nil, []byte(ldbKey(i)))
			if err != nil {
				t.Fatal(err)
			}
			// The estimate counts whole data blocks, and a value
			// under the block size shares its block with the next
			// entry, which then counts too.
			hi := sum
			if n < kv.DefaultBlockSize && i+1 < len(sizes) {
				hi += sizes[i+1]
			}
			if lo, hi := uint64(sum), uint64(hi+hi/20+5000); got < lo || got > hi {
				t.Fatalf("%s: usage to %s = %d, want in [%d, %d] (%s)", step, ldbKey(i), got, lo, hi, ldbLevels(db))
			}
		}
	}
}

// TestLevelDB_IteratorPinsRef ports DBTest.IteratorPinsRef: an iterator
// keeps showing the store as it was made, while writes fill memtables,
// flush and compact the tables it reads away.
func TestLevelDB_IteratorPinsRef(t *testing.T) {
	const size = 16 << 10
	db := ldbOpen(t, vfs.NewMem(), ldbSmall(size))
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "hello")
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	ldbSet(t, db, "foo", "newvalue1")
	big := strings.Repeat("v", size)
	for i := range 100 {
		ldbSet(t, db, ldbKey(i), big)
	}
	ldbSet(t, db, "foo", "newvalue2")
	ldbCompact(t, db, "", "")
	if !it.First() || string(it.Key()) != "foo" || string(it.Value()) != "hello" {
		t.Fatalf("iterator shows %q=%q, want foo=hello", it.Key(), it.Value())
	}
	if it.Next() {
		t.Fatalf("iterator shows %q after foo", it.Key())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}

// TestLevelDB_Snapshot ports DBTest.Snapshot: three snapshots each read
// the version they saw, through a flush, and closing one leaves the
// others (and the store) reading right.
func TestLevelDB_Snapshot(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "v1")
	s1 := db.NewSnapshot()
	ldbSet(t, db, "foo", "v2")
	s2 := db.NewSnapshot()
	s3 := db.NewSnapshot()
	ldbSet(t, db, "foo", "v3")
	ldbFlush(t, db)
	ldbSet(t, db, "foo", "v4")
	check := func(s *kv.Snapshot, want string) {
		t.Helper()
		ldbWant(t, s, "foo", want)
	}
	check(s1, "v1")
	check(s2, "v2")
	check(s3, "v2")
	ldbWant(t, db, "foo", "v4")
	must1(t, s3.Close())
	check(s1, "v1")
	check(s2, "v2")
	ldbCompact(t, db, "", "")
	must1(t, s1.Close())
	check(s2, "v2")
	ldbWant(t, db, "foo", "v4")
	must1(t, s2.Close())
	ldbWant(t, db, "foo", "v4")
}

func must1(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
