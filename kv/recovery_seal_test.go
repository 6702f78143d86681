package kv

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
)

// walRecords returns the records of WAL num in fs's "db".
func walRecords(t *testing.T, fs vfs.FS, num base.FileNum) [][]byte {
	recs, _ := walRecordEnds(t, fs, num)
	return recs
}

// walRecordEnds returns walRecords' records, and the stream offset at
// which each ends.
func walRecordEnds(t *testing.T, fs vfs.FS, num base.FileNum) (recs [][]byte, ends []int64) {
	t.Helper()
	name := base.MakeFilename(base.FileTypeLog, num)
	data := readFile(t, fs, "db/"+name)
	r := record.NewLogReader(bytes.NewReader(data), name, uint32(num), record.RecyclableFormat)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs, ends
		}
		if err != nil {
			t.Fatal(err)
		}
		recs, ends = append(recs, rec), append(ends, r.End())
	}
}

// TestWALSeal_Close: Close seals the WAL once; opening and closing the
// store again without writes adds nothing, and a write then a Close add
// the write and one seal.
func TestWALSeal_Close(t *testing.T) {
	o := &Options{}
	d, fs := openMem(t, o)
	num := d.commit.log.num
	for i := range 3 {
		if err := d.Set([]byte(fmt.Sprintf("k%d", i)), []byte("v"), Sync); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	recs := walRecords(t, fs, num)
	if len(recs) != 4 || !isSeal(recs[3]) {
		t.Fatalf("WAL holds %d records, the last %x; want 3 batches and a seal", len(recs), recs[len(recs)-1])
	}
	for range 3 {
		d, err := Open("db", o)
		if err != nil {
			t.Fatal(err)
		}
		if d.commit.log.num != num {
			t.Fatalf("Open moved to WAL %s, want %s continued", d.commit.log.num, num)
		}
		d.Close()
	}
	if n := len(walRecords(t, fs, num)); n != 4 {
		t.Fatalf("idle reopens left %d records, want 4", n)
	}
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	d.Set([]byte("k9"), []byte("v"), Sync)
	d.Close()
	recs = walRecords(t, fs, num)
	if len(recs) != 6 || !isSeal(recs[3]) || isSeal(recs[4]) || !isSeal(recs[5]) {
		t.Fatalf("WAL holds %d records; want 3 batches, a seal, a batch, a seal", len(recs))
	}
	d, err = Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, k := range []string{"k0", "k1", "k2", "k9"} {
		mustGet(t, d, k, "v")
	}
}

// TestWALSeal_Rotation: a WAL the memtable leaves for a new one ends in a
// seal, so damage to its last batch is corruption.
func TestWALSeal_Rotation(t *testing.T) {
	o := &Options{MemTableSize: MinMemTableSize, DisableAutomaticCompactions: true}
	d, fs := openMem(t, o)
	first := d.commit.log.num
	d.Set([]byte("a"), bytes.Repeat([]byte("1"), 100), Sync)
	for i := 0; d.commit.log.num == first; i++ {
		if i > 1000 {
			t.Fatal("the memtable never rotated")
		}
		if err := d.Set([]byte(fmt.Sprintf("b%04d", i)), bytes.Repeat([]byte("2"), 100), Sync); err != nil {
			t.Fatal(err)
		}
	}
	// Once the first memtable is flushed its WAL is kept for recycling,
	// under its name, until a later rotation takes it.
	d.mu.Lock()
	for d.mu.flushing || len(d.mu.imm) > 0 {
		d.mu.cond.Wait()
	}
	d.mu.Unlock()
	d.Close()
	names, _ := fs.List("db")
	found := false
	for _, n := range names {
		if typ, num, ok := base.ParseFilename(n); ok && typ == base.FileTypeLog && num == first {
			recs := walRecords(t, fs, num)
			if len(recs) < 2 || !isSeal(recs[len(recs)-1]) || isSeal(recs[len(recs)-2]) {
				t.Fatalf("rotated WAL %s holds %d records, not ending in one seal", n, len(recs))
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("WAL %s is gone: %q", first, names)
	}
}
