package pebbleadapter

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// settledPebble loads keys keys into a Pebble DB whose filters
// SetLevelFilters derives from b (with b.Keys set to keys), waits until
// its compactions settle, and returns the DB with the filter bits per key
// spent over all its tables' entries.
func settledPebble(t *testing.T, keys int, b LevelBudget) (*pebble.DB, float64) {
	t.Helper()
	opts := &pebble.Options{FS: vfs.NewMem(), Logger: QuietLogger{}, MemTableSize: 1 << 20, LBaseMaxBytes: 1 << 20}
	b.Keys = int64(keys)
	if err := SetLevelFilters(opts, b); err != nil {
		t.Fatal(err)
	}
	db := openPebble(t, opts)
	rng := rand.New(rand.NewPCG(*seedFlag, 0))
	value := make([]byte, spendValueBytes)
	for i := range keys {
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		if err := db.Set(levelKey(2*(i*7919%keys)), value, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, db)
	levels, err := db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var filterBytes, entries uint64
	for _, tables := range levels {
		for _, table := range tables {
			filterBytes += table.Properties.FilterSize
			entries += table.Properties.NumEntries
		}
	}
	return db, 8 * float64(filterBytes) / float64(entries)
}

// spendValueBytes is the size of the random, incompressible values of the
// spending tests: with 12-byte keys and Pebble's per-entry overhead, an
// entry takes about spendBytesPerKey bytes in a table.
const (
	spendValueBytes  = 32
	spendBytesPerKey = 46
)

// waitSettled waits until db runs no compaction and wants none.
func waitSettled(t *testing.T, db *pebble.DB) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		m := db.Metrics()
		if m.Compact.NumInProgress == 0 && m.Compact.EstimatedDebt == 0 && m.Levels[0].NumFiles == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("compactions did not settle:\n%s", db.Metrics())
}

// spendFlag runs TestSetLevelFilters_SpendsBudget. It is a measurement of
// a real Pebble store rather than a unit test: the shape Pebble settles at
// depends on when its compactions run, so the bits spent vary from run to
// run (9.4 to 12 bits per key at a budget of 10 on a loaded machine), and
// loading the store takes a minute on two cores.
var spendFlag = flag.Bool("spend", false, "run TestSetLevelFilters_SpendsBudget, which loads and settles a real Pebble store")

// TestSetLevelFilters_SpendsBudget loads a real Pebble DB and lets it
// settle (L0 empty, as Pebble keeps it between bursts of writes): the
// filters must spend at least 97% of the bits per key asked for, which a
// plan that set bits aside for L0 tables Pebble does not keep did not.
// They may spend more: the plan assumes each level above the bottom holds
// its target, a tenth of the one below, and a settled store of this size
// holds anywhere from none to a quarter of its data there, some of it in
// tables moved down unchanged with an upper level's filters (15-35% more
// than asked, in runs of this test). That part of the spend follows the
// shape Pebble settles at, which a static per-level plan cannot know.
func TestSetLevelFilters_SpendsBudget(t *testing.T) {
	if !*spendFlag {
		t.Skip("a measurement of a real Pebble store: run with -spend")
	}
	const keys = 300_000
	ran := 0
	for _, bits := range []float64{5, 10} {
		db, spent := settledPebble(t, keys, LevelBudget{Budget: bloompolicy.Budget{BitsPerKey: bits}, BytesPerKey: spendBytesPerKey})
		t.Logf("budget %v bits/key: spent %.3f over the settled tables\n%s", bits, spent, db.Metrics())
		db.Close()
		if spent < bits*0.97 {
			t.Errorf("budget %v bits/key: spent %.3f", bits, spent)
		}
		ran++
	}
	if ran != 2 {
		t.Fatalf("%d budgets ran", ran)
	}
}
