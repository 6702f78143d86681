package pebbleadapter

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// BenchmarkPebbleGetAbsent times absent Gets in a Pebble DB of overlapping
// L0 tables, and reports the filters' observed false-positive rate (fpr%)
// and size (bits/key), for bloomkv's Bloom and Pebble's at the same 10 bits
// per key. Run it with -benchtime=25000x to look up every absent key once,
// as the tests do.
func BenchmarkPebbleGetAbsent(b *testing.B) {
	for _, bc := range []struct {
		name   string
		policy func(testing.TB) pebble.FilterPolicy
	}{
		{"policy=bloomkv", func(tb testing.TB) pebble.FilterPolicy { return ToPebble(newBloomBitsPerKey(tb, 10)) }},
		{"policy=pebble", func(testing.TB) pebble.FilterPolicy { return bloom.FilterPolicy(10) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := newLSM(b, *seedFlag, measureTables, measureKeysPerTable, measureAbsent)
			policy := bc.policy(b)
			db := openPebble(b, pebbleOptions(vfs.NewMem(), policy))
			defer db.Close()
			l.load(b, db)
			bitsPerKey := checkTableFilters(b, db, policy.Name())
			b.ResetTimer()
			c := countFilter(db, func() {
				for i := 0; i < b.N; i++ {
					k := l.absent[i%len(l.absent)]
					if _, _, err := db.Get(k); !errors.Is(err, pebble.ErrNotFound) {
						b.Fatalf("Get(%q) of an absent key: err = %v", k, err)
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(100*c.fpr(), "fpr%")
			b.ReportMetric(bitsPerKey, "bits/key")
		})
	}
}
