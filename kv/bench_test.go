package kv_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// Benchmarks of bloomkv side by side with Pebble v1.1.5, on disk
// (vfs.Default in b.TempDir()), each engine a sub-benchmark
// (engine=bloomkv, engine=pebble), so benchstat can set them side by side
// (-col /engine).
//
// Both engines get the same memtable size, block size, table size, level
// sizes, L0 compaction trigger, L0 write stall (and no slowdown before it:
// Pebble v1.1.5 has none), block cache capacity, Snappy compression,
// and a Bloom filter of 10 bits per key on every level: bloomkv's own
// (bloompolicy.NewBitsPerKey(10), one filter per data block), Pebble's
// (bloom.FilterPolicy(10), one filter per table, the only kind Pebble v1
// has).
//
// Pebble charges its memtables to its block cache; it gets room for two
// on top of the shared capacity, so blocks get the same bytes in both.
//
// Filters at L6: Pebble v1.1.5 writes them, but DB.Get never reads them
// (only iterators opened with IterOptions.UseL6Filters do). Pebble sizes
// its levels from the bottom up, so a fully compacted store sits in L6,
// where every Pebble Get reads a data block, present key or not; bloomkv's
// levels grow from L1 down, and its filters work at every level. Gets are
// therefore measured on two shapes: shape=l0, where both engines hold the
// data in L0 tables (automatic compactions off while loading) and both
// use their filters, the like-for-like comparison; and shape=compacted,
// each engine's settled shape after a full compaction, which shows what
// the L6 rule costs Pebble's absent lookups.

const (
	benchValueSize  = 100
	benchPrefill    = 200_000
	benchCacheSize  = 32 << 20
	benchMemTable   = 4 << 20
	benchBitsPerKey = 10
)

// benchEngine is what the benchmarks drive.
type benchEngine interface {
	set(key, value []byte, sync bool) error
	// get reports whether key is present; the value is copied, as bloomkv's
	// Get returns the caller's own copy.
	get(key []byte) (bool, error)
	scan() (int, error)
	flush() error
	compactAll() error
	// idle reports whether no flush or compaction runs or is due.
	idle() bool
	// counters returns the lookup counters the benchmarks report per
	// operation.
	counters() map[string]float64
	// levels returns the number of tables in each level.
	levels() []int
	// fillStats returns what BenchmarkFillLarge reports of the engine.
	fillStats() fillStats
	close() error
}

var benchEngines = []struct {
	name string
	open func(b *testing.B, dir string, autoCompact bool) benchEngine
}{
	{"bloomkv", openBloomkv},
	{"pebble", openPebble},
}

// --- bloomkv ---

type bloomkvEngine struct {
	db *kv.DB
	it *kv.Iterator // for prefix seeks, opened by the first
}

func openBloomkv(b *testing.B, dir string, autoCompact bool) benchEngine {
	return openBloomkvWith(b, dir, bloomkvBenchOptions(b, autoCompact))
}

// openBloomkvWith opens a bloomkv store in dir with opts.
func openBloomkvWith(b *testing.B, dir string, opts *kv.Options) *bloomkvEngine {
	db, err := kv.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	return &bloomkvEngine{db: db}
}

// bloomkvBenchOptions returns the options of the benchmarks' bloomkv
// stores (see the top of this file).
func bloomkvBenchOptions(b *testing.B, autoCompact bool) *kv.Options {
	policy, err := bloompolicy.NewBitsPerKey(benchBitsPerKey)
	if err != nil {
		b.Fatal(err)
	}
	opts := &kv.Options{
		FS:                          vfs.Default,
		FilterPolicy:                policy,
		MemTableSize:                benchMemTable,
		BlockSize:                   kv.DefaultBlockSize,
		BlockCacheSize:              benchCacheSize,
		TargetFileSize:              kv.DefaultTargetFileSize,
		LBaseMaxBytes:               kv.DefaultLBaseMaxBytes,
		L0CompactionThreshold:       kv.DefaultL0CompactionThreshold,
		DisableAutomaticCompactions: !autoCompact,
	}
	// Pebble v1.1.5 has no write slowdown, only its stop at
	// L0StopWritesThreshold: bloomkv's slowdown starts there too.
	opts.L0SlowdownWritesThreshold = kv.DefaultL0StopWritesThreshold
	return opts
}

