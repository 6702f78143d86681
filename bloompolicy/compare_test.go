package bloompolicy_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// This file compares the Bloom policy with Pebble's bloom.FilterPolicy at
// equal memory (10 bits per key) on the same million keys:
//
//	go test -run '^$' -bench . -benchtime 20x -count 6 ./bloompolicy/ | tee bench.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /impl bench.txt
//
// The paired benchmarks give the ratios directly. A query batch is short,
// so give them enough iterations for the filters to be warm: 20 iterations
// of 4096 queries measure mostly page faults and cold caches.
//
//	go test -run '^$' -bench BuildPaired -benchtime 60x -count 3 ./bloompolicy/
//	go test -run '^$' -bench MayContainPaired -count 3 ./bloompolicy/

const compareKeys = 1_000_000

// contender is one filter implementation under comparison.
type contender struct {
	name       string
	newWriter  func() bloompolicy.FilterWriter
	mayContain func(filter, key []byte) bool
}

func contenders(tb testing.TB) []contender {
	ours, err := bloompolicy.NewBitsPerKey(10)
	if err != nil {
		tb.Fatal(err)
	}
	theirs := bloom.FilterPolicy(10)
	return []contender{
		{"bloomkv", ours.NewWriter, ours.MayContain},
		{"pebble", func() bloompolicy.FilterWriter { return theirs.NewWriter(pebble.TableFilter) },
			func(f, k []byte) bool { return theirs.MayContain(pebble.TableFilter, f, k) }},
	}
}

// keySet is a million present and as many absent keys of one shape.
type keySet struct {
	present, absent [][]byte
}

var (
	keySetsMu sync.Mutex
	keySets   = map[string]*keySet{}
)

// keysOf returns the shared key set of shape, generating it once.
func keysOf(shape keyShape) *keySet {
	keySetsMu.Lock()
	defer keySetsMu.Unlock()
	if ks, ok := keySets[shape.name]; ok {
		return ks
	}
	ks := &keySet{present: make([][]byte, compareKeys), absent: make([][]byte, compareKeys)}
	for i := range compareKeys {
		ks.present[i] = shape.key(nil, uint64(i))
		ks.absent[i] = shape.key(nil, uint64(compareKeys+i))
	}
	keySets[shape.name] = ks
	return ks
}

func build(c contender, keys [][]byte, dst []byte) []byte {
	w := c.newWriter()
	for _, k := range keys {
		w.AddKey(k)
	}
	return w.Finish(dst)
}

// falsePositiveRate queries filter with every absent key.
func falsePositiveRate(c contender, filter []byte, absent [][]byte) float64 {
	fp := 0
	for _, k := range absent {
		if c.mayContain(filter, k) {
			fp++
		}
	}
	return float64(fp) / float64(len(absent))
}

// reportFilter reports the filter's size and false-positive rate.
func reportFilter(b *testing.B, c contender, filter []byte, ks *keySet) {
	b.ReportMetric(8*float64(len(filter))/compareKeys, "bits/key")
	b.ReportMetric(100*falsePositiveRate(c, filter, ks.absent), "fpr%")
}

// BenchmarkBuild builds a filter of a million keys per iteration.
func BenchmarkBuild(b *testing.B) {
	for _, shape := range keyShapes {
		ks := keysOf(shape)
		for _, c := range contenders(b) {
			b.Run(fmt.Sprintf("shape=%s/impl=%s", shape.name, c.name), func(b *testing.B) {
				var filter []byte
				start := time.Now()
				for b.Loop() {
					filter = build(c, ks.present, filter[:0])
				}
				b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*compareKeys), "ns/key")
				reportFilter(b, c, filter, ks)
			})
		}
	}
}

// BenchmarkMayContain queries absent keys, the case a filter exists for.
func BenchmarkMayContain(b *testing.B) {
	benchmarkQueries(b, func(ks *keySet) [][]byte { return ks.absent })
}

// BenchmarkMayContainPresent queries added keys: every probe is tested.
func BenchmarkMayContainPresent(b *testing.B) {
	benchmarkQueries(b, func(ks *keySet) [][]byte { return ks.present })
}

func benchmarkQueries(b *testing.B, queries func(*keySet) [][]byte) {
	for _, shape := range keyShapes {
		ks := keysOf(shape)
		for _, c := range contenders(b) {
			b.Run(fmt.Sprintf("shape=%s/impl=%s", shape.name, c.name), func(b *testing.B) {
				filter := build(c, ks.present, nil)
				q := queries(ks)
				i, hits := 0, 0
				for b.Loop() {
					if c.mayContain(filter, q[i]) {
						hits++
					}
					if i++; i == len(q) {
						i = 0
					}
				}
				reportFilter(b, c, filter, ks)
			})
		}
	}
}

