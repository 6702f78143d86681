package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestPortBatch_RangeDelOrder ports Pebble's testdata/batch_get and
// batch_range_ops (a del-range covers the batch's merges before it, not
// those after) to bloomkv's rule: each write of a batch takes its own
// sequence number in order, so a DeleteRange covers the batch's earlier
// writes in its range and none of its later ones (DB.DeleteRange: "keys
// written later in the range are not affected"). Get and iterators of
// the indexed batch, the DB after Apply, after a flush, after a
// compaction and after a reopen must all agree.
func TestPortBatch_RangeDelOrder(t *testing.T) {
	cases := []struct{ db, batch, want string }{
		{"", "set b 1; set b 2; delrange b c; set b 3", "b=3"},
		{"", "set a 1; set b 2; set c 3; delrange a c; del d", "c=3"},
		{"", "delrange a b; set a 1", "a=1"},
		{"", "set a 1; delrange a b", ""},
		{"", "set b 1; delrange a b; set c 1; delrange c d", "b=1"},
		// Overlapping and repeated ranges, as batch_range_ops fragments
		// them, with writes between.
		{"", "set a 1; delrange a b; set b 2; delrange b c; set a 3; delrange a c; set bb 4; delrange b d; set c 5; set a 6",
			"a=6 c=5"},
		// An empty range deletes nothing, yet takes its place.
		{"", "set b 1; delrange c b; delrange b b; set c 2", "b=1 c=2"},
		// Over the DB's keys: the batch's range covers them all.
		{"set a 0; set b 0; set c 0; set d 0", "set b 1; delrange a d; set c 2", "c=2 d=0"},
		{"set a 0; set b 0", "del a; delrange b c; set b 1; del b", ""},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			fs := vfs.NewMem()
			db := ldbOpen(t, fs, nil)
			if c.db != "" {
				pbMust(t, db.Apply(pbBatch(t, db, c.db), nil))
				pbMust(t, db.Flush())
			}
			ib := db.NewIndexedBatch()
			pbOps(t, ib, c.batch)
			pbWantScan(t, "indexed batch", ib, c.want)
			pbWantGets(t, "indexed batch", ib, pbGets(c.want))
			pbMust(t, db.Apply(ib, nil))
			for _, step := range []string{"applied", "flushed", "compacted", "reopened"} {
				switch step {
				case "flushed":
					pbMust(t, db.Flush())
				case "compacted":
					pbMust(t, db.Compact([]byte("a"), []byte("z")))
				case "reopened":
					db = ldbReopen(t, db, fs, nil)
				}
				pbWantScan(t, step, db, c.want)
				pbWantGets(t, step, db, pbGets(c.want))
			}
			pbMust(t, db.Close())
		})
	}
}

// pbGets turns a scan's "k=v" list into the Gets it implies, over the
// keys a..d, bb and c: absent keys are not found.
func pbGets(scan string) string {
	want := map[string]string{}
	for _, p := range strings.Fields(scan) {
		k, v, _ := strings.Cut(p, "=")
		want[k] = v
	}
	var out []string
	for _, k := range []string{"a", "b", "bb", "c", "d"} {
		v, ok := want[k]
		if !ok {
			v = "-"
		}
		out = append(out, k+"="+v)
	}
	return strings.Join(out, " ")
}

// TestPortBatch_RangeDelReplayedWithoutFlush is TestPortBatch_RangeDelOrder
// through the WAL alone: the batch's range deletion and the writes around
// it replayed from the WAL at Open, never flushed before.
func TestPortBatch_RangeDelReplayedWithoutFlush(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	pbMust(t, db.Apply(pbBatch(t, db, "set a 0; set b 0; set e 0"), nil))
	pbMust(t, db.Apply(pbBatch(t, db, "set c 1; delrange a d; set b 2; set d 3"), kv.Sync))
	db = ldbReopen(t, db, fs, nil)
	defer db.Close()
	pbWantScan(t, "replayed", db, "b=2 d=3 e=0")
}

