package kv

import (
	"encoding/binary"
	"testing"
)

// TestDB_Write_NoAllocs checks that Set, Delete, DeleteRange and Apply
// allocate nothing per write once warm (the memtable's arena allocates a
// chunk now and then, which the average over the runs rounds away).
func TestDB_Write_NoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates, and drops pooled writers")
	}
	d, _ := openMem(t, nil)
	key, value := make([]byte, 16), make([]byte, 100)
	i := uint64(0)
	nextKey := func() []byte {
		i++
		binary.BigEndian.PutUint64(key[8:], i)
		return key
	}
	var b Batch
	rangeStart := make([]byte, 16)
	writes := []struct {
		name  string
		write func() error
	}{
		{"Set", func() error { return d.Set(nextKey(), value, nil) }},
		{"Set/Sync", func() error { return d.Set(nextKey(), value, Sync) }},
		{"Delete", func() error { return d.Delete(nextKey(), NoSync) }},
		{"DeleteRange", func() error {
			start := append(rangeStart[:0], nextKey()...)
			return d.DeleteRange(start, nextKey(), nil)
		}},
		{"Apply", func() error {
			b.Reset()
			if err := b.Set(nextKey(), value); err != nil {
				return err
			}
			if err := b.Delete(nextKey()); err != nil {
				return err
			}
			return d.Apply(&b, nil)
		}},
	}
	for _, w := range writes {
		var err error
		if n := testing.AllocsPerRun(200, func() { err = w.write() }); n != 0 {
			t.Errorf("%s allocates %v times per write", w.name, n)
		}
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
	}
}
