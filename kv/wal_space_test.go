package kv

import (
	"bytes"
	"testing"
)

// TestWAL_SyncFillsAhead: a Sync write leaves the WAL file longer than
// its records, zeros past them, so that later syncs need not grow it; a
// NoSync write does not. Reopened, the WAL ends at its last record and is
// continued, zeros and all.
func TestWAL_SyncFillsAhead(t *testing.T) {
	o := &Options{MemTableSize: 64 << 10}
	d, fs := openMem(t, o)
	name := "db/" + d.commit.log.name
	must(t, d.Set([]byte("a"), []byte("1"), NoSync))
	if n := len(readFile(t, fs, name)); int64(n) != logEnd(t, fs, name) {
		t.Fatalf("after a NoSync write: file of %d bytes, records end at %d", n, logEnd(t, fs, name))
	}
	must(t, d.Set([]byte("b"), []byte("2"), Sync))
	data, end := readFile(t, fs, name), logEnd(t, fs, name)
	ahead := walPreallocSize(o.MemTableSize)
	if int64(len(data)) < end+ahead/2 || !bytes.Equal(data[end:], make([]byte, len(data)-int(end))) {
		t.Fatalf("after a Sync write: file of %d bytes, records end at %d, want zeros to %d at least", len(data), end, end+ahead/2)
	}
	size := len(data)
	for i := range 20 {
		must(t, d.Set([]byte{'c', byte(i)}, []byte("3"), Sync))
	}
	if n := len(readFile(t, fs, name)); n != size {
		t.Fatalf("20 small Sync writes grew the file from %d to %d bytes", size, n)
	}
	must(t, d.Close())
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	if got := "db/" + d.commit.log.name; got != name {
		must(t, d.Close())
		t.Fatalf("reopened, writes go to %s, want %s continued", got, name)
	}
	mustGet(t, d, "b", "2")
	must(t, d.Set([]byte("d"), []byte("4"), Sync))
	must(t, d.Close())
	d2, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d2)
	for _, k := range []string{"a", "b", "c\x13", "d"} {
		if _, err := d2.Get([]byte(k)); err != nil {
			t.Fatalf("Get(%q) after a continued WAL: %v", k, err)
		}
	}
}
