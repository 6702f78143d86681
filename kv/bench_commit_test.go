package kv_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/internal/bench"
)

// commitMemTableSize is the memtable size of BenchmarkCommitWriters, for
// both engines: large enough that a run of a few million writes neither
// flushes nor stalls, so the commit path alone is measured.
const commitMemTableSize = 512 << 20

// BenchmarkCommitWriters writes one key per Set, NoSync, random keys,
// from 1, 2, 4, 8 or 16 goroutines at once, each writing its share of
// b.N keys, into memtables large enough that flushes do not bound it: the
// commit pipeline's scaling with writers. engine=bloomkv keeps the
// default promise (an acknowledged write is in the WAL file);
// engine=bloomkv-bgwal writes the WAL in the background, as Pebble does.
// Compare a row's ns/op with the writers=1 row of its engine.
func BenchmarkCommitWriters(b *testing.B) {
	for _, writers := range []int{1, 2, 4, 8, 16} {
		for _, eng := range []string{"bloomkv", "bloomkv-bgwal", "pebble"} {
			b.Run(fmt.Sprintf("writers=%d/engine=%s", writers, eng), func(b *testing.B) {
				e := openCommitEngine(b, eng)
				b.SetBytes(benchEntryBytes)
				b.ResetTimer()
				setFromWriters(b, e, writers, 0)
				b.StopTimer()
				if err := e.Close(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// openCommitEngine opens engine eng with the benchmarks' options but
// commitMemTableSize memtables.
func openCommitEngine(b *testing.B, eng string) bench.Engine {
	dir := b.TempDir()
	if eng == "pebble" {
		opts := pebbleBenchOptions(true)
		opts.MemTableSize = commitMemTableSize
		return openPebbleWith(b, dir, opts)
	}
	opts := bloomkvBenchOptions(b, true)
	opts.MemTableSize = commitMemTableSize
	opts.BackgroundWALWrites = eng == "bloomkv-bgwal"
	return openBloomkvWith(b, dir, opts)
}

// setFromWriters writes keys 0..b.N-1 (random order) into e from writers
// goroutines, writer w taking the keys i ≡ w (mod writers); each writer's
// first write and every syncEvery-th after it is Sync (none if syncEvery
// is 0).
func setFromWriters(b *testing.B, e bench.Engine, writers, syncEvery int) {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var key, value []byte
			for i := w; i < b.N; i += writers {
				key = benchKey(key, uint64(2*i), true)
				value = benchKeys.Value(value[:0], i, benchValueSize)
				sync := syncEvery > 0 && (i/writers)%syncEvery == 0
				if err := e.Set(key, value, sync); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