// TestPortBatch_Limits ports RocksDB's db_write_test and Pebble's
// TestBatchTooLarge to bloomkv's limits: a key, range end or value over
// its limit is refused and spoils the batch (the writes after it fail
// with the same error), Apply returns that error and writes nothing, the
// batch's index holds none of it, and Reset makes it usable again.
func TestPortBatch_Limits(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	big := bytes.Repeat([]byte("k"), kv.MaxKeySize+1)
	spoil := []struct {
		name string
		op   func(b *kv.Batch) error
		want error
	}{
		{"Set key", func(b *kv.Batch) error { return b.Set(big, nil) }, kv.ErrKeyTooLarge},
		{"Delete key", func(b *kv.Batch) error { return b.Delete(big) }, kv.ErrKeyTooLarge},
		{"DeleteRange start", func(b *kv.Batch) error { return b.DeleteRange(big, nil) }, kv.ErrKeyTooLarge},
		{"DeleteRange end", func(b *kv.Batch) error { return b.DeleteRange(nil, big) }, kv.ErrKeyTooLarge},
	}
	if !testing.Short() {
		spoil = append(spoil, struct {
			name string
			op   func(b *kv.Batch) error
			want error
		}{"Set value", func(b *kv.Batch) error { return b.Set([]byte("v"), make([]byte, kv.MaxValueSize+1)) },
			kv.ErrValueTooLarge})
	}
	for _, s := range spoil {
		for _, b := range []*kv.Batch{db.NewBatch(), db.NewIndexedBatch()} {
			pbOps(t, b, "set a 1; delrange c d")
			if err := s.op(b); !errors.Is(err, s.want) {
				t.Fatalf("%s: %v, want %v", s.name, err, s.want)
			}
			if err := b.Set([]byte("b"), []byte("2")); !errors.Is(err, s.want) {
				t.Errorf("%s: Set after it: %v, want the same error", s.name, err)
			}
			if b.Count() != 2 {
				t.Errorf("%s: Count %d, want the 2 writes before it", s.name, b.Count())
			}
			if b.Indexed() {
				pbWantGets(t, s.name+", indexed", b, "a=1 b=-")
			}
			if err := db.Apply(b, kv.Sync); !errors.Is(err, s.want) {
				t.Errorf("%s: Apply %v, want %v", s.name, err, s.want)
			}
			pbWantScan(t, s.name+": after the refused Apply", db, "")
			b.Reset()
			pbOps(t, b, "set r 1")
			pbMust(t, db.Apply(b, nil))
			pbMust(t, db.Delete([]byte("r"), nil))
		}
	}
	if err := db.Set(big, nil, nil); !errors.Is(err, kv.ErrKeyTooLarge) {
		t.Errorf("DB.Set of a big key: %v", err)
	}
	if err := db.DeleteRange([]byte("a"), big, nil); !errors.Is(err, kv.ErrKeyTooLarge) {
		t.Errorf("DB.DeleteRange to a big key: %v", err)
	}
	ok := bytes.Repeat([]byte("k"), kv.MaxKeySize)
	pbMust(t, db.Set(ok, []byte("max"), nil))
	db = ldbReopen(t, db, fs, nil)
	defer db.Close()
	if got := pbGet(t, db, string(ok)); got != "max" {
		t.Errorf("key of MaxKeySize after reopen: %q", got)
	}
	if got := pbScan(t, db); got != string(ok)+"=max" {
		t.Errorf("the store holds %d bytes of keys, want the key of MaxKeySize alone", len(got))
	}
}

// TestPortBatch_MaxBatchSize fills a batch to exactly MaxBatchSize bytes
// (accepted) and adds one more write (refused, spoiling the batch), as
// RocksDB's max_write_batch_group_size and Pebble's maxBatchSize checks
// do. It builds 256 MiB, so it does not run with -short.
func TestPortBatch_MaxBatchSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 256 MiB batch")
	}
	b := pitOpen(t, nil).NewBatch()
	value := make([]byte, kv.MaxValueSize)
	// Each record: kind, key length, a 1-byte key, a 4-byte value length.
	for _, k := range []string{"a", "b", "c"} {
		pbMust(t, b.Set([]byte(k), value))
	}
	rest := kv.MaxBatchSize - b.Len() - 7
	pbMust(t, b.Set([]byte("d"), value[:rest]))
	if b.Len() != kv.MaxBatchSize {
		t.Fatalf("Len %d, want MaxBatchSize", b.Len())
	}
	if err := b.Delete(nil); !errors.Is(err, kv.ErrBatchTooLarge) {
		t.Fatalf("a write past MaxBatchSize: %v", err)
	}
	if b.Count() != 4 || b.Len() != kv.MaxBatchSize {
		t.Errorf("after the refused write: Count %d, Len %d", b.Count(), b.Len())
	}
	b.Close()
}

// TestPortBatch_LargerThanMemTable applies batches several times the
// memtable's size, into an empty memtable and into one holding writes
// (Pebble commits such a batch as a flushable batch; bloomkv gives it a
// memtable of its own): every key is read back, after a flush and after
// a reopen.
func TestPortBatch_LargerThanMemTable(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: 256 << 10}
	db := ldbOpen(t, fs, o)
	value := bytes.Repeat([]byte("v"), 1000)
	const n = 1200 // about 1.2 MB a batch
	for round := range 3 {
		if round == 1 {
			pbMust(t, db.Set([]byte("small"), []byte("x"), nil))
		}
		b := db.NewBatch()
		for i := range n {
			pbMust(t, b.Set(fmt.Appendf(nil, "r%d-%05d", round, i), value))
		}
		pbMust(t, db.Apply(b, kv.NoSync))
	}
	check := func(what string) {
		count := strings.Count(pbScan(t, db), " ") + 1
		if count != 3*n+1 {
			t.Errorf("%s: %d keys, want %d", what, count, 3*n+1)
		}
		pbWantGets(t, what, db, "r0-00000="+string(value)+" r2-01199="+string(value)+" small=x")
	}
	check("applied")
	db = ldbReopen(t, db, fs, o)
	check("reopened")
	pbMust(t, db.Flush())
	check("flushed")
	pbMust(t, db.Close())
}