func (e *bloomkvEngine) set(key, value []byte, sync bool) error {
	o := kv.NoSync
	if sync {
		o = kv.Sync
	}
	return e.db.Set(key, value, o)
}

func (e *bloomkvEngine) get(key []byte) (bool, error) {
	_, err := e.db.Get(key)
	if err == kv.ErrNotFound {
		return false, nil
	}
	return err == nil, err
}

func (e *bloomkvEngine) scan() (int, error) { return countKeys(e.db.NewIter(nil)) }

func (e *bloomkvEngine) flush() error      { return e.db.Flush() }
func (e *bloomkvEngine) compactAll() error { return e.db.Compact(nil, nil) }

func (e *bloomkvEngine) idle() bool {
	m := e.db.Metrics()
	if m.Compact.InProgress != 0 || m.MemTable.Count != 1 {
		return false
	}
	for _, l := range m.Levels[:len(m.Levels)-1] { // L6 never compacts
		if l.Score >= 1 {
			return false
		}
	}
	return true
}

func (e *bloomkvEngine) counters() map[string]float64 {
	m := e.db.Metrics()
	return map[string]float64{
		"tables/op":      float64(m.Lookups.TablesConsidered),
		"reads/op":       float64(m.Lookups.BlockReads),
		"filter-neg/op":  float64(m.Lookups.FilterNegatives),
		"cache-gets/op":  float64(m.BlockCache.Hits + m.BlockCache.Misses),
		"cache-miss/op":  float64(m.BlockCache.Misses),
		"filter-fpos/op": float64(m.Lookups.FilterFalsePositives),
	}
}

func (e *bloomkvEngine) levels() []int { return levelFiles(e.db.Metrics()) }

func (e *bloomkvEngine) close() error {
	if e.it != nil {
		if err := e.it.Close(); err != nil {
			return err
		}
	}
	return e.db.Close()
}

// --- Pebble ---

type pebbleEngine struct {
	db    *pebble.DB
	cache *pebble.Cache
	buf   []byte
	it    *pebble.Iterator // for prefix seeks, opened by the first
}

// quietLogger keeps Pebble's informational messages out of benchmark
// output.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

func openPebble(b *testing.B, dir string, autoCompact bool) benchEngine {
	return openPebbleWith(b, dir, pebbleBenchOptions(autoCompact))
}

// openPebbleWith opens a Pebble store in dir with opts, whose Cache it
// takes over.
func openPebbleWith(b *testing.B, dir string, opts *pebble.Options) *pebbleEngine {
	db, err := pebble.Open(dir, opts)
	if err != nil {
		opts.Cache.Unref()
		b.Fatal(err)
	}
	return &pebbleEngine{db: db, cache: opts.Cache}
}

// pebbleBenchOptions returns the options of the benchmarks' Pebble stores
// (see the top of this file), with a cache of their own.
func pebbleBenchOptions(autoCompact bool) *pebble.Options {
	cache := pebble.NewCache(benchCacheSize + 2*benchMemTable)
	opts := &pebble.Options{
		FS:                          vfs.Default,
		Cache:                       cache,
		MemTableSize:                benchMemTable,
		LBaseMaxBytes:               kv.DefaultLBaseMaxBytes,
		L0CompactionThreshold:       kv.DefaultL0CompactionThreshold,
		DisableAutomaticCompactions: !autoCompact,
		Logger:                      quietLogger{},
	}
	// All seven levels, so none falls back to Pebble's defaults (which
	// double the target file size per level).
	opts.Levels = make([]pebble.LevelOptions, 7)
	for i := range opts.Levels {
		opts.Levels[i] = pebble.LevelOptions{
			BlockSize:      kv.DefaultBlockSize,
			TargetFileSize: kv.DefaultTargetFileSize,
			FilterPolicy:   bloom.FilterPolicy(benchBitsPerKey),
			FilterType:     pebble.TableFilter,
			Compression:    pebble.SnappyCompression,
		}
	}
	return opts
}

