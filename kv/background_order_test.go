package kv

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
)

// Tests of the order between foreground operations and a flush or a
// compaction held at its first output table (gateFS): the job has listed
// the open snapshots and read its inputs' shape by then, and waits while
// the test writes, reads, snapshots or closes.

// orderKey is the i-th key of the tests' key space.
func orderKey(i int) string { return fmt.Sprintf("k%04d", i) }

// fillKeys sets n keys to value, one write each.
func fillKeys(t *testing.T, d *DB, n int, value string) {
	t.Helper()
	for i := 0; i < n; i++ {
		must(t, d.Set([]byte(orderKey(i)), []byte(value), NoSync))
	}
}

// snapGet checks that s reads key as want ("" for not found).
func snapGet(t *testing.T, s *Snapshot, key, want, what string) {
	t.Helper()
	v, err := s.Get([]byte(key))
	switch {
	case want == "" && !errors.Is(err, ErrNotFound):
		t.Fatalf("%s: snapshot Get(%q) = %q, %v; want not found", what, key, v, err)
	case want != "" && (err != nil || string(v) != want):
		t.Fatalf("%s: snapshot Get(%q) = %q, %v; want %q", what, key, v, err, want)
	}
}

// iterPairs returns the key=value pairs an iterator over the whole store
// reads from First, and closes it.
func iterPairs(t *testing.T, it *Iterator) []string {
	t.Helper()
	var got []string
	for it.First(); it.Valid(); it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	must(t, it.Close())
	return got
}

// pairs returns the pairs orderKey(i)=value for i in [lo, hi).
func pairs(lo, hi int, value string) []string {
	var p []string
	for i := lo; i < hi; i++ {
		p = append(p, orderKey(i)+"="+value)
	}
	return p
}

// TestCompaction_SnapshotTakenWhileItRuns holds a compaction at its first
// output, after it listed the snapshots, and takes a snapshot then: the
// compaction, which did not list it, must keep the version it sees, as it
// keeps the one the older snapshot sees, whatever is written meanwhile.
func TestCompaction_SnapshotTakenWhileItRuns(t *testing.T) {
	gate := newGateFS(vfs.NewMem(), 1<<30)
	d, err := Open("db", &Options{FS: gate, DisableAutomaticCompactions: true})
	must(t, err)
	defer gate.open()
	defer d.Close()
	const n = 300
	fillKeys(t, d, n, "v1")
	s1 := d.NewSnapshot()
	defer s1.Close()
	fillKeys(t, d, n, "v2")
	must(t, d.Flush())
	fillKeys(t, d, n, "v3")
	must(t, d.Flush())

	gate.pass.Store(0)
	compacted := make(chan error, 1)
	go func() { compacted <- d.Compact(nil, nil) }()
	waitFor(t, gate.held, 30*time.Second, "waiting for the compaction's first output")
	s2 := d.NewSnapshot() // sees v3, which the compaction's inputs hold
	defer s2.Close()
	fillKeys(t, d, n, "v4")
	must(t, d.DeleteRange([]byte(orderKey(0)), []byte(orderKey(n/2)), NoSync))
	gate.open()
	must(t, waitFor(t, compacted, 30*time.Second, "waiting for the compaction"))
	if got := d.Metrics().Compact.Count; got == 0 {
		t.Fatal("no compaction ran")
	}
	check := func(what string) {
		t.Helper()
		for i := 0; i < n; i += 7 {
			snapGet(t, s1, orderKey(i), "v1", what)
			snapGet(t, s2, orderKey(i), "v3", what)
			if i < n/2 {
				mustNotFind(t, d, orderKey(i))
			} else {
				mustGet(t, d, orderKey(i), "v4")
			}
		}
	}
	check("after the compaction")
	// The versions the snapshots see are in the tables now, not only in
	// the memtable: a second compaction, which lists them both, keeps them.
	must(t, d.Compact(nil, nil))
	check("after a second compaction")
	must(t, s1.Close())
	must(t, d.Compact(nil, nil))
	for i := 0; i < n; i += 7 {
		snapGet(t, s2, orderKey(i), "v3", "after the first snapshot's release")
	}
}