// TestAgainstPebble checks the equal-memory comparison deterministically:
// at 10 bits per key on the same million keys, the Bloom filter is no
// larger than Pebble's and its false-positive rate is at most 1.00%.
func TestAgainstPebble(t *testing.T) {
	if testing.Short() {
		t.Skip("builds filters of a million keys")
	}
	cs := contenders(t)
	for _, shape := range keyShapes {
		ks := keysOf(shape)
		ours, theirs := build(cs[0], ks.present, nil), build(cs[1], ks.present, nil)
		ourFPR := falsePositiveRate(cs[0], ours, ks.absent)
		theirFPR := falsePositiveRate(cs[1], theirs, ks.absent)
		t.Logf("%s: bloomkv %d bytes, fpr %.3f%%; pebble %d bytes, fpr %.3f%%",
			shape.name, len(ours), 100*ourFPR, len(theirs), 100*theirFPR)
		if len(ours) > len(theirs) {
			t.Errorf("%s: filter of %d bytes is larger than Pebble's %d", shape.name, len(ours), len(theirs))
		}
		if ourFPR > 0.0100 {
			t.Errorf("%s: fpr %.3f%% exceeds 1.00%%", shape.name, 100*ourFPR)
		}
	}
}

// The paired benchmarks run both implementations in each iteration, first
// one then the other first, and report the ratio of their times, so that
// load from other processes, which drifts over seconds, and the caches
// warmed by whoever ran first fall on both alike.

// order returns the order in which iteration i runs the contenders.
func order(i int) [2]int {
	if i%2 == 0 {
		return [2]int{0, 1}
	}
	return [2]int{1, 0}
}

// touch reads every byte of keys, so that the queries that follow find
// them in cache, as a lookup finds the key it just computed.
func touch(keys [][]byte) (sum byte) {
	for _, k := range keys {
		for _, c := range k {
			sum ^= c
		}
	}
	return sum
}

// BenchmarkBuildPaired builds one filter of a million keys with each
// implementation per iteration and reports bloomkv's time ÷ Pebble's.
func BenchmarkBuildPaired(b *testing.B) {
	for _, shape := range keyShapes {
		ks := keysOf(shape)
		b.Run("shape="+shape.name, func(b *testing.B) {
			cs := contenders(b)
			var elapsed [2]time.Duration
			var filter []byte
			for iter := 0; b.Loop(); iter++ {
				for _, i := range order(iter) {
					start := time.Now()
					filter = build(cs[i], ks.present, filter[:0])
					elapsed[i] += time.Since(start)
				}
			}
			reportPaired(b, elapsed, b.N*compareKeys, "ns/key")
		})
	}
}

// BenchmarkMayContainPaired runs 4096 absent-key queries on each
// implementation per iteration and reports bloomkv's time ÷ Pebble's.
func BenchmarkMayContainPaired(b *testing.B) {
	const batch = 4096
	for _, shape := range keyShapes {
		ks := keysOf(shape)
		b.Run("shape="+shape.name, func(b *testing.B) {
			cs := contenders(b)
			filters := [2][]byte{build(cs[0], ks.present, nil), build(cs[1], ks.present, nil)}
			var elapsed [2]time.Duration
			next, hits := 0, 0
			var sink byte
			for iter := 0; b.Loop(); iter++ {
				q := ks.absent[next : next+batch]
				for _, i := range order(iter) {
					sink ^= touch(q)
					start := time.Now()
					for _, k := range q {
						if cs[i].mayContain(filters[i], k) {
							hits++
						}
					}
					elapsed[i] += time.Since(start)
				}
				if next += batch; next+batch > len(ks.absent) {
					next = 0
				}
			}
			reportPaired(b, elapsed, b.N*batch, "ns/query")
			_ = sink
		})
	}
}

func reportPaired(b *testing.B, elapsed [2]time.Duration, ops int, unit string) {
	b.ReportMetric(float64(elapsed[0].Nanoseconds())/float64(ops), "bloomkv-"+unit)
	b.ReportMetric(float64(elapsed[1].Nanoseconds())/float64(ops), "pebble-"+unit)
	b.ReportMetric(float64(elapsed[0])/float64(elapsed[1]), "bloomkv/pebble")
	b.ReportMetric(0, "ns/op") // an iteration runs both: its time means nothing alone
}
