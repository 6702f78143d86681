package kv_test

import (
	"errors"
	"fmt"
	"log"
	"regexp"
	"strings"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// openExample opens an in-memory store holding the given keys, each
// valued by its own name.
func openExample(keys ...string) *kv.DB {
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range keys {
		if err := db.Set([]byte(k), []byte("v-"+k), kv.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	return db
}

func ExampleDB_NewIndexedBatch() {
	db := openExample("apple", "banana", "cherry")
	defer db.Close()

	// Read your own writes before they are applied.
	b := db.NewIndexedBatch()
	defer b.Close()
	b.Set([]byte("avocado"), []byte("v-avocado"))
	b.DeleteRange([]byte("b"), []byte("c")) // banana
	v, _ := b.Get([]byte("avocado"))
	_, err := b.Get([]byte("banana"))
	fmt.Println(string(v), errors.Is(err, kv.ErrNotFound))

	it, _ := b.NewIter(nil)
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key()))
	}
	fmt.Println(keys)
	it.Close()

	// The DB sees none of it until the batch is applied.
	_, err = db.Get([]byte("avocado"))
	fmt.Println(errors.Is(err, kv.ErrNotFound))
	if err := db.Apply(b, kv.Sync); err != nil {
		log.Fatal(err)
	}
	v, _ = db.Get([]byte("avocado"))
	fmt.Println(string(v))
	// Output:
	// v-avocado true
	// [apple avocado cherry]
	// true
	// v-avocado
}

func ExampleIterator_SetBounds() {
	db := openExample("a1", "a2", "b1", "b2", "b3", "c1")
	defer db.Close()

	// One iterator serves many range scans: SetBounds repositions it
	// without a new NewIter, and without allocating once warm.
	it, err := db.NewIter(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer it.Close()
	for _, r := range [][2]string{{"a", "b"}, {"b", "c"}, {"c", "d"}} {
		it.SetBounds([]byte(r[0]), []byte(r[1]))
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		fmt.Printf("[%s, %s): %d keys\n", r[0], r[1], n)
	}
	// Output:
	// [a, b): 2 keys
	// [b, c): 3 keys
	// [c, d): 1 keys
}

func ExampleIterator_Clone() {
	db := openExample("a", "b")
	defer db.Close()
	it, _ := db.NewIter(nil)
	defer it.Close()
	db.Set([]byte("c"), []byte("v-c"), kv.NoSync) // after NewIter: neither sees it

	c, err := it.Clone()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	it.First()
	c.Last()
	fmt.Println(string(it.Key()), string(c.Key()))
	// Output:
	// a b
}

func ExampleIterator_Refresh() {
	db := openExample("a", "b")
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer it.Close()
	db.Set([]byte("c"), []byte("v-c"), kv.NoSync)
	db.Delete([]byte("a"), kv.NoSync)

	// The iterator sees the DB as it was at NewIter until refreshed.
	show := func(what string) {
		var keys []string
		for ok := it.First(); ok; ok = it.Next() {
			keys = append(keys, string(it.Key()))
		}
		fmt.Println(what, keys)
	}
	show("before Refresh:")
	if err := it.Refresh(); err != nil {
		log.Fatal(err)
	}
	show("after Refresh:")
	// Output:
	// before Refresh: [a b]
	// after Refresh: [b c]
}

func ExampleIterator_Stats() {
	db := openExample("a", "b", "c")
	defer db.Close()
	if err := db.Flush(); err != nil { // into a table
		log.Fatal(err)
	}
	it, _ := db.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	st := it.Stats()
	fmt.Printf("tables %d, blocks %d, filter negatives %d\n", st.TablesConsidered, st.BlockReads, st.FilterNegatives)
	it.Close()
	// Output:
	// tables 1, blocks 1, filter negatives 0
}

func ExampleDB_GetAppend() {
	db := openExample("a", "b")
	defer db.Close()

	// One buffer for every read: no allocation per Get.
	buf := make([]byte, 0, 64)
	for _, k := range []string{"a", "b", "z"} {
		var err error
		buf, err = db.GetAppend(buf[:0], []byte(k))
		switch {
		case errors.Is(err, kv.ErrNotFound):
			fmt.Println(k, "not found")
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Println(k, string(buf))
		}
	}
	// Output:
	// a v-a
	// b v-b
	// z not found
}

func ExampleMakeLoggingEventListener() {
	// Log every background event; here through a function that drops the
	// durations and sizes, which vary from run to run and release to
	// release (log.Printf would do).
	sizes := regexp.MustCompile(`[0-9]+ B`)
	logf := func(format string, args ...any) {
		line, _, _ := strings.Cut(fmt.Sprintf(format, args...), ", in ")
		fmt.Println(sizes.ReplaceAllString(line, "N B"))
	}
	listener := kv.MakeLoggingEventListener(kv.LoggerFunc(logf))
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem(), EventListener: &listener})
	if err != nil {
		log.Fatal(err)
	}
	db.Set([]byte("a"), []byte("1"), kv.NoSync)
	if err := db.Flush(); err != nil {
		log.Fatal(err)
	}
	db.Close() // delivers the events still queued
	// Output:
	// WAL created: demo/000001.log
	// WAL created: demo/000003.log
	// [JOB 1] flushing memtable of N B to L0
	// [JOB 1] flush: table created: demo/000004.sst
	// [JOB 1] flushed N B to L0: 1 tables, N B
}

func ExampleOptions_eventListener() {
	// Count flushes and print the compactions as they finish.
	var flushes int
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem(), EventListener: &kv.EventListener{
		FlushEnd: func(kv.FlushInfo) { flushes++ }, // one goroutine delivers every event
		CompactionEnd: func(i kv.CompactionInfo) {
			fmt.Printf("compaction (%s) L%d -> L%d: %d tables in, %d out\n",
				i.Reason, i.StartLevel, i.OutputLevel, len(i.Input), len(i.Output))
		},
	}})
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		db.Set([]byte(k), []byte("1"), kv.NoSync)
		db.Flush()
	}
	if err := db.Compact(nil, []byte("z")); err != nil {
		log.Fatal(err)
	}
	db.Close()
	fmt.Println("flushes:", flushes)
	// Output:
	// compaction (manual) L0 -> L6: 2 tables in, 1 out
	// flushes: 2
}
