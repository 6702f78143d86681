//go:build bloomkvycsb

// The binding's tests: run.sh --test-binding copies this file with
// bloomkv_db.go into its copy of cmd/pebble and runs them there, where the
// driver's interfaces are (run_test.go does so).

package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
)

// ycsbKey is key n as the driver makes it (ycsb.makeKey): "user" and the
// number, MVCC-encoded with walltime 1.
func ycsbKey(n int) []byte {
	key := strconv.AppendUint([]byte("user"), uint64(n), 10)
	return append(key, 0, 0, 0, 0, 0, 0, 0, 0, 1, 9)
}

// openBinding opens the binding on a fresh store in a temporary
// directory, with a small block cache (the flag's default is set by
// cmd/pebble's main, which tests do not run).
func openBinding(t testing.TB) bloomkvDB {
	t.Helper()
	cacheSize = 8 << 20
	return newBloomkvDB(t.TempDir()).(bloomkvDB)
}

// commit writes key n with value v through the driver's batch interface.
func commit(t testing.TB, db DB, n int, v string) {
	t.Helper()
	if err := write(db, n, v); err != nil {
		t.Fatal(err)
	}
}

func write(db DB, n int, v string) error {
	b := db.NewBatch()
	if err := b.Set(ycsbKey(n), []byte(v), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	return b.Close()
}

// readKey reads key n as the driver's read does: NewIter, SeekGE, Close.
func readKey(t testing.TB, db DB, n int) (string, bool) {
	t.Helper()
	v, ok, err := read(db, n)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

func read(db DB, n int) (v string, ok bool, err error) {
	v, ok, _, err = readWith(db, n)
	return v, ok, err
}

// readWith is read, and it returns the binding's iterator that served
// the read, nil for none (a lookup of --point-reads get).
func readWith(db DB, n int) (v string, ok bool, used *pooledIter, err error) {
	it := db.NewIter(nil)
	ok = it.SeekGE(ycsbKey(n)) && string(it.Key()) == string(ycsbKey(n))
	if ok {
		v = string(it.Value())
	}
	switch x := it.(type) {
	case *pooledIter:
		used = x
	case *pointReadIter:
		used, _ = x.it.(*pooledIter)
	}
	return v, ok, used, it.Close()
}

// countScan counts the keys an iterator from NewIter(opts) shows from
// First on, and closes it.
func countScan(t testing.TB, db DB, opts *pebble.IterOptions) int {
	t.Helper()
	it := db.NewIter(opts)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBloomkvBinding_ReusedIteratorsSeeLatestWrites checks that the
// binding's pooled iterators, reused from one read to the next, see every
// write made before the read, updates, inserts and deletes, whether it
// is served by an iterator or by --point-reads get's lookup; that bounds
// asked for apply and do not stick to the next user of the iterator; and
// that closing the store closes the pooled iterators (Close reports no
// leak).
func TestBloomkvBinding_ReusedIteratorsSeeLatestWrites(t *testing.T) {
	db := openBinding(t)
	iters := map[*pooledIter]bool{}
	reads := 0
	for _, read := range []DB{db, newPointReadDB(db)} {
		for round := 0; round < 200; round++ {
			n := round % 20
			v := fmt.Sprintf("v%d", round)
			commit(t, read, n, v)
			got, ok, used, err := readWith(read, n)
			if err != nil || !ok || got != v {
				t.Fatalf("round %d: read of key %d = %q, %v, %v; want %q", round, n, got, ok, err, v)
			}
			if used != nil {
				iters[used] = true
				reads++
			}
		}
	}
	// Reads through the lookup of present keys use no iterator.
	t.Logf("%d reads through %d iterators", reads, len(iters))
	if reads < 200 || len(iters) != 1 {
		t.Fatalf("%d reads through %d iterators; want at least 200 through one, reused", reads, len(iters))
	}
	if got := countScan(t, db, nil); got != 20 {
		t.Fatalf("scan shows %d keys, want 20", got)
	}
	commit(t, db, 20, "new")
	bounds := &pebble.IterOptions{LowerBound: ycsbKey(10), UpperBound: ycsbKey(15)} // user10..user14
	if got := countScan(t, db, bounds); got != 5 {
		t.Fatalf("bounded scan shows %d keys, want 5", got)
	}
	if got := countScan(t, db, nil); got != 21 {
		t.Fatalf("scan after a bounded one shows %d keys, want 21 (the bounds stuck)", got)
	}
	b := db.NewBatch()
	if err := b.Delete(ycsbKey(3), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, ok := readKey(t, db, 3); ok {
		t.Fatal("a deleted key is still read")
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	commit(t, db, 21, "after flush")
	if got, ok := readKey(t, db, 21); !ok || got != "after flush" {
		t.Fatalf("read after a flush = %q, %v", got, ok)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestBloomkvBinding_ConcurrentReaders runs writers and readers of the
// binding on several goroutines, as the driver's threads do: each reader
// must see its own goroutine's latest write.
func TestBloomkvBinding_ConcurrentReaders(t *testing.T) {
	db := openBinding(t)
	const workers, rounds = 4, 300
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var mu sync.Mutex
	iters := map[*pooledIter]bool{}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				n, v := w*1000+r%10, fmt.Sprintf("w%d-%d", w, r)
				if err := write(db, n, v); err != nil {
					errs <- err
					return
				}
				got, ok, used, err := readWith(db, n)
				if err != nil || !ok || got != v {
					errs <- fmt.Errorf("worker %d round %d: read %q, %v, %v; want %q", w, r, got, ok, err, v)
					return
				}
				mu.Lock()
				iters[used] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// One iterator per reader at most, reused from read to read.
	if len(iters) > workers || iters[nil] {
		t.Fatalf("%d reads went through %d iterators (nil: none)", workers*rounds, len(iters))
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestBloomkvBinding_PoolGivesBackLastClosed checks the pool's home
// shards: a goroutine that closes three iterators and then asks for one
// gets back the last it closed, as from one stack, rather than one from
// wherever the pool put it. A trial in which the pool picked a home shard
// anew (the garbage collector, or the race detector, dropped the hint) is
// not counted; a few that the scheduler moved to another processor may
// fail.
func TestBloomkvBinding_PoolGivesBackLastClosed(t *testing.T) {
	db := openBinding(t)
	p := db.iters
	counted, last := 0, 0
	for range 200 {
		its := []*pooledIter{p.get(db.d, nil, nil), p.get(db.d, nil, nil), p.get(db.d, nil, nil)}
		hints := p.hintsMade.Load()
		for _, it := range its {
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		got := p.get(db.d, nil, nil)
		if p.hintsMade.Load() == hints {
			counted++
			if got == its[2] {
				last++
			}
		}
		if err := got.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d of %d counted trials got back the last iterator closed", last, counted)
	if counted < 20 || last < counted*9/10 {
		t.Fatalf("%d of %d counted trials got back the last iterator closed; want at least 20 counted, 90%% of them", last, counted)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// loadBenchBinding commits the benchmarks' 10,000 keys, flushing once
// key flushAt is in (the keys after it stay in the memtable), and
// returns the keys.
func loadBenchBinding(b *testing.B, db DB, flushAt int) [][]byte {
	for n := 0; n < 10000; n++ {
		commit(b, db, n, "value-of-some-length-0123456789")
		if n == flushAt {
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	return benchKeys(10000)
}

// BenchmarkBloomkvBinding_Scan runs the driver's scan (NewIter, Scan of 10
// keys, Close) over the binding, on a flushed store with writes in the
// memtable; allocs/op is what the binding and the scan's copies cost.
func BenchmarkBloomkvBinding_Scan(b *testing.B) {
	benchBindingIter(b, 8000, func(db DB, it iterator, key []byte) error {
		return db.Scan(it, key, 10, false)
	})
}

// BenchmarkBloomkvBinding_Read runs the driver's read (NewIter, SeekGE,
// Close) over the binding.
func BenchmarkBloomkvBinding_Read(b *testing.B) {
	benchBindingIter(b, 9999, func(_ DB, it iterator, key []byte) error {
		if !it.SeekGE(key) {
			return fmt.Errorf("key %q not found", key)
		}
		return nil
	})
}

// benchBindingIter times op on a store loaded by loadBenchBinding (flushed
// after key flushAt), with an iterator the driver opens and closes around
// each op, over the store's keys in turn.
func benchBindingIter(b *testing.B, flushAt int, op func(db DB, it iterator, key []byte) error) {
	bdb := openBinding(b)
	defer bdb.Close()
	var db DB = bdb // boxed once, not per op
	keys := loadBenchBinding(b, db, flushAt)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it := db.NewIter(nil)
		if err := op(db, it, keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchKeys returns n keys of the benchmarks' stores, in an order that
// jumps around, made before the timer starts.
func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = ycsbKey(i * 7919 % n)
	}
	return keys
}

// TestBloomkvBinding_MemTableSize opens each engine as the driver does, with
// --memtable-size at 256 KiB, and writes 4 MiB: both engines must flush
// several memtables, where newPebbleDB's 64 MiB would flush none.
func TestBloomkvBinding_MemTableSize(t *testing.T) {
	defer func(old int64) { memTableSize = old }(memTableSize)
	memTableSize = 256 << 10
	cacheSize = 8 << 20
	value := string(make([]byte, 1<<10))
	for _, eng := range []string{"bloomkv", "pebble"} {
		t.Run(eng, func(t *testing.T) {
			var db DB
			var closeDB func() error
			if eng == "pebble" {
				p := newPebbleDB(t.TempDir()).(pebbleDB)
				db, closeDB = p, p.d.Close
			} else {
				b := newBloomkvDB(t.TempDir()).(bloomkvDB)
				db, closeDB = b, b.d.Close
			}
			for n := range 4 << 10 {
				commit(t, db, n, value)
			}
			deadline := time.Now().Add(30 * time.Second)
			for db.Metrics().Flush.Count < 4 {
				if time.Now().After(deadline) {
					t.Fatalf("%d flushes after 4 MiB into 256 KiB memtables: the memtable size was not %d",
						db.Metrics().Flush.Count, memTableSize)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := closeDB(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// engines are the stores the binding's differential tests compare: each
// engine as the driver opens it (cmd/pebble's newPebbleDB, the binding's
// newBloomkvDB), read by seeks and by --point-reads get.
var engines = []struct {
	name string
	open func(t *testing.T) (DB, func() error)
}{
	{"pebble/seek", func(t *testing.T) (DB, func() error) {
		p := openPebble(t)
		return p, p.d.Close
	}},
	{"pebble/get", func(t *testing.T) (DB, func() error) {
		p := openPebble(t)
		return newPointReadDB(p), p.d.Close
	}},
	{"bloomkv/seek", func(t *testing.T) (DB, func() error) {
		b := openBinding(t)
		return b, b.Close
	}},
	{"bloomkv/get", func(t *testing.T) (DB, func() error) {
		b := openBinding(t)
		return newPointReadDB(b), b.Close
	}},
}

func openPebble(t *testing.T) pebbleDB {
	cacheSize = 8 << 20
	return newPebbleDB(t.TempDir()).(pebbleDB)
}

// recordingIter records what an iterator shows after each move: the
// driver's Scan (pebbleDB.Scan) moves it and copies what it shows, and a
// trace of it says what the scan read.
type recordingIter struct {
	iterator
	trace *[]string
}

func (r recordingIter) note(op string, ok bool) bool {
	if ok {
		*r.trace = append(*r.trace, fmt.Sprintf("%s %q=%q", op, r.Key(), r.Value()))
	} else {
		*r.trace = append(*r.trace, op+" -")
	}
	return ok
}

func (r recordingIter) SeekGE(k []byte) bool { return r.note("seekge", r.iterator.SeekGE(k)) }
func (r recordingIter) SeekLT(k []byte) bool { return r.note("seeklt", r.iterator.SeekLT(k)) }
func (r recordingIter) First() bool          { return r.note("first", r.iterator.First()) }
func (r recordingIter) Last() bool           { return r.note("last", r.iterator.Last()) }
func (r recordingIter) Next() bool           { return r.note("next", r.iterator.Next()) }
func (r recordingIter) Prev() bool           { return r.note("prev", r.iterator.Prev()) }

// driverOps runs, on db, what the driver does (batches built in reused
// key and value buffers, as ycsb.insert and ycsb.init do; reads; scans
// with a count, forward and reverse; iterators with bounds), around a
// flush, and returns the trace of what every read showed.
func driverOps(t *testing.T, db DB) []string {
	var trace []string
	var key, value []byte
	batch := func(ns ...int) {
		b := db.NewBatch()
		for _, n := range ns {
			key = append(key[:0], ycsbKey(n)...)
			value = append(value[:0], fmt.Sprintf("value-%d", n)...)
			if err := b.Set(key, value, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	reads := func(label string) {
		trace = append(trace, label)
		for _, n := range []int{10, 15, 11, 30, 99, 5, 0} { // present, absent between keys, past the end, before the first
			it := recordingIter{db.NewIter(nil), &trace}
			if it.SeekGE(ycsbKey(n)) {
				_, _ = it.Key(), it.Value()
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range []struct {
			n       int
			count   int64
			reverse bool
		}{{10, 3, false}, {15, 100, false}, {99, 5, false}, {40, 4, true}, {10, 2, true}, {30, 1, false}} {
			it := recordingIter{db.NewIter(nil), &trace}
			if err := db.Scan(it, ycsbKey(s.n), s.count, s.reverse); err != nil {
				t.Fatal(err)
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		it := recordingIter{db.NewIter(&pebble.IterOptions{LowerBound: ycsbKey(12), UpperBound: ycsbKey(21)}), &trace}
		for ok := it.First(); ok; ok = it.Next() {
		}
		for ok := it.Last(); ok; ok = it.Prev() {
		}
		it.SeekGE(ycsbKey(10))
		it.SeekLT(ycsbKey(40))
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	batch(10, 12, 14, 16, 18, 20)
	batch(22, 24)
	b := db.NewBatch()
	if err := b.Delete(ycsbKey(14), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	b.Close()
	reads("memtable")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	batch(10, 26) // an update of a flushed key, and an insert
	reads("tables and memtable")
	return trace
}

// TestBloomkvBinding_SameAnswersAsPebble runs the driver's operations on
// Pebble and on the binding, each read by seeks and by --point-reads get,
// and checks that every read, scan and bounded iteration shows the same
// keys and values in all four: the binding gives the driver Pebble's
// semantics.
func TestBloomkvBinding_SameAnswersAsPebble(t *testing.T) {
	var want []string
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			db, closeDB := e.open(t)
			got := driverOps(t, db)
			if err := closeDB(); err != nil {
				t.Fatal(err)
			}
			if len(got) < 70 {
				t.Fatalf("trace of %d moves, want 70 or more:\n%s", len(got), strings.Join(got, "\n"))
			}
			if want == nil {
				want = got
				return
			}
			if d := diffTraces(want, got); d != "" {
				t.Fatalf("%s shows other answers than %s:\n%s", e.name, engines[0].name, d)
			}
		})
	}
}

// diffTraces returns the first line where two traces differ, or "".
func diffTraces(want, got []string) string {
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			return fmt.Sprintf("move %d: want %s, got %s", i, w, g)
		}
	}
	return ""
}

// TestBloomkvBinding_CommitSyncs checks that the binding maps the write
// options of the driver's commits as Pebble reads them: nil and
// pebble.Sync sync the WAL (the driver commits every write with
// pebble.Sync), pebble.NoSync does not.
func TestBloomkvBinding_CommitSyncs(t *testing.T) {
	db := openBinding(t)
	defer db.Close()
	for _, c := range []struct {
		name  string
		opts  *pebble.WriteOptions
		syncs int64
	}{{"NoSync", pebble.NoSync, 0}, {"nil", nil, 1}, {"Sync", pebble.Sync, 1}, {"NoSync again", pebble.NoSync, 0}} {
		before := db.d.Metrics().WAL.Syncs
		b := db.NewBatch()
		if err := b.Set(ycsbKey(1), []byte(c.name), nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(c.opts); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if got := db.d.Metrics().WAL.Syncs - before; got != c.syncs {
			t.Errorf("commit with %s: %d WAL syncs, want %d", c.name, got, c.syncs)
		}
	}
}

// TestBloomkvBinding_SettleAsksBloomkv checks that --settle-at-open waits
// for bloomkv by bloomkv's own rule (kv.DB.WaitIdle), with --point-reads
// get as with seek, not by Pebble's rule over the binding's translated
// metrics. The two tell apart on a closed store: WaitIdle reports
// kv.ErrClosed, where a closed store's metrics show nothing due.
func TestBloomkvBinding_SettleAsksBloomkv(t *testing.T) {
	for _, wrap := range []struct {
		name string
		db   func(bloomkvDB) DB
	}{{"seek", func(b bloomkvDB) DB { return b }}, {"get", func(b bloomkvDB) DB { return newPointReadDB(b) }}} {
		t.Run(wrap.name, func(t *testing.T) {
			b := openBinding(t)
			db := wrap.db(b)
			if err := settle(context.Background(), db); err != nil {
				t.Fatalf("settle on an open store: %v", err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if err := settle(context.Background(), db); !errors.Is(err, kv.ErrClosed) {
				t.Fatalf("settle on a closed store: %v, want kv.ErrClosed from kv.DB.WaitIdle", err)
			}
		})
	}
}
