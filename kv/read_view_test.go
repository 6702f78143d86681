package kv_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestIterator_IngestThenSetWhileLoading ingests a table setting a, then
// sets b, while an iterator, its read state loaded, is about to load its
// sequence number: the iterator sees both writes or neither, never b
// without the a ingested before it, whether NewIter or Refresh loads it.
// (The read state loaded holds neither, but lists the memtable b goes
// into.)
func TestIterator_IngestThenSetWhileLoading(t *testing.T) {
	for _, refresh := range []bool{false, true} {
		t.Run(fmt.Sprintf("refresh=%t", refresh), func(t *testing.T) {
			fs := vfs.NewMem()
			var d *kv.DB
			var armed atomic.Bool
			o := kv.BeforeReadSeq(&kv.Options{FS: fs}, func() {
				if !armed.CompareAndSwap(true, false) {
					return
				}
				writeExternal(t, fs, "ext/a", map[string]string{"a": "1"}, sstable.WriterOptions{})
				must(t, d.Ingest([]string{"ext/a"}))
				must(t, d.Set([]byte("b"), []byte("1"), kv.NoSync))
			})
			d, err := kv.Open("db", o)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			must(t, d.Set([]byte("a"), []byte("0"), kv.NoSync))
			must(t, d.Set([]byte("b"), []byte("0"), kv.NoSync))
			// An empty memtable: the ingest keeps it, and the set goes
			// into the memtable of the read state loaded.
			must(t, d.Flush())
			it, err := d.NewIter(nil)
			must(t, err)
			armed.Store(true)
			if refresh {
				must(t, it.Refresh())
			} else {
				must(t, it.Close())
				it, err = d.NewIter(nil)
				must(t, err)
			}
			defer it.Close()
			got := map[string]string{}
			for it.First(); it.Valid(); it.Next() {
				got[string(it.Key())] = string(it.Value())
			}
			must(t, it.Error())
			if got["a"] != got["b"] {
				t.Fatalf("iterator sees a=%s, b=%s: b was set after a was ingested", got["a"], got["b"])
			}
		})
	}
}
