package kv_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

func ExampleDB_Checkpoint() {
	fs := vfs.NewMem()
	db, err := kv.Open("live", &kv.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.Set([]byte("k"), []byte("before"), kv.Sync)
	// The copy holds every write acknowledged before the call.
	if err := db.Checkpoint("backups/monday"); err != nil {
		log.Fatal(err)
	}
	db.Set([]byte("k"), []byte("after"), kv.Sync)

	backup, err := kv.Open("backups/monday", &kv.Options{FS: fs, ErrorIfNotExists: true})
	if err != nil {
		log.Fatal(err)
	}
	defer backup.Close()
	v, _ := backup.Get([]byte("k"))
	fmt.Printf("backup: k=%s\n", v)
	// A checkpoint never overwrites a directory.
	fmt.Println(db.Checkpoint("backups/monday") != nil)
	// Output:
	// backup: k=before
	// true
}

// ExampleOpen_readOnly inspects a store without changing a file of it:
// the writes its WAL holds are read into memory, and writes are refused.
func ExampleOpen_readOnly() {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	db.Set([]byte("k"), []byte("in the WAL"), kv.Sync)
	db.Close()

	ro, err := kv.Open("db", &kv.Options{FS: fs, ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ro.Close()
	v, _ := ro.Get([]byte("k"))
	fmt.Printf("k=%s\n", v)
	fmt.Println(errors.Is(ro.Set([]byte("k"), []byte("new"), kv.Sync), kv.ErrReadOnly))
	// Output:
	// k=in the WAL
	// true
}

// ExampleDB_Ingest bulk-loads sorted keys: they are written into tables
// with sstable.Writer, at sequence number 0, then handed to the store,
// which takes the files as they are.
func ExampleDB_Ingest() {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.Set([]byte("user0001"), []byte("old"), kv.Sync)

	// Tables must be sorted and not overlap: here, 1000 keys per table.
	if err := fs.MkdirAll("load", 0o755); err != nil {
		log.Fatal(err)
	}
	var paths []string
	for t := range 3 {
		path := fmt.Sprintf("load/%d.sst", t)
		f, err := fs.Create(path)
		if err != nil {
			log.Fatal(err)
		}
		w := sstable.NewWriter(f, sstable.WriterOptions{})
		for i := t * 1000; i < (t+1)*1000; i++ {
			key := sstable.MakeInternalKey([]byte(fmt.Sprintf("user%04d", i)), 0, sstable.KindSet)
			if err := w.Add(key, []byte(fmt.Sprintf("v%d", i))); err != nil {
				log.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			log.Fatal(err)
		}
		paths = append(paths, path)
	}
	// All 3000 keys become visible at once, above every earlier write.
	if err := db.Ingest(paths); err != nil {
		log.Fatal(err)
	}
	v, _ := db.Get([]byte("user0001"))
	fmt.Printf("user0001=%s\n", v)
	v, _ = db.Get([]byte("user2999"))
	fmt.Printf("user2999=%s\n", v)
	// Output:
	// user0001=v1
	// user2999=v2999
}

func ExampleDB_EstimateDiskUsage() {
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	b := db.NewBatch()
	for i := range 10000 {
		b.Set([]byte(fmt.Sprintf("k%05d", i)), make([]byte, 100))
	}
	db.Apply(b, kv.NoSync)
	db.Flush() // the estimate counts tables, not memtables

	all, _ := db.EstimateDiskUsage(nil, nil)
	tenth, _ := db.EstimateDiskUsage([]byte("k00000"), []byte("k00999"))
	fmt.Printf("a tenth of the keys: %.1f of the bytes\n", float64(tenth)/float64(all))
	// Output:
	// a tenth of the keys: 0.1 of the bytes
}
