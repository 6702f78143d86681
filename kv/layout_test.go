package kv

import (
	"testing"
	"unsafe"
)

// TestLayout_ReservationCacheLines pins the field layouts that keep a
// write's reservation, the commit pipeline's serial step, off the cache
// lines that other cores change (see DB, walOrder and memTable): the
// fields a reservation reads lie at least a cache line (64 bytes) from
// those that publications and iterators change, and the memtable's
// reservation fields fit in one line.
func TestLayout_ReservationCacheLines(t *testing.T) {
	const line = 64
	apart := func(what string, a, b uintptr) {
		t.Helper()
		if d := max(a, b) - min(a, b); d < line {
			t.Errorf("%s: %d bytes apart, want at least %d", what, d, line)
		}
	}
	var d DB
	for _, f := range []struct {
		name string
		off  uintptr
	}{{"closed", unsafe.Offsetof(d.closed)}, {"writesUnslowed", unsafe.Offsetof(d.writesUnslowed)}} {
		apart("DB."+f.name+" and visibleSeq", f.off, unsafe.Offsetof(d.visibleSeq))
		apart("DB."+f.name+" and openIters", f.off, unsafe.Offsetof(d.openIters))
	}
	apart("DB.visibleSeq and openIters", unsafe.Offsetof(d.visibleSeq), unsafe.Offsetof(d.openIters))

	var o walOrder
	apart("walOrder.reservedEnd and done", unsafe.Offsetof(o.reservedEnd), unsafe.Offsetof(o.done))
	apart("walOrder.wholeTo and done", unsafe.Offsetof(o.wholeTo), unsafe.Offsetof(o.done))

	var m memTable
	first, last := unsafe.Offsetof(m.limit), unsafe.Offsetof(m.writers)+unsafe.Offsetof(m.writers.reserved)+unsafe.Sizeof(m.writers.reserved)
	if last-first > line || unsafe.Offsetof(m.MemTable) > first {
		t.Errorf("memTable's reservation fields span bytes %d to %d, want one line after the MemTable", first, last)
	}
}
