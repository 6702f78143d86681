package sstable

import (
	"bytes"
	"math"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/objstorage/objstorageprovider"
	pebblesst "github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// The benchmarks compare this package with Pebble v1.1.5's sstable
// package on the same keys: benchEntries ~40-byte entries in 4 KiB
// Snappy blocks, Bloom filters at 10 bits per key on both sides
// (bloompolicy.NewBitsPerKey(10) per data block here, bloom.FilterPolicy(10)
// per table in Pebble), single-level indexes, block caches big enough to
// hold the table. Compare sub-benchmarks with benchstat, or read the
// ratios in the README.
const benchEntries = 100_000

type benchFixture struct {
	entries      []testEntry
	absent       [][]byte
	rawBytes     int64
	ours, theirs []byte // table bytes
}

var (
	fixtureOnce sync.Once
	fixture     benchFixture
)

func benchTables(b *testing.B) *benchFixture {
	fixtureOnce.Do(func() {
		f := &fixture
		f.entries = fortyByteEntries(benchEntries)
		for i := range benchEntries {
			f.absent = append(f.absent, hashedKey(benchEntries+i))
		}
		for _, e := range f.entries {
			f.rawBytes += int64(e.key.Size() + len(e.value))
		}
		f.ours = buildOurs(b, f.entries)
		f.theirs = buildPebble(b, f.entries)
	})
	return &fixture
}

func ourWriterOptions(b testing.TB) WriterOptions {
	p, err := bloompolicy.NewBitsPerKey(10)
	if err != nil {
		b.Fatal(err)
	}
	return WriterOptions{FilterPolicy: p}
}

func pebbleWriterOptions() pebblesst.WriterOptions {
	return pebblesst.WriterOptions{
		BlockSize:      4096,
		IndexBlockSize: math.MaxInt32, // single-level index, as here
		FilterPolicy:   bloom.FilterPolicy(10),
		Compression:    pebblesst.SnappyCompression,
	}
}

func buildOurs(b testing.TB, entries []testEntry) []byte {
	return buildBytes(b, entries, ourWriterOptions(b))
}

func buildPebble(b testing.TB, entries []testEntry) []byte {
	fs := vfs.NewMem()
	f, err := fs.Create("p.sst")
	if err != nil {
		b.Fatal(err)
	}
	w := pebblesst.NewWriter(objstorageprovider.NewFileWritable(f), pebbleWriterOptions())
	for _, e := range entries {
		if err := w.Add(pebblesst.InternalKey{UserKey: e.key.UserKey, Trailer: e.key.Trailer}, e.value); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	data, err := readAll(fs, "p.sst")
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkBuild writes a table of benchEntries entries per op; MB/s
// counts the raw keys and values.
func BenchmarkBuild(b *testing.B) {
	f := benchTables(b)
	b.Run("bloomkv", func(b *testing.B) {
		b.SetBytes(f.rawBytes)
		for range b.N {
			buildOurs(b, f.entries)
		}
	})
	b.Run("pebble", func(b *testing.B) {
		b.SetBytes(f.rawBytes)
		for range b.N {
			buildPebble(b, f.entries)
		}
	})
}

func openPebble(b *testing.B, data []byte, cache *pebble.Cache) *pebblesst.Reader {
	fs := vfs.NewMem()
	f, _ := fs.Create("p.sst")
	f.Write(bytes.Clone(data))
	f.Close()
	f, err := fs.Open("p.sst")
	if err != nil {
		b.Fatal(err)
	}
	readable, err := pebblesst.NewSimpleReadable(f)
	if err != nil {
		b.Fatal(err)
	}
	r, err := pebblesst.NewReader(readable, pebblesst.ReaderOptions{
		Cache:   cache,
		Filters: map[string]pebblesst.FilterPolicy{bloom.FilterPolicy(10).Name(): bloom.FilterPolicy(10)},
	})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkGet looks up present and absent keys in random order, from a
// warm block cache. blockreads/op counts data blocks fetched per lookup
// (for Pebble: block-cache accesses per lookup minus its one filter-block
// access).
func BenchmarkGet(b *testing.B) {
	f := benchTables(b)
	present := make([][]byte, len(f.entries))
	for i, e := range f.entries {
		present[(i*7919)%len(present)] = e.key.UserKey // a fixed shuffle
	}
	for _, set := range []struct {
		name string
		keys [][]byte
		want bool
	}{{"present", present, true}, {"absent", f.absent, false}} {
		b.Run(set.name+"/bloomkv", func(b *testing.B) { benchGetOurs(b, f.ours, set.keys, set.want) })
		b.Run(set.name+"/pebble", func(b *testing.B) { benchGetPebble(b, f.theirs, set.keys, set.want) })
	}
}

func benchGetOurs(b *testing.B, data []byte, keys [][]byte, want bool) {
	p, _ := bloompolicy.NewBitsPerKey(10)
	r, err := openBytes(data, ReaderOptions{Cache: NewCache(64 << 20), Filters: filters(p)})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var st LookupStats
	for _, k := range keys { // warm the cache
		r.Get(k, base.SeqNumMax, nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := keys[i%len(keys)]
		_, _, found, err := r.Get(k, base.SeqNumMax, &st)
		if err != nil || found != want {
			b.Fatalf("Get(%s) = %v, %v", k, found, err)
		}
	}
	b.ReportMetric(float64(st.BlockReads)/float64(b.N), "blockreads/op")
}

func benchGetPebble(b *testing.B, data []byte, keys [][]byte, want bool) {
	cache := pebble.NewCache(64 << 20)
	defer cache.Unref()
	r := openPebble(b, data, cache)
	defer r.Close()
	it, err := r.NewIter(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	get := func(k []byte) bool {
		ik, lv := it.SeekPrefixGE(k, k, pebblesst.SeekGEFlags(0))
		if ik == nil || !bytes.Equal(ik.UserKey, k) {
			return false
		}
		_, _, err := lv.Value(nil)
		return err == nil
	}
	for _, k := range keys {
		get(k)
	}
	before := cache.Metrics()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := keys[i%len(keys)]
		if get(k) != want {
			b.Fatalf("SeekPrefixGE(%s) found %v", k, !want)
		}
	}
	after := cache.Metrics()
	accesses := float64(after.Hits+after.Misses-before.Hits-before.Misses) / float64(b.N)
	b.ReportMetric(accesses-1, "blockreads/op")
}

// BenchmarkIter scans the whole table forward per op; ns/entry is the
// figure to compare.
func BenchmarkIter(b *testing.B) {
	f := benchTables(b)
	b.Run("bloomkv", func(b *testing.B) {
		r, err := openBytes(f.ours, ReaderOptions{Cache: NewCache(64 << 20)})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		b.ResetTimer()
		n := 0
		for range b.N {
			it, _ := r.NewIter(nil)
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			it.Close()
		}
		reportPerEntry(b, n)
	})
	b.Run("pebble", func(b *testing.B) {
		cache := pebble.NewCache(64 << 20)
		defer cache.Unref()
		r := openPebble(b, f.theirs, cache)
		defer r.Close()
		b.ResetTimer()
		n := 0
		for range b.N {
			it, _ := r.NewIter(nil, nil)
			for k, _ := it.First(); k != nil; k, _ = it.Next() {
				n++
			}
			it.Close()
		}
		reportPerEntry(b, n)
	})
}

func reportPerEntry(b *testing.B, n int) {
	if n != b.N*benchEntries {
		b.Fatalf("iterated %d entries in %d scans", n, b.N)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/entry")
}