func (e *pebbleEngine) set(key, value []byte, sync bool) error {
	o := pebble.NoSync
	if sync {
		o = pebble.Sync
	}
	return e.db.Set(key, value, o)
}

func (e *pebbleEngine) get(key []byte) (bool, error) {
	v, closer, err := e.db.Get(key)
	if err == pebble.ErrNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	e.buf = append(e.buf[:0], v...)
	return true, closer.Close()
}

func (e *pebbleEngine) scan() (int, error) { return countKeys(e.db.NewIter(nil)) }

func (e *pebbleEngine) flush() error { return e.db.Flush() }

// compactAll compacts every key: keys are printable ASCII.
func (e *pebbleEngine) compactAll() error { return e.db.Compact([]byte{0}, []byte{0xff}, true) }

// idle does not wait for Compact.EstimatedDebt to reach zero: Pebble's
// estimate stays above zero on a store whose every level scores under 1,
// where Pebble schedules nothing more.
func (e *pebbleEngine) idle() bool {
	m := e.db.Metrics()
	if m.Compact.NumInProgress != 0 || m.Flush.NumInProgress != 0 {
		return false
	}
	for _, l := range m.Levels[:len(m.Levels)-1] { // L6 never compacts
		if l.Score >= 1 {
			return false
		}
	}
	return true
}

// counters maps Pebble's metrics onto the same names where they mean the
// same: a filter hit is a negative; block cache lookups include index and
// filter blocks, which bloomkv keeps out of its cache. Pebble counts no
// tables considered and no data-block reads apart.
func (e *pebbleEngine) counters() map[string]float64 {
	m := e.db.Metrics()
	return map[string]float64{
		"filter-neg/op": float64(m.Filter.Hits),
		"cache-gets/op": float64(m.BlockCache.Hits + m.BlockCache.Misses),
		"cache-miss/op": float64(m.BlockCache.Misses),
	}
}

func (e *pebbleEngine) levels() []int {
	var n []int
	for _, l := range e.db.Metrics().Levels {
		n = append(n, int(l.NumFiles))
	}
	return n
}

func (e *pebbleEngine) close() error {
	if e.it != nil {
		if err := e.it.Close(); err != nil {
			return err
		}
	}
	err := e.db.Close()
	e.cache.Unref()
	return err
}

// scanIter is what countKeys needs of either engine's iterator.
type scanIter interface {
	First() bool
	Next() bool
	Close() error
}

// countKeys walks a freshly opened iterator to the end, closes it, and
// returns the number of keys it showed.
func countKeys[I scanIter](it I, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Close()
}

// --- workloads ---

