package memtable

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// benchKeys returns n distinct 16-byte keys in random order.
func benchKeys(n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, n)
	for i := range keys {
		k := make([]byte, 16)
		binary.BigEndian.PutUint64(k, rng.Uint64())
		binary.BigEndian.PutUint64(k[8:], uint64(i))
		keys[i] = k
	}
	return keys
}

// ycsbKeys returns n distinct keys in random order, shaped as YCSB's
// MVCC-encoded ones: "user", a random number in decimal, a 0 byte and a
// 10-byte timestamp, 30 to 35 bytes. Unlike benchKeys, many share their
// first 8 bytes, so a search must often compare whole keys.
func ycsbKeys(n int) [][]byte {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := make([][]byte, n)
	for i := range keys {
		k := strconv.AppendUint([]byte("user"), rng.Uint64(), 10)
		keys[i] = append(k, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 9)
	}
	return keys
}

// keyShapes are the key sets the Add and Get benchmarks run over.
var keyShapes = []struct {
	name string
	keys func(n int) [][]byte
}{{"binary", benchKeys}, {"ycsb", ycsbKeys}}

func filled(keys [][]byte, value []byte) *MemTable {
	m := New(nil)
	for i, k := range keys {
		m.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), value)
	}
	return m
}

// BenchmarkMemTable_Add adds keys in random order to memtables of 1M
// entries (entries=1M) and of the 32K entries a 4 MiB memtable of 100-byte
// values holds (entries=32K), starting a new one when full.
func BenchmarkMemTable_Add(b *testing.B) {
	value := make([]byte, 100)
	for _, shape := range keyShapes {
		keys := shape.keys(1 << 20)
		for _, size := range []struct {
			name    string
			entries int
		}{{"1M", 1 << 20}, {"32K", 32 << 10}} {
			b.Run("keys="+shape.name+"/entries="+size.name, func(b *testing.B) {
				m := New(nil)
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if i%size.entries == 0 && i > 0 {
						m = New(nil)
					}
					m.Add(base.MakeInternalKey(keys[i%len(keys)], base.SeqNum(i+1), base.KindSet), value)
				}
				b.ReportMetric(float64(m.Size())/float64(max(1, m.Len())), "bytes/entry")
			})
		}
	}
}

// BenchmarkMemTable_AddSequential adds keys in ascending order, as a
// sequential load does, through one Inserter, whose splice hint serves
// such runs.
func BenchmarkMemTable_AddSequential(b *testing.B) {
	value := make([]byte, 100)
	key := make([]byte, 16)
	m := New(nil)
	var ins Inserter
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%(1<<20) == 0 && i > 0 {
			m = New(nil)
		}
		binary.BigEndian.PutUint64(key[8:], uint64(i))
		ins.Add(m, base.MakeInternalKey(key, base.SeqNum(i+1), base.KindSet), value)
	}
	b.ReportMetric(float64(m.Size())/float64(max(1, m.Len())), "bytes/entry")
}

// BenchmarkMemTable_AddParallel adds random keys from b's parallel
// goroutines (GOMAXPROCS of them) into one table, each through its own
// Inserter: the concurrent inserts of the commit pipeline.
func BenchmarkMemTable_AddParallel(b *testing.B) {
	value := make([]byte, 100)
	m := New(nil)
	var seq atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ins Inserter
		key := make([]byte, 16)
		for pb.Next() {
			s := seq.Add(1)
			binary.BigEndian.PutUint64(key, s*0x9E3779B97F4A7C15)
			ins.Add(m, base.MakeInternalKey(key, base.SeqNum(s), base.KindSet), value)
		}
	})
	b.ReportMetric(float64(m.Size())/float64(max(1, m.Len())), "bytes/entry")
}

func BenchmarkMemTable_Get(b *testing.B) {
	for _, shape := range keyShapes {
		b.Run("keys="+shape.name, func(b *testing.B) {
			keys := shape.keys(1 << 18)
			m := filled(keys, make([]byte, 100))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, _, found := m.Get(keys[i%len(keys)], base.SeqNumMax); !found {
					b.Fatal("not found")
				}
			}
		})
	}
}

func BenchmarkMemTable_IterNext(b *testing.B) {
	keys := benchKeys(1 << 18)
	m := filled(keys, make([]byte, 100))
	it := m.NewIter(nil, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if !it.Valid() || i%len(keys) == 0 {
			it.First()
		} else {
			it.Next()
		}
	}
}

func BenchmarkMemTable_IterPrev(b *testing.B) {
	keys := benchKeys(1 << 18)
	m := filled(keys, make([]byte, 100))
	it := m.NewIter(nil, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if !it.Valid() || i%len(keys) == 0 {
			it.Last()
		} else {
			it.Prev()
		}
	}
}
