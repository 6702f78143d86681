package kv_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// The prefix-scan workload: users, each with the keys
// "user/<id>/<field>" of userFields, loaded in scattered order and fully
// compacted; then SeekPrefixGE("user/<id>/") for absent users (odd ids)
// or present ones (even ids, followed by Next through the user's fields).
// Both engines split keys with itertest.UserSplit, so their filters hold the users'
// prefixes: bloomkv one filter per data block from bloompolicy.New(0.01),
// Pebble one per table from bloom.FilterPolicy(10) (the nearest whole
// number of bits), and Pebble's prefix seeks go through an iterator with
// UseL6Filters, since a full compaction puts its data in L6.
const (
	prefixUsers     = 100_000
	prefixTargetFPR = 0.01
)

// prefixEngine is a store of the prefix workload.
type prefixEngine interface {
	benchEngine
	// seekPrefix seeks to prefix and counts the keys of that prefix.
	seekPrefix(prefix []byte) (int, error)
}

// openPrefixStore opens a store of the prefix workload in dir, with or
// without filters, and loads and compacts it.
func openPrefixStore(b *testing.B, engine, dir string, filters bool) prefixEngine {
	var e prefixEngine
	switch engine {
	case "bloomkv":
		opts := bloomkvBenchOptions(b, true)
		opts.Comparer = userComparer()
		policy, err := bloompolicy.New(prefixTargetFPR)
		if err != nil {
			b.Fatal(err)
		}
		opts.FilterPolicy, opts.DisableFilters = policy, !filters
		e = openBloomkvWith(b, dir, opts)
	case "pebble":
		opts := pebbleBenchOptions(true)
		c := *pebble.DefaultComparer
		c.Split = itertest.UserSplit
		opts.Comparer = &c
		for i := range opts.Levels {
			opts.Levels[i].FilterPolicy = nil
			if filters {
				opts.Levels[i].FilterPolicy = bloom.FilterPolicy(benchBitsPerKey)
			}
		}
		e = openPebbleWith(b, dir, opts)
	}
	err := loadUsers(prefixUsers, func(k, v []byte) {
		if err := e.set(k, v, false); err != nil {
			b.Fatal(err)
		}
	}, e.flush)
	if err == nil {
		err = e.compactAll()
	}
	if err != nil {
		b.Fatal(err)
	}
	if !waitIdle(e, time.Minute) {
		b.Logf("engine still busy a minute after a full compaction: %v tables per level", e.levels())
	}
	return e
}

func (e *bloomkvEngine) seekPrefix(prefix []byte) (int, error) {
	if e.it == nil {
		it, err := e.db.NewIter(nil)
		if err != nil {
			return 0, err
		}
		e.it = it
	}
	n := 0
	for ok := e.it.SeekPrefixGE(prefix); ok; ok = e.it.Next() {
		n++
	}
	return n, e.it.Error()
}

func (e *pebbleEngine) seekPrefix(prefix []byte) (int, error) {
	if e.it == nil {
		it, err := e.db.NewIter(&pebble.IterOptions{UseL6Filters: true})
		if err != nil {
			return 0, err
		}
		e.it = it
	}
	n := 0
	for ok := e.it.SeekPrefixGE(prefix); ok; ok = e.it.Next() {
		n++
	}
	return n, e.it.Error()
}

// BenchmarkPrefixSeek runs the prefix-scan workload on each engine, with
// and without filters, for absent and present users. Besides the time per
// seek it reports the engines' counters per seek (see reportCounters):
// for bloomkv tables considered, filter negatives and false positives and
// data blocks read; for Pebble filter negatives and block-cache lookups
// (index and filter blocks included). For bloomkv with filters on absent
// users it also reports reads/fpr·tables: data blocks read per
// false-positive rate times tables considered, at most about 1 when every
// read is a filter's false positive.
func BenchmarkPrefixSeek(b *testing.B) {
	for _, engine := range []string{"bloomkv", "pebble"} {
		for _, filters := range []bool{true, false} {
			e := openPrefixStore(b, engine, b.TempDir(), filters)
			b.Logf("engine=%s filters=%v: tables per level %v", engine, filters, e.levels())
			for _, present := range []bool{false, true} {
				name := fmt.Sprintf("present=%v/filters=%v/engine=%s", present, filters, engine)
				b.Run(name, func(b *testing.B) { benchPrefixSeeks(b, e, present) })
			}
			if err := e.close(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchPrefixSeeks(b *testing.B, e prefixEngine, present bool) {
	var prefix []byte
	want := 0
	if present {
		want = len(userFields)
	}
	before := e.counters()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := 2*int(mix64(uint64(i))%prefixUsers) + int(boolToUint(!present))
		prefix = userPrefix(prefix, id)
		n, err := e.seekPrefix(prefix)
		if err != nil {
			b.Fatal(err)
		}
		if n != want {
			b.Fatalf("%s: %d keys, want %d", prefix, n, want)
		}
	}
	b.StopTimer()
	after := e.counters()
	reportCounters(b, before, after)
	verdicts := after["filter-neg/op"] + after["filter-fpos/op"] - before["filter-neg/op"] - before["filter-fpos/op"]
	if tables, ok := after["tables/op"]; ok && !present && verdicts > 0 {
		reads := after["reads/op"] - before["reads/op"]
		b.ReportMetric(reads/(prefixTargetFPR*(tables-before["tables/op"])), "reads/fpr·tables")
	}
}
