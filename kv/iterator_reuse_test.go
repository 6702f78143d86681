package kv_test

import (
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// openUserTables opens a store of users (see loadUsers) in many small L0
// tables, whose comparer splits keys by user. No compaction runs: the
// tests count what their reads meet in a shape that stays put.
func openUserTables(t *testing.T, users int) *kv.DB {
	t.Helper()
	return openUserStore(t, users, kv.Options{MemTableSize: 64 << 10, TargetFileSize: 32 << 10, BlockSize: 1 << 10,
		DisableAutomaticCompactions: true})
}

// TestIterator_Stats checks what an iterator's Stats count: a full scan
// opens every table once and reads at least one block of each and no
// filter; prefix seeks for absent users count the filter negatives the
// DB's metrics count for them, and read a block only on a false positive;
// a clone counts from zero; a closed iterator reports zeros.
func TestIterator_Stats(t *testing.T) {
	db := openUserTables(t, 3001)
	defer db.Close()
	tables := 0
	for _, l := range db.Metrics().Levels {
		tables += l.NumFiles
	}
	if tables < 4 {
		t.Fatalf("the store has %d tables, want several", tables)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := 0
	for ok := it.First(); ok; ok = it.Next() {
		keys++
	}
	st := it.Stats()
	t.Logf("scan of %d keys in %d tables: %+v", keys, tables, st)
	if keys != 3001*len(userFields) || st.TablesConsidered != int64(tables) ||
		st.BlockReads < int64(tables) || st.FilterNegatives != 0 {
		t.Fatalf("scan of %d keys over %d tables: stats %+v", keys, tables, st)
	}

	c, err := it.Clone()
	if err != nil {
		t.Fatal(err)
	}
	if cs := c.Stats(); cs != (kv.IteratorStats{}) {
		t.Fatalf("a new clone's stats: %+v", cs)
	}
	before := db.Metrics().Lookups
	var prefix []byte
	for i := 0; i < 500; i++ {
		prefix = userPrefix(prefix, 2*i+1)
		if c.SeekPrefixGE(prefix) {
			t.Fatalf("SeekPrefixGE(%s) found %s", prefix, c.Key())
		}
	}
	cs, m := c.Stats(), db.Metrics().Lookups
	t.Logf("500 absent prefix seeks: %+v", cs)
	if neg := m.FilterNegatives - before.FilterNegatives; cs.FilterNegatives != neg || neg < 450 {
		t.Fatalf("clone's FilterNegatives %d; the DB counted %d for 500 absent prefixes", cs.FilterNegatives, neg)
	}
	if tc := m.TablesConsidered - before.TablesConsidered; cs.TablesConsidered != tc || tc < 500 {
		t.Fatalf("clone's TablesConsidered %d; the DB counted %d for 500 prefix seeks", cs.TablesConsidered, tc)
	}
	if fp := m.FilterFalsePositives - before.FilterFalsePositives; cs.BlockReads != fp {
		t.Fatalf("clone read %d blocks for %d false positives", cs.BlockReads, fp)
	}
	if it.Stats() != st {
		t.Fatalf("the clone's seeks changed the iterator's stats: %+v, was %+v", it.Stats(), st)
	}
	it.SetBounds(userPrefix(nil, 0), userPrefix(nil, 2))
	if !it.First() || it.Stats().BlockReads <= st.BlockReads {
		t.Fatalf("SetBounds and First: stats %+v, were %+v", it.Stats(), st)
	}
	for _, x := range []*kv.Iterator{it, c} {
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if x.Stats() != (kv.IteratorStats{}) {
			t.Fatalf("closed iterator's stats: %+v", x.Stats())
		}
	}
	if _, err := it.Clone(); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Clone of a closed iterator: %v, want ErrClosed", err)
	}
	it.SetBounds(nil, nil) // harmless once closed
}

// TestIterator_Clone_PointInTime checks that a clone sees the state its
// iterator sees, not the writes made since, and that the two move apart.
func TestIterator_Clone_PointInTime(t *testing.T) {
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a", "b", "c"} {
		db.Set([]byte(k), []byte(k), kv.NoSync)
	}
	it, _ := db.NewIter(&kv.IterOptions{LowerBound: []byte("b")})
	defer it.Close()
	db.Set([]byte("d"), []byte("d"), kv.NoSync)
	db.Delete([]byte("b"), kv.NoSync)
	it.First()
	c, err := it.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	for ok := c.First(); ok; ok = c.Next() {
		got = append(got, string(c.Key()))
	}
	if len(got) != 2 || got[0] != "b" || got[1] != "c" {
		t.Fatalf("clone shows %q, want [b c]", got)
	}
	if string(it.Key()) != "b" {
		t.Fatalf("the clone's moves moved the iterator to %q", it.Key())
	}
}

// TestIterator_Stats_TablesConsidered checks that TablesConsidered counts
// the tables each positioning call considers, as the DB's lookup metrics
// do, not the tables opened: seeks again and again to one key, whose
// tables stay open, count as many tables each as the first; Next within
// a table counts none.
func TestIterator_Stats_TablesConsidered(t *testing.T) {
	db := openUserTables(t, 3001)
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	key := userPrefix(nil, 1500)
	if !it.SeekGE(key) {
		t.Fatalf("SeekGE(%s) found nothing", key)
	}
	first := it.Stats().TablesConsidered
	for i := 0; i < 10; i++ {
		if !it.SeekGE(key) || !it.Next() {
			t.Fatalf("SeekGE(%s) and Next found nothing", key)
		}
	}
	st := it.Stats()
	t.Logf("one seek considered %d tables; eleven seeks and ten Nexts: %+v", first, st)
	if first < 2 || st.TablesConsidered != 11*first {
		t.Fatalf("one seek considered %d tables, eleven seeks %d; want at least 2, and 11 times as many",
			first, st.TablesConsidered)
	}
}
