package kv_test

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/internal/bench"
)

// compressKeys is the store size of BenchmarkCompressible.
const compressKeys = 300000

// BenchmarkCompressible loads compressKeys keys whose values compress
// (each value a few random bytes, then a text that repeats from value to
// value, as records of one schema do), compacts the store and walks it
// forward, as BenchmarkIterCompacted's scan-forward does. It reports the
// bytes of the tables (table-MB) beside the time per entry of a scan; the
// engines run one right after the other:
//
//	go test ./kv -run '^$' -bench 'Compressible' -count 3
//
// The compacted tables sit at the bottom of the tree, where both engines
// write a version every reader sees with sequence number 0: the entries'
// trailers repeat, and compress with the values.
func BenchmarkCompressible(b *testing.B) {
	for _, eng := range benchEngines {
		e := eng.open(b, b.TempDir(), true)
		defer func() {
			if err := e.Close(); err != nil {
				b.Error(err)
			}
		}()
		loadCompressible(b, e)
		var bytes int64
		for _, l := range e.Shape() {
			bytes += l.Bytes
		}
		fullScan(b, e, compressKeys, true) // fills the cache as far as it holds the store
		b.Run("engine="+eng.name, func(b *testing.B) {
			b.ReportMetric(float64(bytes)/1e6, "table-MB")
			b.SetBytes(int64(compressKeys) * benchEntryBytes)
			for i := 0; i < b.N; i++ {
				fullScan(b, e, compressKeys, true)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*compressKeys), "ns/entry")
		})
	}
}

// loadCompressible writes compressKeys keys in random order, with values
// of benchValueSize bytes that compress, and compacts the store.
func loadCompressible(b *testing.B, e bench.Engine) {
	var key, value []byte
	const text = `{"name":"a user of the store","status":"active","plan":"standard","region":"eu-west","tags":["one","two"]}`
	for i := range compressKeys {
		key = benchKey(key, uint64(2*i), true)
		value = benchKeys.Value(value[:0], i, 8)
		value = append(value, text...)[:benchValueSize]
		if err := e.Set(key, value, false); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Compact(); err != nil {
		b.Fatal(fmt.Errorf("compacting: %w", err))
	}
}
