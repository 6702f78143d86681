package bench

import (
	"bytes"
	"context"
	"slices"

	"github.com/bloomkv/bloomkv/kv"
)

// Map is an Engine held in a map, for the tests of what front ends do
// around the engines. Its counters count one table considered and one
// block read per lookup, at L1, and its shape has as many L0 tables as
// batches applied, modulo 4, so that differencing and sampling show.
type Map struct {
	M       map[string][]byte
	Batches []int // writes per batch applied
	Flushes int
	gets    int64
}

// NewMap returns an empty Map.
func NewMap() *Map { return &Map{M: map[string][]byte{}} }

// Name returns "map".
func (m *Map) Name() string { return "map" }

// Set implements Engine.
func (m *Map) Set(key, value []byte, _ bool) error {
	m.M[string(key)] = bytes.Clone(value)
	return nil
}

// Apply implements Engine.
func (m *Map) Apply(fill func(set func(key, value []byte) error) error, sync bool) error {
	n := 0
	err := fill(func(key, value []byte) error {
		n++
		return m.Set(key, value, sync)
	})
	m.Batches = append(m.Batches, n)
	return err
}

// Get implements Engine.
func (m *Map) Get(key []byte) ([]byte, bool, error) {
	m.gets++
	v, ok := m.M[string(key)]
	return v, ok, nil
}

// NewIter implements Engine over a sorted copy of the keys.
func (m *Map) NewIter() (Iter, error) {
	keys := make([]string, 0, len(m.M))
	for k := range m.M {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return &mapIter{m: m.M, keys: keys, i: -1}, nil
}

// SeekPrefix implements Engine.
func (m *Map) SeekPrefix(prefix []byte) (int, error) {
	n := 0
	for k := range m.M {
		if bytes.HasPrefix([]byte(k), prefix) {
			n++
		}
	}
	return n, nil
}

// Flush implements Engine.
func (m *Map) Flush() error { m.Flushes++; return nil }

// Compact implements Engine.
func (m *Map) Compact() error { return nil }

// WaitIdle implements Engine: a Map is always idle.
func (m *Map) WaitIdle(context.Context) error { return nil }

// Refresh implements Engine.
func (m *Map) Refresh() error { return nil }

// Counters implements Engine.
func (m *Map) Counters() Counters {
	c := kv.LookupMetrics{Gets: m.gets, TablesConsidered: m.gets, BlockReads: m.gets}
	return Counters{Total: c, Levels: []kv.LookupMetrics{{}, c}}
}

// Shape implements Engine.
func (m *Map) Shape() []LevelShape {
	return []LevelShape{{Level: 0, Tables: len(m.Batches) % 4}, {Level: 1, Tables: 1}}
}

// Footprint implements Engine.
func (m *Map) Footprint() (Footprint, error) { return Footprint{Keys: int64(len(m.M))}, nil }

// Stats implements Engine.
func (m *Map) Stats() Stats { return Stats{AllTables: true} }

// Close implements Engine.
func (m *Map) Close() error { return nil }

// mapIter iterates over a Map's keys in order.
type mapIter struct {
	m    map[string][]byte
	keys []string
	i    int
}

func (it *mapIter) valid() bool   { return it.i >= 0 && it.i < len(it.keys) }
func (it *mapIter) First() bool   { it.i = 0; return it.valid() }
func (it *mapIter) Last() bool    { it.i = len(it.keys) - 1; return it.valid() }
func (it *mapIter) Next() bool    { it.i++; return it.valid() }
func (it *mapIter) Prev() bool    { it.i--; return it.valid() }
func (it *mapIter) Key() []byte   { return []byte(it.keys[it.i]) }
func (it *mapIter) Value() []byte { return it.m[it.keys[it.i]] }
func (it *mapIter) Error() error  { return nil }
func (it *mapIter) Close() error  { return nil }

func (it *mapIter) SeekGE(key []byte) bool {
	it.i, _ = slices.BinarySearch(it.keys, string(key))
	return it.valid()
}