// waitIdle waits until e's background work is done, for at most limit,
// and reports whether it is.
func waitIdle(e benchEngine, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); !e.idle(); {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// mix64 is a bijection on uint64 (the splitmix64 finalizer): distinct
// indexes give distinct, randomly ordered keys.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// benchKey writes key i of a store into buf: "k" and 16 hex digits. Even
// i are loaded; odd ones are the absent keys, spread among present ones.
func benchKey(buf []byte, i uint64, random bool) []byte {
	if random {
		i = mix64(i)
	}
	return fmt.Appendf(buf[:0], "k%016x", i)
}

// benchValues is a pool of incompressible-ish bytes values are cut from.
var benchValues = []byte(randomLetters(newRand(1), 1<<16))

func benchValue(i uint64) []byte {
	off := (i * 7919) % uint64(len(benchValues)-benchValueSize)
	return benchValues[off : off+benchValueSize]
}

// writeKeys writes keys lo..hi-1 of a store (benchKey(2*i), benchValue(i))
// into e.
func writeKeys(b *testing.B, e benchEngine, lo, hi int, random, sync bool) {
	var key []byte
	for i := lo; i < hi; i++ {
		key = benchKey(key, uint64(2*i), random)
		if err := e.set(key, benchValue(uint64(i)), sync); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCounters reports the change of each counter per operation.
func reportCounters(b *testing.B, before, after map[string]float64) {
	for name, v := range after {
		b.ReportMetric((v-before[name])/float64(b.N), name)
	}
}

// BenchmarkFill writes fresh stores, one key per operation, in random or
// sequential key order, with Sync or NoSync. Flushes and compactions run
// in the background as the store grows.
func BenchmarkFill(b *testing.B) {
	for _, order := range []string{"random", "sequential"} {
		for _, sync := range []bool{false, true} {
			for _, eng := range benchEngines {
				name := fmt.Sprintf("order=%s/sync=%v/engine=%s", order, sync, eng.name)
				b.Run(name, func(b *testing.B) {
					e := eng.open(b, b.TempDir(), true)
					b.SetBytes(17 + benchValueSize)
					b.ResetTimer()
					writeKeys(b, e, 0, b.N, order == "random", sync)
					b.StopTimer()
					if err := e.close(); err != nil {
						b.Fatal(err)
					}
				})
			}
		}
	}
}

// loadStore opens a store in dir and loads benchPrefill keys (the even
// ones) in random order, then settles it into shape: "l0" flushes with
// compactions off; "compacted" compacts everything and waits for
// background work to end.
func loadStore(b *testing.B, open func(*testing.B, string, bool) benchEngine, dir, shape string) benchEngine {
	e := open(b, dir, shape == "compacted")
	writeKeys(b, e, 0, benchPrefill, true, false)
	if err := e.flush(); err != nil {
		b.Fatal(err)
	}
	if shape == "compacted" {
		if err := e.compactAll(); err != nil {
			b.Fatal(err)
		}
		if !waitIdle(e, time.Minute) {
			b.Logf("engine still busy a minute after a full compaction: %v tables per level", e.levels())
		}
	}
	return e
}

// BenchmarkGet looks up present and absent keys, in random order, in a
// store of benchPrefill keys, in each shape (see the top of this file).
// Besides time it reports, per lookup, the counters each engine keeps:
// tables considered, data blocks read, filter negatives, block cache
// lookups and misses.
func BenchmarkGet(b *testing.B) {
	for _, shape := range []string{"l0", "compacted"} {
		for _, eng := range benchEngines {
			e := loadStore(b, eng.open, b.TempDir(), shape)
			b.Logf("shape=%s engine=%s: tables per level %v", shape, eng.name, e.levels())
			for _, present := range []bool{true, false} {
				name := fmt.Sprintf("shape=%s/present=%v/engine=%s", shape, present, eng.name)
				b.Run(name, func(b *testing.B) { benchGets(b, e, present) })
			}
			if err := e.close(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchGets(b *testing.B, e benchEngine, present bool) {
	var key []byte
	before := e.counters()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := mix64(uint64(i)) % benchPrefill
		key = benchKey(key, 2*j+boolToUint(!present), true)
		checkGet(b, e, key, present)
	}
	b.StopTimer()
	reportCounters(b, before, e.counters())
}

// checkGet looks key up in e and fails b on an error or a wrong answer.
func checkGet(b *testing.B, e benchEngine, key []byte, present bool) {
	found, err := e.get(key)
	if err != nil {
		b.Fatal(err)
	}
	if found != present {
		b.Fatalf("key %s: found %v, want %v", key, found, present)
	}
}

func boolToUint(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// BenchmarkScan iterates over a whole compacted store of benchPrefill keys.
func BenchmarkScan(b *testing.B) {
	for _, eng := range benchEngines {
		e := loadStore(b, eng.open, b.TempDir(), "compacted")
		b.Run("engine="+eng.name, func(b *testing.B) {
			b.SetBytes(benchPrefill * (17 + benchValueSize))
			for i := 0; i < b.N; i++ {
				n, err := e.scan()
				if err != nil {
					b.Fatal(err)
				}
				if n != benchPrefill {
					b.Fatalf("scan saw %d keys, want %d", n, benchPrefill)
				}
			}
		})
		if err := e.close(); err != nil {
			b.Fatal(err)
		}
	}
}