// TestIterator_CloneKeepsInputsAcrossRefresh opens an iterator, clones
// it, and replaces every table they read by compactions; then refreshes
// the iterator, which lets go of the old read state: the clone still
// holds it, so no input table may be deleted until it closes, and the
// clone reads the old view whole, tables opened only now included.
func TestIterator_CloneKeepsInputsAcrossRefresh(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("db", &Options{FS: fs, DisableAutomaticCompactions: true, MaxOpenFiles: 16})
	must(t, err)
	defer d.Close()
	const n = 300
	fillKeys(t, d, n, "old")
	must(t, d.Flush())
	fillKeys(t, d, n/2, "old2")
	must(t, d.Flush())
	inputs := versionTables(d)
	if len(inputs) != 2 {
		t.Fatalf("tables before the compaction: %v, want 2", inputs)
	}
	it, err := d.NewIter(nil)
	must(t, err)
	clone, err := it.Clone()
	must(t, err)

	fillKeys(t, d, n, "new")
	must(t, d.Compact(nil, nil)) // waits for the cleaner
	for _, num := range versionTables(d) {
		if slices.Contains(inputs, num) {
			t.Fatalf("table %s is still in the Version after the compaction", num)
		}
	}
	must(t, it.Refresh())
	must(t, d.WaitIdle(t.Context()))
	files := tableFiles(t, fs, "db")
	for _, num := range inputs {
		if !slices.Contains(files, num) {
			t.Fatalf("input table %s deleted while a clone holds its read state; tables on disk: %v", num, files)
		}
	}
	want := append(pairs(0, n/2, "old2"), pairs(n/2, n, "old")...)
	if got := iterPairs(t, clone); !slices.Equal(got, want) {
		t.Fatalf("the clone reads %d pairs, want %d:\n got %.200q\nwant %.200q", len(got), len(want), got, want)
	}
	if got := iterPairs(t, it); !slices.Equal(got, pairs(0, n, "new")) {
		t.Fatalf("the refreshed iterator reads %.200q, want every key new", got)
	}
	must(t, d.WaitIdle(t.Context()))
	files = tableFiles(t, fs, "db")
	for _, num := range inputs {
		if slices.Contains(files, num) {
			t.Fatalf("input table %s still on disk once nothing reads it: %v", num, files)
		}
	}
	if !slices.Equal(files, versionTables(d)) {
		t.Fatalf("tables on disk %v, in the Version %v", files, versionTables(d))
	}
}

// waitClosing waits until Close, started in another goroutine, has marked
// d closed, so that background work held meanwhile sees it once let go.
func waitClosing(t *testing.T, d *DB) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !d.closed.Load(); runtime.Gosched() {
		if time.Now().After(deadline) {
			fatalWithGoroutines(t, "Close never marked the DB closed")
		}
	}
}

// checkReopened reopens the store closed in fs and checks that its tables
// on disk are exactly those its MANIFEST names, so Close neither leaked a
// table nor deleted one still named, and that it reads n keys as want.
func checkReopened(t *testing.T, fs vfs.FS, n int, want string) {
	t.Helper()
	onDisk := tableFiles(t, fs, "db")
	d, err := Open("db", &Options{FS: fs, DisableAutomaticCompactions: true})
	must(t, err)
	defer mustClose(t, d)
	if named := versionTables(d); !slices.Equal(onDisk, named) {
		t.Fatalf("tables on disk after Close %v, named by the MANIFEST %v", onDisk, named)
	}
	for i := 0; i < n; i++ {
		mustGet(t, d, orderKey(i), want)
	}
}

// TestClose_DuringCompaction closes the store while a compaction is held
// at its first output: the compaction stops, deletes its output, and
// leaves its inputs installed; the next Open finds every table the
// MANIFEST names, and no other.
func TestClose_DuringCompaction(t *testing.T) {
	mem := vfs.NewMem()
	gate := newGateFS(mem, 1<<30)
	d, err := Open("db", &Options{FS: gate, DisableAutomaticCompactions: true})
	must(t, err)
	defer gate.open()
	const n = 1000 // more than the 256 entries between two looks for Close
	fillKeys(t, d, n, "a")
	must(t, d.Flush())
	fillKeys(t, d, n, "b")
	must(t, d.Flush())
	inputs := versionTables(d)
	gate.pass.Store(0)
	compacted, closed := make(chan error, 1), make(chan error, 1)
	go func() { compacted <- d.Compact(nil, nil) }()
	held := waitFor(t, gate.held, 30*time.Second, "waiting for the compaction's first output")
	go func() { closed <- d.Close() }()
	waitClosing(t, d)
	gate.open()
	if err := waitFor(t, compacted, 30*time.Second, "waiting for the compaction"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Compact interrupted by Close: %v, want ErrClosed", err)
	}
	must(t, waitFor(t, closed, 30*time.Second, "waiting for Close"))
	if _, err := mem.Stat(held); err == nil {
		t.Fatalf("the interrupted compaction's output %s is still on disk", held)
	}
	if files := tableFiles(t, mem, "db"); !slices.Equal(files, inputs) {
		t.Fatalf("tables after Close %v, want the compaction's inputs %v", files, inputs)
	}
	checkReopened(t, mem, n, "b")
}

