package kv_test

// The lookup counters under a Comparer with a Split: a filter "maybe" for
// a block that holds the key's prefix but not the key is a prefix match,
// not a false positive, so that the observed FPR is the filter's own; and
// tables whose filters the DB cannot use are counted.

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// openUsers opens a store under userComparer with a 1% Bloom filter and
// loads users present users into its tables.
func openUsers(t *testing.T, users int) *kv.DB {
	t.Helper()
	policy, err := bloompolicy.New(0.01)
	if err != nil {
		t.Fatal(err)
	}
	return openUserStore(t, users, kv.Options{FilterPolicy: policy,
		MemTableSize: 256 << 10, TargetFileSize: 256 << 10, LBaseMaxBytes: 1 << 20})
}

// openUserStore opens a store with opts, on an in-memory FS and under
// userComparer, loads users present users into it (see loadUsers) and
// flushes it.
func openUserStore(t *testing.T, users int, opts kv.Options) *kv.DB {
	t.Helper()
	opts.FS, opts.Comparer = vfs.NewMem(), userComparer()
	db, err := kv.Open("db", &opts)
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	err = loadUsers(users, func(k, v []byte) { b.Set(k, v) }, func() error {
		err := db.Apply(b, kv.NoSync)
		b = db.NewBatch()
		return err
	})
	if err == nil {
		err = db.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestLookupMetrics_PrefixFPR runs a prefix workload (present keys,
// absent fields of present users, absent users) through Get under a 1%
// filter, and checks that with prefix matches counted apart the observed
// FPR, FilterFalsePositives / (FilterFalsePositives + FilterNegatives),
// is within 1.2 times the target, and that every "maybe" is counted once.
func TestLookupMetrics_PrefixFPR(t *testing.T) {
	const users, target = 20000, 0.01
	db := openUsers(t, users)
	defer db.Close()
	before := db.Metrics().Lookups
	var key []byte
	var present, absentField, absentUser int64
	for i := 0; i < users; i++ {
		id := int(mix64(uint64(i)) % users)
		key = append(userPrefix(key, 2*id), userFields[i%len(userFields)]...)
		present += getCounting(t, db, key, true)
		key = append(userPrefix(key, 2*id), "zip"...)
		absentField += getCounting(t, db, key, false)
		key = append(userPrefix(key, 2*id+1), "name"...)
		absentUser += getCounting(t, db, key, false)
	}
	d := kv.LookupDelta(db.Metrics().Lookups, before)
	fpr := float64(d.FilterFalsePositives) / float64(d.FilterFalsePositives+d.FilterNegatives)
	withMatches := float64(d.FilterFalsePositives+d.PrefixMatches) / float64(d.FilterFalsePositives+d.PrefixMatches+d.FilterNegatives)
	t.Logf("%d gets (%d present, %d absent fields, %d absent users) over %v tables per level: %+v",
		d.Gets, present, absentField, absentUser, levelFiles(db.Metrics()), d)
	t.Logf("filter FPR %.3f%% (target %.1f%%); counting prefix matches as false positives it would read %.2f%%",
		100*fpr, 100*target, 100*withMatches)
	switch {
	case d.Gets != 3*users || present != users || absentField != users || absentUser != users:
		t.Fatalf("%d gets ran, want %d", d.Gets, 3*users)
	case d.FilterTruePositives != present:
		t.Fatalf("%d true positives for %d present keys of one version each", d.FilterTruePositives, present)
	case d.PrefixMatches < absentField/2:
		t.Fatalf("%d prefix matches for %d absent fields of present users", d.PrefixMatches, absentField)
	case d.FilterSkipped != 0:
		t.Fatalf("%d tables read without their filter", d.FilterSkipped)
	case d.FilterNegatives+d.FilterTruePositives+d.FilterFalsePositives+d.PrefixMatches < d.TablesConsidered:
		t.Fatalf("%d tables considered, fewer verdicts", d.TablesConsidered)
	case d.FilterNegatives < int64(users):
		t.Fatalf("only %d filter negatives: too few to measure", d.FilterNegatives)
	case fpr > 1.2*target:
		t.Fatalf("filter FPR %.3f%% above 1.2 × the target %.1f%%", 100*fpr, 100*target)
	}
}

// getCounting looks key up, checks that it is found or not as present
// says, and returns 1.
func getCounting(t *testing.T, db *kv.DB, key []byte, present bool) int64 {
	t.Helper()
	_, err := db.Get(key)
	if found := err == nil; found != present || err != nil && !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get(%s): %v, want found=%v", key, err, present)
	}
	return 1
}

// TestLookupMetrics_FilterSkipped checks that tables whose filters the DB
// cannot use, written under another Split or by an unknown policy, are
// counted per level as FilterSkipped and ask no filter, while a store
// opened with DisableFilters counts none.
func TestLookupMetrics_FilterSkipped(t *testing.T) {
	fs := vfs.NewMem()
	writeFlushed(t, fs, "a/1", "b/1", "c/1")
	for _, tc := range []struct {
		name string
		opts kv.Options
		want bool // tables counted as skipped
	}{
		{"same Split", kv.Options{Comparer: itertest.SlashComparer()}, false},
		{"no Split", kv.Options{}, true},
		{"other SplitName", kv.Options{Comparer: renamedSplit("test.other")}, true},
		{"unknown policy", kv.Options{Comparer: itertest.SlashComparer(), FilterPolicy: pebbleadapter.FromPebble(bloom.FilterPolicy(10))}, true},
		{"DisableFilters", kv.Options{Comparer: itertest.SlashComparer(), DisableFilters: true}, false},
	} {
		opts := tc.opts
		opts.FS = fs
		db, err := kv.Open("db", &opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		before := db.Metrics()
		for _, k := range []string{"a/1", "b/2", "zz"} {
			if _, err := db.Get([]byte(k)); err != nil && !errors.Is(err, kv.ErrNotFound) {
				t.Fatal(err)
			}
		}
		after := db.Metrics()
		var levels []string
		for i := range after.Levels {
			d := kv.LookupDelta(after.Levels[i].Lookups, before.Levels[i].Lookups)
			if d.TablesConsidered > 0 {
				levels = append(levels, fmt.Sprintf("L%d %+v", i, d))
			}
			verdicts := d.FilterNegatives + d.FilterTruePositives + d.FilterFalsePositives + d.PrefixMatches
			if tc.want && (d.FilterSkipped != d.TablesConsidered || verdicts != 0) ||
				!tc.want && d.FilterSkipped != 0 {
				t.Errorf("%s: L%d: %+v, want skipped=%v", tc.name, i, d, tc.want)
			}
		}
		if len(levels) == 0 {
			t.Errorf("%s: no table considered", tc.name)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// renamedSplit is the slash comparer under another SplitName.
func renamedSplit(name string) *sstable.Comparer {
	c := itertest.SlashComparer()
	c.SplitName = name
	return c
}
