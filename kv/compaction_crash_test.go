package kv_test

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestCrash_MultiLevelCompactions cuts the power while background
// compactions (two at a time) carry tables of L1 straight on into L3,
// L2's tables under them merged on the way (multi-level compactions, see
// the compaction package's documentation): a store whose levels are
// sized from L1 down, each about as full as its target, with a few
// flushes in L0 whose compaction tips L1 over its target. Whatever the
// point, the reopened store holds exactly the flushed contents, and its
// own compactions, run to the end, keep them (as TestCrash_BaseLevelMoves
// checks its stores).
func TestCrash_MultiLevelCompactions(t *testing.T) {
	crashReshapes(t, multiLevelFixture, multiLevelOptions, func(*testing.T, uint64, kv.Metrics) {})
}

// multiLevelOptions are the options of TestCrash_MultiLevelCompactions's
// stores: levels sized from L1 down (L1 4 KiB, L2 40 KiB, L3 400 KiB) and
// 1 KiB tables, so that a compaction of an L1 table, dense L2 tables
// under it and sparser L3 tables under those, writes less per byte moved
// down when it carries on into L3.
func multiLevelOptions(fs vfs.FS, auto bool) *kv.Options {
	return &kv.Options{FS: fs, DisableAutomaticCompactions: !auto, MaxConcurrentCompactions: 2,
		MemTableSize: 16 << 10, StaticLevels: true, LBaseMaxBytes: 4 << 10, TargetFileSize: 1 << 10,
		BlockSize: 256, L0CompactionThreshold: 2}
}

// multiLevelFixture builds a store of about 150 KiB, settled by its own
// compactions over L1..L3, then, with automatic compactions off, flushes
// two rounds of overwrites and deletions into L0; it closes the store and
// returns its filesystem and contents.
func multiLevelFixture(t *testing.T, seed uint64) (*crashFS, map[string]string) {
	t.Helper()
	rng := newRand(seed)
	fs := newCrashFS(vfs.NewStrictMem())
	want := map[string]string{}
	for phase, auto := range []bool{true, false} {
		db, err := kv.Open("db", multiLevelOptions(fs, auto))
		if err != nil {
			t.Fatal(err)
		}
		rounds, writes := 12, 250
		if phase == 1 {
			rounds, writes = 2, 60
		}
		for round := 0; round < rounds; round++ {
			for i := 0; i < writes; i++ {
				k := fmt.Sprintf("b%04d", rng.IntN(3000))
				if phase == 1 && rng.IntN(6) == 0 {
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
		if auto {
			waitSettled(t, db, func() bool { return false })
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return fs, want
}
