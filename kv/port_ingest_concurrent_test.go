package kv_test

// Scenarios of Pebble v1.1.5's ingest_test.go run alongside other work
// (TestIngestCompact, TestConcurrentIngest, TestConcurrentIngestCompact,
// TestIngestFlushQueuedMemTable, TestIngestMemtablePendingOverlap) and
// with a filter cap, ported to bloomkv's Ingest.

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestPortIngest_Compact ports TestIngestCompact: twenty ingests of the
// same key, one of them over the key in the memtable, pile tables in L0,
// and compactions keep up: no Ingest stalls, the last version wins.
func TestPortIngest_Compact(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs})
	must(t, err)
	defer mustClose(t, db)
	for i := range 20 {
		if i == 10 {
			must(t, db.Set([]byte("a"), []byte("mem"), kv.NoSync))
		}
		p := fmt.Sprintf("ext/%d.sst", i)
		writePortTable(t, fs, p, sstable.WriterOptions{}, fmt.Sprintf("a=%d", i))
		must(t, db.Ingest([]string{p}))
	}
	must(t, db.WaitIdle(context.Background()))
	checkContents(t, db, map[string]string{"a": "19"}, "after 20 ingests")
	if n := db.Metrics().Levels[0].NumFiles; n >= 20 {
		t.Fatalf("%d tables in L0: no compaction ran", n)
	}
}

// TestPortIngest_Concurrent ports TestConcurrentIngest: five goroutines
// ingest copies of a table of two keys at once, each with its own value.
// All succeed, and both keys show the same table's value: each Ingest
// takes a sequence number of its own, and the two keys of one table
// share it.
func TestPortIngest_Concurrent(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs})
	must(t, err)
	defer mustClose(t, db)
	const n = 5
	for i := range n {
		writePortTable(t, fs, fmt.Sprintf("ext/%d.sst", i), sstable.WriterOptions{}, fmt.Sprintf("a=%d", i), fmt.Sprintf("b=%d", i))
	}
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- db.Ingest([]string{fmt.Sprintf("ext/%d.sst", i)}) }()
	}
	for range n {
		must(t, <-errs)
	}
	check := func(what string) {
		a, err := db.Get([]byte("a"))
		must(t, err)
		checkContents(t, db, map[string]string{"a": string(a), "b": string(a)}, what)
	}
	check("after the concurrent ingests")
	must(t, db.Compact(nil, nil))
	check("after compacting")
}

// TestPortIngest_ConcurrentCompact ports TestConcurrentIngestCompact:
// ingests and writes go on while manual compactions of the whole store
// run; the store ends with the last version of every key.
func TestPortIngest_ConcurrentCompact(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs, MemTableSize: kv.MinMemTableSize << 2})
	must(t, err)
	defer mustClose(t, db)
	rounds := 30
	if testing.Short() {
		rounds = 10
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	want := map[string]string{}
	for i := range rounds {
		k := fmt.Sprintf("k%02d", i%7)
		if i%2 == 0 {
			p := fmt.Sprintf("ext/%d.sst", i)
			writePortTable(t, fs, p, sstable.WriterOptions{}, k+"=ing"+fmt.Sprint(i), "z"+k+"=x")
			must(t, db.Ingest([]string{p}))
			want["z"+k] = "x"
		} else {
			must(t, db.Set([]byte(k), []byte(fmt.Sprint("set", i)), kv.NoSync))
		}
		want[k] = map[bool]string{true: "ing", false: "set"}[i%2 == 0] + fmt.Sprint(i)
	}
	close(done)
	wg.Wait()
	checkContents(t, db, want, "after ingests and writes during compactions")
}

// TestPortIngest_FlushQueuedMemTable ports TestIngestFlushQueuedMemTable:
// with memtables queued for flushing behind the mutable one, an Ingest
// over their keys waits for all of them to be flushed, and its versions
// win over theirs.
func TestPortIngest_FlushQueuedMemTable(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs, MemTableSize: kv.MinMemTableSize, MemTableStopWritesThreshold: 4})
	must(t, err)
	want := keyRange("k", 0, 200, "mem")
	for i := range 200 {
		k := fmt.Sprintf("k%04d", i)
		must(t, db.Set([]byte(k), []byte(want[k]), kv.NoSync))
	}
	ext := keyRange("k", 0, 200, "ing")
	writeExternal(t, fs, "ext/1.sst", ext, sstable.WriterOptions{})
	must(t, db.Ingest([]string{"ext/1.sst"}))
	checkContents(t, db, ext, "after ingesting over queued memtables")
	checkReopened(t, db, fs, ext)
}

// TestPortIngest_MemtablePendingOverlap ports
// TestIngestMemtablePendingOverlap: a write of c has its sequence number
// but is not yet in the memtable (its WAL record waits) when a table of a
// and c is ingested; the Ingest, numbered after the write, wins on c.
// (TestDB_Ingest_WriteInFlight checks the same for keys apart.)
func TestPortIngest_MemtablePendingOverlap(t *testing.T) {
	mem := vfs.NewMem()
	g := newWALGate(false)
	db, err := kv.Open("db", &kv.Options{FS: g.on(mem)})
	must(t, err)
	writePortTable(t, mem, "ext/1.sst", sstable.WriterOptions{}, "a=ing", "c=ing")
	g.armed.Store(true)
	wrote := make(chan error, 1)
	go func() { wrote <- db.Set([]byte("c"), []byte("set"), kv.Sync) }()
	<-g.held
	ingested := make(chan error, 1)
	go func() { ingested <- db.Ingest([]string{"ext/1.sst"}) }()
	g.armed.Store(false)
	close(g.opened)
	must(t, <-wrote)
	must(t, <-ingested)
	want := map[string]string{"a": "ing", "c": "ing"}
	checkContents(t, db, want, "after the write and the Ingest")
	checkReopened(t, db, mem, want)
}

// TestPortIngest_FilterCap ingests tables under a filter cap
// (Options.FilterBudget.Bytes): they read right, and the filter bytes
// held stay under the cap.
func TestPortIngest_FilterCap(t *testing.T) {
	fs := vfs.NewMem()
	const capBytes = 2 << 10
	db, err := kv.Open("db", &kv.Options{FS: fs, FilterBudget: &bloompolicy.Budget{Bytes: capBytes}})
	must(t, err)
	defer mustClose(t, db)
	policy, err := bloompolicy.New(kv.DefaultFilterFPR)
	must(t, err)
	want := map[string]string{}
	var paths []string
	for i := range 4 {
		kvs := keyRange(fmt.Sprintf("t%d-", i), 0, 2000, "x")
		p := fmt.Sprintf("ext/%d.sst", i)
		writeExternal(t, fs, p, kvs, sstable.WriterOptions{FilterPolicy: policy})
		paths = append(paths, p)
		for k, v := range kvs {
			want[k] = v
		}
	}
	must(t, db.Ingest(paths))
	checkContents(t, db, want, "after ingesting under a filter cap")
	must(t, db.WaitIdle(context.Background()))
	if held := db.Metrics().Filters.HeldBytes; held > capBytes {
		t.Fatalf("%d filter bytes held, over the cap of %d", held, capBytes)
	}
}
