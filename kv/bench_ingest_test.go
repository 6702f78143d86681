package kv_test

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// bulkKeys is the size of BenchmarkBulkLoad's load; the figure is
// taken with -bulkkeys=10000000 (minutes, and about 1 GB of disk).
var bulkKeys = flag.Int("bulkkeys", 200_000, "BenchmarkBulkLoad: keys loaded per run")

// Bulk-load parameters: keys in order, values of bulkValueLen bytes, in
// tables of bulkTableKeys keys or batches of bulkBatchKeys.
const (
	bulkValueLen  = 64
	bulkTableKeys = 500_000
	bulkBatchKeys = 1000
)

// bulkKey returns "key" and i in 12 decimal digits, in dst's memory,
// without fmt: both loads generate the keys, and the time is the store's.
func bulkKey(dst []byte, i int) []byte {
	dst = append(dst[:0], "key000000000000"...)
	for j := len(dst) - 1; i > 0; j-- {
		dst[j] = byte('0' + i%10)
		i /= 10
	}
	return dst
}

// BenchmarkBulkLoad loads -bulkkeys sorted keys into an empty store on
// disk two ways and reports both times and their ratio: ingest (tables
// written with sstable.Writer, with the store's filter policy, by
// GOMAXPROCS goroutines, then DB.Ingest) and set (DB.Apply of batches of bulkBatchKeys keys, NoSync,
// then DB.Flush, so that both end with the keys in tables). speedup is
// set-s / ingest-s. On Linux the process's CPU time over each load is
// reported too (ingest-cpu-s, set-cpu-s and their ratio cpu-speedup),
// which a machine busy with other work disturbs less than wall time.
func BenchmarkBulkLoad(b *testing.B) {
	n := *bulkKeys
	b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
		var ingest, set bulkTime
		for range b.N {
			ingest.add(timeBulk(b, n, bulkIngest))
			set.add(timeBulk(b, n, bulkSet))
		}
		b.ReportMetric(ingest.wall.Seconds()/float64(b.N), "ingest-s")
		b.ReportMetric(set.wall.Seconds()/float64(b.N), "set-s")
		b.ReportMetric(set.wall.Seconds()/ingest.wall.Seconds(), "speedup")
		if ingest.cpu > 0 && set.cpu > 0 {
			b.ReportMetric(ingest.cpu.Seconds()/float64(b.N), "ingest-cpu-s")
			b.ReportMetric(set.cpu.Seconds()/float64(b.N), "set-cpu-s")
			b.ReportMetric(set.cpu.Seconds()/ingest.cpu.Seconds(), "cpu-speedup")
		}
	})
}

// bulkTime is the wall and process CPU time of loads; cpu is 0 where the
// system does not tell it.
type bulkTime struct{ wall, cpu time.Duration }

func (t *bulkTime) add(o bulkTime) { t.wall, t.cpu = t.wall+o.wall, t.cpu+o.cpu }

// timeBulk opens an empty store in a new directory, times load(n) on it,
// checks the first and last keys and closes it.
func timeBulk(b *testing.B, n int, load func(b *testing.B, db *kv.DB, dir string, n int)) bulkTime {
	dir := b.TempDir()
	db, err := kv.Open(filepath.Join(dir, "db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	cpu0, cpuOK := processCPU()
	start := time.Now()
	load(b, db, dir, n)
	t := bulkTime{wall: time.Since(start)}
	if cpu1, ok := processCPU(); ok && cpuOK {
		t.cpu = time.Duration(cpu1 - cpu0)
	}
	for _, i := range []int{0, n - 1} {
		if _, err := db.Get(bulkKey(nil, i)); err != nil {
			b.Fatalf("key %d after the load: %v", i, err)
		}
	}
	return t
}

// bulkIngest writes the keys into tables of bulkTableKeys keys under dir,
// GOMAXPROCS tables at a time as a bulk loader would, and ingests them.
func bulkIngest(b *testing.B, db *kv.DB, dir string, n int) {
	policy, err := bloompolicy.New(kv.DefaultFilterFPR)
	if err != nil {
		b.Fatal(err)
	}
	var paths []string
	for lo := 0; lo < n; lo += bulkTableKeys {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("load-%d.sst", len(paths))))
	}
	errs := make([]error, len(paths))
	next := make(chan int, len(paths))
	for t := range paths {
		next <- t
	}
	close(next)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(paths)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range next {
				lo := t * bulkTableKeys
				errs[t] = writeBulkTable(paths[t], lo, min(n, lo+bulkTableKeys), policy)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	if err := db.Ingest(paths); err != nil {
		b.Fatal(err)
	}
}

// writeBulkTable writes keys lo..hi-1 at sequence number 0 into a table
// at path.
func writeBulkTable(path string, lo, hi int, policy bloompolicy.FilterPolicy) error {
	f, err := vfs.Default.Create(path)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{FilterPolicy: policy})
	value := make([]byte, bulkValueLen)
	var key []byte
	for i := lo; i < hi; i++ {
		key = bulkKey(key, i)
		if err := w.Add(sstable.MakeInternalKey(key, 0, sstable.KindSet), value); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// bulkSet writes the keys in batches of bulkBatchKeys, then flushes.
func bulkSet(b *testing.B, db *kv.DB, _ string, n int) {
	value := make([]byte, bulkValueLen)
	var key []byte
	batch := db.NewBatch()
	for lo := 0; lo < n; lo += bulkBatchKeys {
		batch.Reset()
		for i := lo; i < min(n, lo+bulkBatchKeys); i++ {
			key = bulkKey(key, i)
			batch.Set(key, value)
		}
		if err := db.Apply(batch, kv.NoSync); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
}

// TestBulkKey checks the benchmark's key format against fmt's.
func TestBulkKey(t *testing.T) {
	for _, i := range []int{0, 7, 42, 999_999_999} {
		if got, want := string(bulkKey(nil, i)), fmt.Sprintf("key%012d", i); got != want {
			t.Fatalf("bulkKey(%d) = %q, want %q", i, got, want)
		}
	}
}
