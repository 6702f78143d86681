package kv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/testseed"
)

// TestDB_Concurrent runs writers, readers, iterators, snapshots, flushes and
// compactions at once. Each writer owns a key space and writes increasing
// versions of each key, so readers can check what they see: a key's value
// never goes back in time, and a snapshot or iterator never changes its
// mind. Run it with -race.
func TestDB_Concurrent(t *testing.T) {
	seed := testseed.Seed(t)
	d, _ := openMem(t, &Options{MemTableSize: 16 << 10, L0CompactionThreshold: 2,
		L0StopWritesThreshold: 4, TargetFileSize: 8 << 10})
	const writers, keysPerWriter = 3, 50
	rounds := 60
	if testing.Short() {
		rounds = 20
	}
	var wg sync.WaitGroup
	var done atomic.Bool
	errc := make(chan error, 16)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 1; r <= rounds; r++ {
				b := d.NewBatch()
				for k := 0; k < keysPerWriter; k++ {
					must(t, b.Set(concKey(w, k), fmt.Appendf(nil, "%06d", r)))
				}
				if err := d.Apply(b, &WriteOptions{Sync: r%10 == 0}); err != nil {
					fail(fmt.Errorf("writer %d: %w", w, err))
					return
				}
			}
		}(w)
	}
	var readers sync.WaitGroup
	for i := 0; i < 2; i++ {
		readers.Add(1)
		go func(i int) {
			defer readers.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			last := map[string][]byte{}
			for !done.Load() {
				if err := checkGets(d, rng, last); err != nil {
					fail(err)
					return
				}
				if err := checkIterator(d, rng); err != nil {
					fail(err)
					return
				}
			}
		}(i)
	}
	readers.Add(1)
	go func() {
		defer readers.Done()
		for !done.Load() {
			if err := d.Flush(); err != nil {
				fail(err)
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if err := d.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%06d", rounds)
	for w := 0; w < writers; w++ {
		for k := 0; k < keysPerWriter; k++ {
			mustGet(t, d, string(concKey(w, k)), want)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func concKey(w, k int) []byte { return fmt.Appendf(nil, "w%d-k%03d", w, k) }

// checkGets reads random keys and checks no value goes back in time.
func checkGets(d *DB, rng *rand.Rand, last map[string][]byte) error {
	for j := 0; j < 20; j++ {
		k := concKey(rng.IntN(3), rng.IntN(50))
		v, err := d.Get(k)
		if errors.Is(err, ErrNotFound) {
			if last[string(k)] != nil {
				return fmt.Errorf("%s vanished after %s", k, last[string(k)])
			}
			continue
		}
		if err != nil {
			return err
		}
		if bytes.Compare(v, last[string(k)]) < 0 {
			return fmt.Errorf("%s went back from %s to %s", k, last[string(k)], v)
		}
		last[string(k)] = v
	}
	return nil
}

// checkIterator scans a snapshot forward and backward: a writer's batch is
// atomic, so all its keys show the same version, and both directions agree.
func checkIterator(d *DB, rng *rand.Rand) (err error) {
	s := d.NewSnapshot()
	defer func() { err = errors.Join(err, s.Close()) }()
	w := rng.IntN(3)
	lower, upper := fmt.Appendf(nil, "w%d-", w), fmt.Appendf(nil, "w%d.", w)
	it, err := s.NewIter(&IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, it.Close()) }()
	var fwd []string
	for it.First(); it.Valid(); it.Next() {
		fwd = append(fwd, string(it.Key())+"="+string(it.Value()))
	}
	var back []string
	for it.Last(); it.Valid(); it.Prev() {
		back = append(back, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Error(); err != nil {
		return err
	}
	if len(fwd) != 0 && len(fwd) != 50 {
		return fmt.Errorf("writer %d: snapshot shows %d keys, want 0 or 50 (batches are atomic)", w, len(fwd))
	}
	for i := range fwd {
		if fwd[i] != back[len(back)-1-i] {
			return fmt.Errorf("forward %s, backward %s", fwd[i], back[len(back)-1-i])
		}
		if fwd[i][len(fwd[i])-6:] != fwd[0][len(fwd[0])-6:] {
			return fmt.Errorf("torn batch in snapshot: %s vs %s", fwd[0], fwd[i])
		}
	}
	return nil
}

// TestDB_WriteStall fills L0 faster than compaction drains it, with tiny
// thresholds; writers must stall and resume, never deadlock.
func TestDB_WriteStall(t *testing.T) {
	d, _ := openMem(t, &Options{MemTableSize: 4 << 10, L0CompactionThreshold: 2,
		L0SlowdownWritesThreshold: 2, L0StopWritesThreshold: 3, MemTableStopWritesThreshold: 1})
	defer mustClose(t, d)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				if err := d.Set(fmt.Appendf(nil, "k%d-%04d", w, i), make([]byte, 64), NoSync); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	waitIdle(t, d)
	m := d.Metrics()
	if m.Compact.L0ReadAmp > 3 {
		t.Errorf("L0's read amplification is %d, over the stop threshold", m.Compact.L0ReadAmp)
	}
	if m.Flush.Count == 0 || m.Compact.Count+m.Levels[1].Moves == 0 {
		t.Errorf("no background work: %s", m)
	}
	mustGet(t, d, "k3-0499", string(make([]byte, 64)))
}

// TestDB_GroupCommit checks that concurrent Sync writers' writes and syncs
// of the WAL are no more than their writes: each serves one writer or
// more. (A Sync write's record is written, then its batch inserted and
// published, then the WAL synced: writes and syncs are counted apart, and
// a write need not be followed by a sync of its own. That they are shared
// where syncs take time, TestWALSink_SyncWritersShareEachSync checks.)
func TestDB_GroupCommit(t *testing.T) {
	d, _ := openMem(t, nil)
	defer mustClose(t, d)
	const n = 8
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if err := d.Set(fmt.Appendf(nil, "%d-%d", w, i), nil, Sync); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	m := d.Metrics()
	t.Logf("%d writes in %d WAL writes, %d syncs", n*200, m.WAL.Writes, m.WAL.Syncs)
	if m.WAL.Writes > n*200 || m.WAL.Syncs > n*200 || m.WAL.Syncs == 0 {
		t.Fatalf("writes %d syncs %d", m.WAL.Writes, m.WAL.Syncs)
	}
}
