package kv_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestCrash_MultiLevelCompactions cuts the power while compactions carry
// tables of L1 straight on into L3, L2's tables under them merged on the
// way (multi-level compactions, see the compaction package's
// documentation): a store whose L3 and L2 hold tables over the whole key
// space, L2's dense enough that L1 tables over them carry on into L3, and
// two flushes in L0 whose compaction fills L1 past its target. The store
// is built, and compacts, the same way in every run of a seed (see
// multiLevelFixture and multiLevelOptions), so every crash point falls
// in the one history whose multi-level compactions the uncrashed run
// counts; a second uncrashed run checks that it compacts the same.
// Whatever the point, the reopened store holds exactly the flushed
// contents, and its own compactions, run to the end, keep them (as
// TestCrash_BaseLevelMoves checks its stores).
func TestCrash_MultiLevelCompactions(t *testing.T) {
	crashReshapes(t, multiLevelFixture, multiLevelOptions, func(t *testing.T, seed uint64, m kv.Metrics) {
		if m.Compact.MultiLevelCount == 0 || m.Compact.Count < m.Compact.MultiLevelCount {
			t.Fatalf("seed %d: %d compactions, %d of them multi-level: want some multi-level", seed,
				m.Compact.Count, m.Compact.MultiLevelCount)
		}
		fs, _ := multiLevelFixture(t, seed)
		if again := runReshape(t, fs, multiLevelOptions); again.Compact != m.Compact {
			t.Fatalf("seed %d: the store compacted otherwise when built again: %+v, then %+v", seed,
				m.Compact, again.Compact)
		}
	})
}

// multiLevelOptions are the options of TestCrash_MultiLevelCompactions's
// stores: levels sized from L1 down (L1 4 KiB, L2 40 KiB, L3 400 KiB) and
// 1 KiB tables, so that a compaction of an L1 table, dense L2 tables
// under it and sparser L3 tables under those, writes less per byte moved
// down when it carries on into L3. One compaction runs at a time, so that
// the compactions of a store take the same course in every run. (Under
// Pebble's rule a second one would start only at an L0 read
// amplification of 10 or a compaction debt of 1 GiB: see
// compaction.Picker.WantsAnother.)
func multiLevelOptions(fs vfs.FS, auto bool) *kv.Options {
	return &kv.Options{FS: fs, DisableAutomaticCompactions: !auto, MaxConcurrentCompactions: 1,
		MemTableSize: 16 << 10, StaticLevels: true, LBaseMaxBytes: 4 << 10, TargetFileSize: 1 << 10,
		BlockSize: 256, L0CompactionThreshold: 2}
}

// multiLevelFixture builds a store of about 100 KiB in the same shape for
// every seed and the same tables in every run of a seed: about 60 KiB in
// L3 and 30 KiB in L2, each spread over the key space in tables of about
// 1 KiB, L1 empty, and two flushes of overwrites and deletions in L0. It
// closes the store and returns its filesystem and contents.
func multiLevelFixture(t *testing.T, seed uint64) (*crashFS, map[string]string) {
	t.Helper()
	rng := newRand(seed)
	fs := newCrashFS(vfs.NewStrictMem())
	want := map[string]string{}
	sink(t, fs, rng, want, 350, 300)
	sink(t, fs, rng, want, 170, 100<<10)
	db, err := kv.Open("db", multiLevelOptions(fs, false))
	if err != nil {
		t.Fatal(err)
	}
	flushRounds(t, db, rng, want, 60, true)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return fs, want
}

// sink opens the store on fs with L1's target 1 byte and L2's l2Bytes
// (L3's l2Bytes²) and a memtable of 1 MiB, flushes two rounds of n writes
// into it (flushRounds), waits for the compactions and closes the store.
// Nothing compacts before the second flush, L0 being due at a read
// amplification of 2; then the compactions run one at a time on a store
// taking no writes, so they take the same course in every run: the
// flushes merge into L1, every table written there moves on into L2 and,
// while L2 is over its target, on into L3.
func sink(t *testing.T, fs *crashFS, rng *rand.Rand, want map[string]string, n, l2Bytes int) {
	t.Helper()
	o := multiLevelOptions(fs, true)
	o.MemTableSize, o.LBaseMaxBytes, o.LevelMultiplier = 1<<20, 1, l2Bytes
	db, err := kv.Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	flushRounds(t, db, rng, want, n, false)
	waitSettled(t, db, func() bool { return false })
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// flushRounds writes two rounds of n keys drawn from "b0000".."b2999"
// into db and want, each a value of 20 to 79 letters or, when deletes is
// set, one time in six a deletion, and flushes each round.
func flushRounds(t *testing.T, db *kv.DB, rng *rand.Rand, want map[string]string, n int, deletes bool) {
	t.Helper()
	for round := 0; round < 2; round++ {
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("b%04d", rng.IntN(3000))
			if deletes && rng.IntN(6) == 0 {
				delete(want, k)
				if err := db.Delete([]byte(k), kv.NoSync); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want[k] = randomLetters(rng, 20+rng.IntN(60))
			if err := db.Set([]byte(k), []byte(want[k]), kv.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}
