package kv

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

// Tests of compaction as the tree grows: the base level's bounds under
// sustained writes, concurrent compactions, and flushes cut along the base
// level.

// TestCompaction_SustainedWritesKeepBaseBounded writes 60,000 fresh keys
// as fast as one writer can, under both level schemes. The base level (L1
// static; dynamic, where L0 compacts to) may run over its target,
// LBaseMaxBytes under both, while L0 waits, but only so far: once it
// scores above L0 it must go down first. L0 scores at most
// L0StopWritesThreshold/L0CompactionThreshold (writers stall at that read
// amplification), and one L0 compaction brings in at most
// L0StopWritesThreshold memtables over any key range, so
// the base level never needs to exceed that many targets plus that many
// memtables.
func TestCompaction_SustainedWritesKeepBaseBounded(t *testing.T) {
	for _, static := range []bool{true, false} {
		t.Run(fmt.Sprintf("static=%t", static), func(t *testing.T) {
			o := &Options{MemTableSize: 64 << 10, LBaseMaxBytes: 256 << 10, TargetFileSize: 32 << 10, StaticLevels: static}
			d, _ := openMem(t, o)
			defer mustClose(t, d)
			stop, trigger := int64(d.opts.L0StopWritesThreshold), int64(d.opts.L0CompactionThreshold)
			limit := stop*o.LBaseMaxBytes/trigger + stop*o.MemTableSize
			var maxBase int64
			bases := map[int]bool{}
			for i := 0; i < 60000; i++ {
				k := fmt.Appendf(nil, "k%016x", uint64(i)*0x9e3779b97f4a7c15)
				if err := d.Set(k, overwriteValue(0, i, 100), NoSync); err != nil {
					t.Fatal(err)
				}
				if i%500 == 0 {
					m := d.Metrics()
					bases[m.Compact.BaseLevel] = true
					if m.Compact.BaseLevel < manifest.NumLevels-1 { // the bottom is no base to bound
						maxBase = max(maxBase, m.Levels[m.Compact.BaseLevel].Size)
					}
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			waitIdle(t, d)
			t.Logf("base levels %v; the base level peaked at %d KiB (target %d KiB, bound %d KiB)",
				slices.Sorted(maps.Keys(bases)), maxBase>>10, o.LBaseMaxBytes>>10, limit>>10)
			if maxBase > limit {
				t.Errorf("the base level reached %d B, over %d B\n%s", maxBase, limit, d.Metrics())
			}
			if !static && len(bases) < 2 {
				t.Errorf("the base level never moved up from L%d as the store grew", slices.Collect(maps.Keys(bases))[0])
			}
		})
	}
}

// TestCompaction_Concurrent runs background compactions side by side (up
// to three, with a picker eager to run them: see eagerConcurrency) while
// two writers fill their own key ranges and a third goroutine compacts
// random ranges by hand, which pauses the background ones. Some
// background compactions must overlap in time; afterwards the tree keeps
// its ordering invariants, every key reads its latest value, and the
// table files on disk are the current Version's. Run it with -race.
func TestCompaction_Concurrent(t *testing.T) {
	seed := testseed.Seed(t)
	// Small tables over several levels, and flushes cut at every table
	// boundary of the base level, give compactions key ranges and levels
	// apart to run in.
	o := &Options{MemTableSize: 8 << 10, L0CompactionThreshold: 2, LBaseMaxBytes: 8 << 10, LevelMultiplier: 2,
		TargetFileSize: 2 << 10, BlockSize: 512, FlushSplitBytes: 1}
	d, fs := openMem(t, o)
	defer mustClose(t, d)
	eagerConcurrency(d, 3)
	writes := 12000
	if testing.Short() {
		writes = 5000
	}
	var (
		wg          sync.WaitGroup
		mostRunning atomic.Int64
		done        atomic.Bool
		models      [2]map[string]string
	)
	for w := range models {
		models[w] = map[string]string{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; i < writes; i++ {
				k, v := fmt.Sprintf("w%d/%05d", w, rng.IntN(4000)), fmt.Sprintf("%d.%s", i, make([]byte, rng.IntN(80)))
				if err := d.Set([]byte(k), []byte(v), NoSync); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				models[w][k] = v
			}
		}()
	}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for !done.Load() {
			d.mu.Lock()
			running := int64(len(d.mu.compacting))
			d.mu.Unlock()
			mostRunning.Store(max(mostRunning.Load(), running))
			time.Sleep(100 * time.Microsecond)
		}
	}()
	manualDone := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(seed, 2))
		for !done.Load() {
			w, lo := rng.IntN(2), rng.IntN(4000)
			start, end := fmt.Sprintf("w%d/%05d", w, lo), fmt.Sprintf("w%d/%05d", w, lo+rng.IntN(400))
			if err := d.Compact([]byte(start), []byte(end)); err != nil {
				manualDone <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		manualDone <- nil
	}()
	wg.Wait()
	done.Store(true)
	<-sampled
	if err := <-manualDone; err != nil {
		t.Fatalf("seed %d: Compact: %v", seed, err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, d)
	m := d.Metrics()
	t.Logf("tables per level %v, %d compactions, at most %d running at once", tableCounts(m), m.Compact.Count, mostRunning.Load())
	if mostRunning.Load() < 2 {
		t.Errorf("seed %d: background compactions never ran side by side", seed)
	}
	if err := checkTree(d); err != nil {
		t.Fatalf("seed %d: %v\n%s", seed, err, m)
	}
	for _, model := range models {
		for k, v := range model {
			mustGet(t, d, k, v)
		}
	}
	if onDisk, live := tableFiles(t, fs, "db"), versionTables(d); !slices.Equal(onDisk, live) {
		t.Errorf("seed %d: tables on disk %v, current Version %v", seed, onDisk, live)
	}
}

// TestCompaction_FlushSplitsAlongBaseLevel flushes a memtable spanning a
// base level of many tables: the flush cuts its L0 tables once they hold
// FlushSplitBytes, each cut just past the end of a base-level table, so
// every L0 table but the last ends where a base-level table does. With a
// negative FlushSplitBytes, the flush writes one table.
func TestCompaction_FlushSplitsAlongBaseLevel(t *testing.T) {
	for _, split := range []int64{4 << 10, -1} {
		t.Run(fmt.Sprintf("split=%d", split), func(t *testing.T) {
			o := &Options{DisableAutomaticCompactions: true, TargetFileSize: 2 << 10, BlockSize: 512,
				FlushSplitBytes: split}
			d, _ := openMem(t, o)
			defer mustClose(t, d)
			// Values that do not compress, so that the tables' count
			// follows from the entries, as the checks below assume.
			rng := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < 2000; i++ {
				if err := d.Set(fmt.Appendf(nil, "k%05d", i*5), randomValue(rng, 20), NoSync); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Compact(nil, nil); err != nil { // into L6, the base level of a small store
				t.Fatal(err)
			}
			for i := 0; i < 2000; i++ {
				if err := d.Set(fmt.Appendf(nil, "k%05d", i*5+1), randomValue(rng, 20), NoSync); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			d.mu.Lock()
			v := d.mu.versions.current
			l0, baseFiles := v.Levels[0], v.Levels[d.picker.Shape(v, nil).BaseLevel]
			d.mu.Unlock()
			t.Logf("%d L0 tables over %d base-level tables", len(l0), len(baseFiles))
			if split < 0 {
				if len(l0) != 1 {
					t.Fatalf("the flush wrote %d tables, want 1", len(l0))
				}
				return
			}
			if len(l0) < 3 || len(baseFiles) < 10 {
				t.Fatalf("want several L0 tables over many base-level tables, got %d over %d", len(l0), len(baseFiles))
			}
			slices.SortFunc(l0, func(a, b *manifest.FileMetadata) int { return d.cmp.Compare(a.Smallest.UserKey, b.Smallest.UserKey) })
			for i, f := range l0[:len(l0)-1] {
				if f.Size < uint64(split) {
					t.Errorf("L0 table %s of %d B was cut before holding FlushSplitBytes", f, f.Size)
				}
				next := l0[i+1].Smallest.UserKey
				if !slices.ContainsFunc(baseFiles, func(b *manifest.FileMetadata) bool {
					return d.cmp.Compare(f.Largest.UserKey, b.Largest.UserKey) <= 0 && d.cmp.Compare(b.Largest.UserKey, next) < 0
				}) {
					t.Errorf("L0 tables %s and %s are not cut at the end of a base-level table", f, l0[i+1])
				}
			}
		})
	}
}

// TestCompaction_L0Settling flushes three tables over the whole key range
// into L0, under the L0 compaction threshold of 4, waiting after each
// flush. Settling compacts the first two once the second is flushed
// (read-amp 2, half the threshold) and leaves the third alone (one table
// under a key is settled); DisableL0Settling keeps all three, as a store
// taking writes holds them.
func TestCompaction_L0Settling(t *testing.T) {
	for _, disable := range []bool{false, true} {
		d, _ := openMem(t, &Options{MemTableSize: 64 << 10, L0CompactionThreshold: 4, DisableL0Settling: disable})
		for flush := range 3 {
			for i := range 200 {
				if err := d.Set(fmt.Appendf(nil, "key%05d", (i*7919+flush)%1000), []byte("value"), NoSync); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			waitIdle(t, d)
		}
		m := d.Metrics()
		want := 1
		if disable {
			want = 3
		}
		if got := m.Levels[0].NumFiles; got != want {
			t.Errorf("DisableL0Settling %v: L0 holds %d tables, want %d\n%s", disable, got, want, m)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
