package kv

import (
	"fmt"
	"testing"
)

// TestCompaction_SettleWithinL0 fills a store into its base level (L6 for
// a store this small), then writes three flushes of keys across the whole
// range and stops. L0's read amplification 3 is below the trigger but at
// half of it, so the store settles (after the second flush already, if
// the settling compaction runs before the third comes); its L0 holds far fewer bytes than the
// base level under it, so it settles within L0: afterwards one L0 table
// lies under each key, the base level was not rewritten (the same tables,
// no bytes compacted into it), L0 counts the compaction and its bytes,
// the write amplification counts them, and every key reads its newest
// value. With DisableL0Settling the three tables stay.
func TestCompaction_SettleWithinL0(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("disabled=%t", disabled), func(t *testing.T) {
			d, _ := openMem(t, &Options{MemTableSize: 64 << 10, TargetFileSize: 16 << 10, DisableL0Settling: disabled})
			defer mustClose(t, d)
			before, after := settleFixture(t, d, 3)
			l0, l6 := after.Levels[0], after.Levels[6]
			t.Logf("settled:\n%s", after)
			switch {
			case disabled && (after.Compact.L0ReadAmp != 3 || l0.Compactions != 0):
				t.Fatalf("settling disabled, yet L0 read-amp %d after %d compactions within L0", after.Compact.L0ReadAmp, l0.Compactions)
			case disabled:
			case after.Compact.L0ReadAmp != 1:
				t.Fatalf("L0 read-amp %d once settled, want 1", after.Compact.L0ReadAmp)
			case l0.Compactions < 1 || l0.Compactions > 2 || l0.BytesCompacted == 0 || l0.BytesCompacted != l0.BytesWritten-l0.BytesFlushed:
				t.Fatalf("L0: %d compactions, %d B compacted of %d B written, want one or two (after the second flush and the third) settling L0 within itself", l0.Compactions, l0.BytesCompacted, l0.BytesWritten)
			case l6.BytesCompacted != before.Levels[6].BytesCompacted || l6.NumFiles != before.Levels[6].NumFiles:
				t.Fatalf("L6 rewritten: %d tables, %d B compacted, before %d tables, %d B", l6.NumFiles, l6.BytesCompacted, before.Levels[6].NumFiles, before.Levels[6].BytesCompacted)
			case after.Compact.BytesWritten != before.Compact.BytesWritten+l0.BytesCompacted:
				t.Fatalf("compactions wrote %d B, want %d B before and %d B within L0", after.Compact.BytesWritten, before.Compact.BytesWritten, l0.BytesCompacted)
			}
			checkSettleFixture(t, d, 3)
		})
	}
}

// TestCompaction_MergeWithinL0WhileWriting fills a store into its base
// level (L6 for a store this small), then writes eight flushes of keys
// across the whole range, settling off (DisableL0Settling), so that what
// happens to L0 is what a store taking writes does. Each time L0 reaches
// L0CompactionThreshold its tables hold far fewer bytes than L6 under
// them, so they merge within L0 (compaction.Picker.Pick) rather than
// rewrite L6: afterwards L0 counts those compactions, L6 holds the same
// tables, L0's read amplification stays below the threshold, and every
// key reads its newest value.
func TestCompaction_MergeWithinL0WhileWriting(t *testing.T) {
	d, _ := openMem(t, &Options{MemTableSize: 64 << 10, TargetFileSize: 16 << 10, DisableL0Settling: true})
	defer mustClose(t, d)
	const rounds = 8
	before, after := settleFixture(t, d, rounds)
	l0, l6 := after.Levels[0], after.Levels[6]
	t.Logf("after %d flushes:\n%s", rounds, after)
	switch {
	case l0.Compactions < 2 || l0.BytesCompacted == 0:
		t.Fatalf("L0: %d compactions within L0, %d B; want one for each time L0 was due", l0.Compactions, l0.BytesCompacted)
	case after.Compact.L0ReadAmp >= DefaultL0CompactionThreshold:
		t.Fatalf("L0 read-amp %d, at or above the threshold %d", after.Compact.L0ReadAmp, DefaultL0CompactionThreshold)
	case l6.BytesCompacted != before.Levels[6].BytesCompacted || l6.NumFiles != before.Levels[6].NumFiles:
		t.Fatalf("L6 rewritten: %d tables, %d B compacted, before %d tables, %d B", l6.NumFiles, l6.BytesCompacted, before.Levels[6].NumFiles, before.Levels[6].BytesCompacted)
	}
	checkSettleFixture(t, d, rounds)
}

// settleKeys is the number of keys settleFixture writes.
const settleKeys = 3000

// settleFixture fills d with settleKeys keys, compacts them into L6,
// then writes rounds flushes, round r updating every 50th key from key r
// on, and waits until no compaction runs. It returns the metrics before
// the flushes and after the wait.
func settleFixture(t *testing.T, d *DB, rounds int) (before, after Metrics) {
	t.Helper()
	set := func(k, v string) {
		if err := d.Set([]byte(k), []byte(v), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	for i := range settleKeys {
		set(fmt.Sprintf("key%05d", i), "v0")
	}
	if err := d.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	before = d.Metrics()
	if before.Levels[6].NumFiles == 0 || before.Levels[0].NumFiles != 0 {
		t.Fatalf("the fill is not all in L6:\n%s", before)
	}
	for round := 1; round <= rounds; round++ {
		for i := round; i < settleKeys; i += 50 {
			set(fmt.Sprintf("key%05d", i), fmt.Sprintf("v%d", round))
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(t, d)
	return before, d.Metrics()
}

// checkSettleFixture checks every key of settleFixture's rounds reads its
// newest value.
func checkSettleFixture(t *testing.T, d *DB, rounds int) {
	t.Helper()
	for i := range settleKeys {
		want := "v0"
		if r := i % 50; i >= r && r >= 1 && r <= rounds {
			want = fmt.Sprintf("v%d", r)
		}
		mustGet(t, d, fmt.Sprintf("key%05d", i), want)
	}
}
