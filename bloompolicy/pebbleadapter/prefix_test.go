package pebbleadapter

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// TestPebble_ToPebble_PrefixFilters runs ToPebble's filter in a real Pebble
// whose comparer splits "user/<id>/<field>" after the user: Pebble feeds
// the filter the users' prefixes, so SeekPrefixGE of an absent user (with
// UseL6Filters, as the data sits in L6 after a full compaction) is ruled
// out by the filter of each table it reaches and reads no data block,
// while present users are found with all their fields.
func TestPebble_ToPebble_PrefixFilters(t *testing.T) {
	ours, err := bloompolicy.New(0.01)
	if err != nil {
		t.Fatal(err)
	}
	opts := pebbleOptions(vfs.NewMem(), ToPebble(ours))
	opts.Comparer = splitComparer(itertest.UserSplit)
	for i := range opts.Levels {
		opts.Levels[i].TargetFileSize = 8 << 10 // several L6 tables
	}
	db := openPebble(t, opts)
	defer db.Close()
	const users = 4000
	fields := []string{"email", "name", "plan"}
	for part := 0; part < 4; part++ { // four overlapping L0 tables, then one compaction
		b := db.NewBatch()
		for id := 2 * part; id < 2*users; id += 8 {
			for _, f := range fields {
				if err := b.Set(fmt.Appendf(nil, "user/%06d/%s", id, f), []byte("v"), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact([]byte("user/"), []byte("user0"), true); err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.Levels[6].NumFiles < 2 {
		t.Fatalf("L6 holds %d tables, want several", m.Levels[6].NumFiles)
	}
	checkTableFilters(t, db, ours.Name())

	l6 := &pebble.IterOptions{UseL6Filters: true}
	absent := seekUsers(t, db, l6, users, 1, 0)                        // odd ids
	unfiltered := seekUsers(t, db, &pebble.IterOptions{}, users, 1, 0) // L6 filters not read
	present := seekUsers(t, db, l6, users, 0, len(fields))             // even ids
	t.Logf("absent users: %+v; without filters: %+v; present users: %+v", absent, unfiltered, present)
	// Every seek but one past the last user reaches a table.
	if absent.filter.queries() < users-1 || absent.filter.fpr() > 0.03 {
		t.Errorf("absent users: %+v, want a filter query per seek and about 1%% false positives", absent)
	}
	if unfiltered.filter.queries() != 0 || present.filter.queries() < users {
		t.Errorf("filter queries: %d without UseL6Filters, %d for present users", unfiltered.filter.queries(), present.filter.queries())
	}
	// A filter's "absent" spares the table's data blocks: the seeks meet
	// the points of a data block only on false positives. (Block bytes do
	// not show it: every filtered seek loads the table's filter block.)
	if absent.points > 2*uint64(absent.filter.misses)+5 || absent.points*20 > unfiltered.points {
		t.Errorf("absent users met %d points after %d false positives, %d without filters: the filter skipped no table",
			absent.points, absent.filter.misses, unfiltered.points)
	}
}

// prefixSeeks is what SeekPrefixGE calls cost in Pebble: its filter
// counters, and from its iterator's stats the bytes of the blocks loaded
// (filter blocks included) and the points met in data blocks.
type prefixSeeks struct {
	filter     filterCount
	blockBytes uint64
	points     uint64
}

// seekUsers seeks the prefixes of users ids 2i+odd, i < users, each
// expected to hold want keys, with an iterator opened with iterOpts.
func seekUsers(t *testing.T, db *pebble.DB, iterOpts *pebble.IterOptions, users, odd, want int) prefixSeeks {
	t.Helper()
	var s prefixSeeks
	s.filter = countFilter(db, func() {
		it, err := db.NewIter(iterOpts)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		for i := 0; i < users; i++ {
			prefix := fmt.Appendf(nil, "user/%06d/", 2*i+odd)
			n := 0
			for ok := it.SeekPrefixGE(prefix); ok; ok = it.Next() {
				n++
			}
			if n != want {
				t.Fatalf("SeekPrefixGE(%s): %d keys, want %d", prefix, n, want)
			}
		}
		st := it.Stats().InternalStats
		s.blockBytes, s.points = st.BlockBytes, st.PointCount
	})
	return s
}
