package kv_test

import (
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

func ExampleTableIngestInfo() {
	// Print where each ingested table went.
	listener := &kv.EventListener{TableIngested: func(i kv.TableIngestInfo) {
		for _, t := range i.Tables {
			fmt.Printf("ingested [%s, %s] into L%d\n", t.Smallest, t.Largest, t.Level)
		}
	}}
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs, EventListener: listener})
	if err != nil {
		log.Fatal(err)
	}
	db.Set([]byte("b"), []byte("1"), kv.Sync)
	if err := db.Flush(); err != nil { // an L0 table holding b
		log.Fatal(err)
	}
	for _, name := range []string{"a-c", "x-z"} {
		f, err := fs.Create(name + ".sst")
		if err != nil {
			log.Fatal(err)
		}
		w := sstable.NewWriter(f, sstable.WriterOptions{})
		for _, k := range []string{name[:1], name[2:]} {
			w.Add(sstable.MakeInternalKey([]byte(k), 0, sstable.KindSet), []byte("v"))
		}
		if err := w.Close(); err != nil {
			log.Fatal(err)
		}
	}
	// [a, c] overlaps the L0 table: it goes into L0, above it; [x, z]
	// overlaps nothing: it goes to the bottom.
	if err := db.Ingest([]string{"a-c.sst", "x-z.sst"}); err != nil {
		log.Fatal(err)
	}
	db.Close() // delivers the events still queued
	// Output:
	// ingested [a, c] into L0
	// ingested [x, z] into L6
}
