package kv_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// rbLongKeys returns keys of 127 to 300 bytes that share long prefixes:
// for each length, keys differing in their last bytes, a key that is a
// prefix of the others, and keys that extend one by a byte. Their shared
// prefixes, 124 to 299 bytes, need two-byte varints in a block entry, and
// often exceed what is left of the block after them.
func rbLongKeys(n int) []string {
	var keys []string
	for _, l := range []int{127, 128, 129, 200, 255, 256, 257, 300} {
		p := strings.Repeat("k", l-4)
		for j := range n {
			keys = append(keys, fmt.Sprintf("%s%04d", p, j*2))
		}
		keys = append(keys, p, p+"\x00", p+"0000\x00", p+"\xff")
	}
	keys = append(keys, strings.Repeat("k", 127)+"j", strings.Repeat("k", 299)+"l")
	slices.Sort(keys)
	return slices.Compact(keys)
}

// rbValue returns value i of a long-key scenario: empty, short, or
// longer than a small block.
func rbValue(rng *rand.Rand, i int) string {
	switch i % 5 {
	case 0:
		return ""
	case 1:
		return ldbRandom(rng, 300)
	}
	return fmt.Sprintf("v%d", i)
}

// rbSeeks checks SeekGE and SeekLT at every key of keys and at a key
// just after and just before each (the key extended by a zero byte, the
// key less its last byte), against model.
func rbSeeks(t *testing.T, r ldbIterable, model map[string]string, keys []string, what string) {
	t.Helper()
	sorted := slices.Sorted(maps.Keys(model))
	it, err := r.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for _, k := range keys {
		for _, target := range []string{k, k + "\x00", k[:len(k)-1]} {
			i, _ := slices.BinarySearch(sorted, target)
			if i < len(sorted) != it.SeekGE([]byte(target)) || i < len(sorted) && string(it.Key()) != sorted[i] {
				t.Fatalf("%s: SeekGE(%s) at %s, want %d of %d", what, ldbShort(target), rbAt(it), i, len(sorted))
			}
			if i > 0 != it.SeekLT([]byte(target)) || i > 0 && string(it.Key()) != sorted[i-1] {
				t.Fatalf("%s: SeekLT(%s) at %s, want %d of %d", what, ldbShort(target), rbAt(it), i-1, len(sorted))
			}
			if i > 0 && string(it.Value()) != model[sorted[i-1]] {
				t.Fatalf("%s: SeekLT(%s) value %s, want %s", what, ldbShort(target), ldbShort(string(it.Value())), ldbShort(model[sorted[i-1]]))
			}
		}
	}
	must1(t, it.Error())
}

func rbAt(it *kv.Iterator) string {
	if !it.Valid() {
		return "(invalid)"
	}
	return ldbShort(string(it.Key()))
}

// TestRocksDBBasic_LongSharedPrefixKeys ports the long-key scenarios of
// DBTest.GetSnapshot (a 200-byte key) and DBTest2's tests of keys sharing
// prefixes, widened to keys of 127 to 300 bytes: under three block sizes,
// with versions kept by two snapshots and a range deletion, every read
// (Get, scans both ways, bounded scans, SeekGE and SeekLT at, after and
// before every key) agrees with a model in the memtable, after a flush,
// after a compaction, and after a reopen.
func TestRocksDBBasic_LongSharedPrefixKeys(t *testing.T) {
	for _, bs := range []int{64, 512, 4096} {
		t.Run(fmt.Sprint(bs), func(t *testing.T) {
			n := 12
			if testing.Short() {
				n = 5
			}
			rbLongSharedPrefixKeys(t, bs, rbLongKeys(n))
		})
	}
}

