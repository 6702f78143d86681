package kv_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestDB_EstimateDiskUsage checks the estimate against the tables' sizes:
// all of them for the whole key space, about half for half the keys,
// nothing outside the keys; and refuses a reversed range and use after
// Close.
func TestDB_EstimateDiskUsage(t *testing.T) {
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), TargetFileSize: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	b := db.NewBatch()
	for i := range n {
		// A value that does not compress, so that the compacted store
		// keeps several tables.
		b.Set([]byte(fmt.Sprintf("k%06d", i)), benchKeys.Value(nil, i, 40))
	}
	if err := db.Apply(b, kv.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	var size uint64
	tables := 0
	for _, l := range db.Metrics().Levels {
		size += uint64(l.Size)
		tables += l.NumFiles
	}
	if tables < 4 {
		t.Fatalf("%d tables, want several", tables)
	}
	est := func(start, end string) uint64 {
		t.Helper()
		var s, e []byte
		if start != "" {
			s = []byte(start)
		}
		if end != "" {
			e = []byte(end)
		}
		got, err := db.EstimateDiskUsage(s, e)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := est("", ""); got != size {
		t.Fatalf("whole key space: %d, tables hold %d", got, size)
	}
	if got := est("a", "z"); got != size {
		t.Fatalf("[a, z]: %d, tables hold %d", got, size)
	}
	half := est("k000000", fmt.Sprintf("k%06d", n/2-1))
	if half < size*4/10 || half > size*6/10 {
		t.Fatalf("half the keys: %d of %d", half, size)
	}
	if got := est("k005000", "k005000"); got == 0 || got > size/uint64(tables) {
		t.Fatalf("one key: %d, want a block or a few (tables of %d B)", got, size/uint64(tables))
	}
	if got := est("z", ""); got != 0 {
		t.Fatalf("past the last key: %d, want 0", got)
	}
	if _, err := db.EstimateDiskUsage([]byte("b"), []byte("a")); err == nil || !strings.HasPrefix(err.Error(), "kv: ") {
		t.Fatalf("reversed range: %v, want an error", err)
	}
	db.Close()
	if _, err := db.EstimateDiskUsage(nil, nil); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}