// TestClose_DuringFlush closes the store while a flush is held at its
// table: the flush stops and deletes it, the memtable stays in its WAL,
// and the next Open replays it.
func TestClose_DuringFlush(t *testing.T) {
	mem := vfs.NewMem()
	gate := newGateFS(mem, 0)
	d, err := Open("db", &Options{FS: gate, DisableAutomaticCompactions: true})
	must(t, err)
	defer gate.open()
	const n = 1000
	fillKeys(t, d, n, "a")
	flushed, closed := make(chan error, 1), make(chan error, 1)
	go func() { flushed <- d.Flush() }()
	held := waitFor(t, gate.held, 30*time.Second, "waiting for the flush's table")
	go func() { closed <- d.Close() }()
	waitClosing(t, d)
	gate.open()
	if err := waitFor(t, flushed, 30*time.Second, "waiting for the flush"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush interrupted by Close: %v, want ErrClosed", err)
	}
	must(t, waitFor(t, closed, 30*time.Second, "waiting for Close"))
	if _, err := mem.Stat(held); err == nil {
		t.Fatalf("the interrupted flush's table %s is still on disk", held)
	}
	if files := tableFiles(t, mem, "db"); len(files) != 0 {
		t.Fatalf("tables after Close %v, want none", files)
	}
	checkReopened(t, mem, n, "a")
}

// TestDeleteRange_DuringFlush deletes a range while the memtable holding
// the range's older keys is being flushed, held at its table: readers see
// the keys deleted from then on, whether they read the memtable or, once
// the flush is installed, its table; an iterator opened before the
// deletion keeps seeing them; and a reopened store has them deleted.
func TestDeleteRange_DuringFlush(t *testing.T) {
	mem := vfs.NewMem()
	gate := newGateFS(mem, 0)
	d, err := Open("db", &Options{FS: gate, DisableAutomaticCompactions: true})
	must(t, err)
	defer gate.open()
	const n, lo, hi = 300, 100, 200
	fillKeys(t, d, n, "v")
	flushed := make(chan error, 1)
	go func() { flushed <- d.Flush() }()
	waitFor(t, gate.held, 30*time.Second, "waiting for the flush's table")
	before, err := d.NewIter(nil)
	must(t, err)
	s := d.NewSnapshot()
	defer s.Close()
	must(t, d.DeleteRange([]byte(orderKey(lo)), []byte(orderKey(hi)), NoSync))
	check := func(what string) {
		t.Helper()
		it, err := d.NewIter(nil)
		must(t, err)
		if got, want := iterPairs(t, it), append(pairs(0, lo, "v"), pairs(hi, n, "v")...); !slices.Equal(got, want) {
			t.Fatalf("%s: iterator reads %d pairs, want %d", what, len(got), len(want))
		}
		for i := 0; i < n; i += 3 {
			snapGet(t, s, orderKey(i), "v", what)
			if lo <= i && i < hi {
				mustNotFind(t, d, orderKey(i))
			} else {
				mustGet(t, d, orderKey(i), "v")
			}
		}
	}
	check("during the flush")
	gate.open()
	must(t, waitFor(t, flushed, 30*time.Second, "waiting for the flush"))
	if got := d.Metrics().Levels[0].NumFiles; got != 1 {
		t.Fatalf("%d L0 tables after the flush, want 1", got)
	}
	check("after the flush")
	if got := iterPairs(t, before); !slices.Equal(got, pairs(0, n, "v")) {
		t.Fatalf("an iterator opened before the DeleteRange reads %d pairs, want all %d", len(got), n)
	}
	must(t, d.Flush())
	must(t, d.Compact(nil, nil))
	check("after a compaction")
	must(t, s.Close())
	must(t, d.Close())
	d, err = Open("db", &Options{FS: mem})
	must(t, err)
	defer mustClose(t, d)
	for i := 0; i < n; i++ {
		if lo <= i && i < hi {
			mustNotFind(t, d, orderKey(i))
		} else {
			mustGet(t, d, orderKey(i), "v")
		}
	}
}