func rbLongSharedPrefixKeys(t *testing.T, blockSize int, keys []string) {
	fs := vfs.NewMem()
	o := &kv.Options{BlockSize: blockSize, TargetFileSize: 8 << 10, DisableAutomaticCompactions: true}
	db := ldbOpen(t, fs, o)
	rng := rand.New(rand.NewPCG(301, uint64(blockSize)))
	model := map[string]string{}
	for i, k := range keys {
		model[k] = rbValue(rng, i)
		ldbSet(t, db, k, model[k])
	}
	s1, m1 := db.NewSnapshot(), maps.Clone(model)
	for i, k := range keys {
		switch i % 3 {
		case 0:
			model[k] = rbValue(rng, i+1)
			ldbSet(t, db, k, model[k])
		case 1:
			ldbDelete(t, db, k)
			delete(model, k)
		}
	}
	lo, hi := keys[len(keys)/3], keys[len(keys)/2]
	rdDeleteRange(t, db, lo, hi)
	for k := range model {
		if k >= lo && k < hi {
			delete(model, k)
		}
	}
	s2, m2 := db.NewSnapshot(), maps.Clone(model)
	ldbSet(t, db, keys[0], "newest")
	model[keys[0]] = "newest"
	check := func(stage string) {
		t.Helper()
		for _, r := range []struct {
			r     ldbIterable
			model map[string]string
			what  string
		}{{db, model, "db"}, {s1, m1, "snapshot 1"}, {s2, m2, "snapshot 2"}} {
			what := stage + ", " + r.what
			rdCheck(t, r.r, r.model, keys, what)
			rbSeeks(t, r.r, r.model, keys, what)
		}
	}
	check("memtable")
	ldbFlush(t, db)
	check("flushed")
	ldbCompact(t, db, "", "")
	check("compacted")
	must1(t, s1.Close())
	must1(t, s2.Close())
	ldbCompact(t, db, "", "")
	rdCheck(t, db, model, keys, "compacted without snapshots")
	db = ldbReopen(t, db, fs, o)
	defer ldbClose(t, db)
	rdCheck(t, db, model, keys, "reopened")
	rbSeeks(t, db, model, keys, "reopened")
}

// TestRocksDBBasic_LongKeysIngested ports the long-key scenarios to
// tables written outside the store, where the restart interval can be
// set: 1 (every key whole), 2, 16 and 128 (a whole block prefix-compressed
// against its first key), each ingested, read, and compacted with a
// flushed table of the same keys.
func TestRocksDBBasic_LongKeysIngested(t *testing.T) {
	keys := rbLongKeys(6)
	for _, ri := range []int{1, 2, 16, 128} {
		t.Run(fmt.Sprint(ri), func(t *testing.T) {
			fs := vfs.NewMem()
			db := ldbOpen(t, fs, &kv.Options{DisableAutomaticCompactions: true})
			defer ldbClose(t, db)
			model := map[string]string{}
			for i, k := range keys {
				model[k] = fmt.Sprintf("ext%d", i)
			}
			writeExternal(t, fs, "ext/a.sst", model, sstable.WriterOptions{BlockSize: 1024, BlockRestartInterval: ri})
			must1(t, db.Ingest([]string{"ext/a.sst"}))
			rdCheck(t, db, model, keys, "ingested")
			rbSeeks(t, db, model, keys, "ingested")
			for i, k := range keys {
				if i%2 == 0 {
					model[k] = fmt.Sprintf("new%d", i)
					ldbSet(t, db, k, model[k])
				}
			}
			ldbFlush(t, db)
			ldbCompact(t, db, "", "")
			rdCheck(t, db, model, keys, "compacted")
			rbSeeks(t, db, model, keys, "compacted")
		})
	}
}

// TestRocksDBBasic_LargeValues ports DBTest's large-value scenarios
// (DBTest.RecoverWithLargeLog's values, DBTest2's values past the block
// and memtable sizes): values bigger than a block, and than a whole
// memtable, under short and long keys, read back from the memtable, the
// tables, a compaction and a reopen, and scanned.
func TestRocksDBBasic_LargeValues(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: 64 << 10, BlockSize: 1024, TargetFileSize: 32 << 10}
	db := ldbOpen(t, fs, o)
	rng := rand.New(rand.NewPCG(301, 5))
	model := map[string]string{}
	for i, n := range []int{1000, 1025, 4096, 64 << 10, 100 << 10, 300 << 10, 10, 0} {
		for _, long := range []bool{false, true} {
			k := rdKey(i, long)
			model[k] = ldbRandom(rng, n)
			ldbSet(t, db, k, model[k])
			ldbWant(t, db, k, model[k])
		}
	}
	rdCheck(t, db, model, nil, "written")
	waitLDB(t, db)
	ldbFlush(t, db)
	rdCheck(t, db, model, nil, "flushed")
	ldbSet(t, db, rdKey(3, false), "small now")
	model[rdKey(3, false)] = "small now"
	ldbCompact(t, db, "", "")
	rdCheck(t, db, model, nil, "compacted")
	db = ldbReopen(t, db, fs, o)
	defer ldbClose(t, db)
	rdCheck(t, db, model, nil, "reopened")
}
