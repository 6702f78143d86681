package kv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// TestIterator_HoldsVersion keeps the tables an iterator reads until it is
// closed, even when a compaction replaces them.
func TestIterator_HoldsVersion(t *testing.T) {
	d, fs := openMem(t, &Options{DisableAutomaticCompactions: true})
	defer mustClose(t, d)
	for i := 0; i < 3; i++ {
		must(t, d.Set(fmt.Appendf(nil, "k%d", i), []byte("v"), NoSync))
		must(t, d.Flush())
	}
	old := d.mu.versions.current.Levels[0]
	it, _ := d.NewIter(nil)
	if err := d.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range old {
		if _, err := fs.Stat("db/" + base.MakeFilename(base.FileTypeTable, f.FileNum)); err != nil {
			t.Fatalf("table %s deleted under an open iterator: %v", f.FileNum, err)
		}
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != 3 {
		t.Fatalf("iterator saw %d keys, err %v", n, err)
	}
	must(t, d.WaitIdle(context.Background())) // the cleaner deletes in the background
	for _, f := range old {
		if _, err := fs.Stat("db/" + base.MakeFilename(base.FileTypeTable, f.FileNum)); err == nil {
			t.Fatalf("obsolete table %s kept after the iterator closed", f.FileNum)
		}
	}
	if got := d.Metrics().TablesDeleted; got != 3 {
		t.Fatalf("TablesDeleted = %d, want 3", got)
	}
}

// TestDB_AutomaticCompaction lets background compaction keep L0 short and
// checks every key afterwards, also after a reopen.
func TestDB_AutomaticCompaction(t *testing.T) {
	o := &Options{MemTableSize: 8 << 10, L0CompactionThreshold: 2, TargetFileSize: 16 << 10}
	d, _ := openMem(t, o)
	const n = 3000
	for i := 0; i < n; i++ {
		must(t, d.Set(fmt.Appendf(nil, "key%05d", (i*7919)%n), fmt.Appendf(nil, "value%d", i), NoSync))
	}
	must(t, d.Flush())
	waitIdle(t, d)
	m := d.Metrics()
	// L0 may keep a merge within L0 (compaction.Picker.Pick), its tables
	// side by side: a lookup consults one L0 table at most.
	if m.Compact.L0ReadAmp >= 2 || m.Compact.Count == 0 {
		t.Fatalf("background compaction did not run:\n%s", m)
	}
	// Everything written has been flushed, and compactions into the base
	// level (L6 throughout: the store stays far below LBaseMaxBytes) read
	// no more of L0 than flushes wrote there (only flushes add L0 tables).
	if m.Levels[0].BytesIn != m.WAL.BytesIn {
		t.Errorf("L0 took in %d bytes, the WAL %d", m.Levels[0].BytesIn, m.WAL.BytesIn)
	}
	const baseLevel = 6
	if in, flushed := m.Levels[baseLevel].BytesIn, m.Levels[0].BytesWritten; in == 0 || in > flushed {
		t.Errorf("L%d took in %d bytes of the %d flushed to L0:\n%s", baseLevel, in, flushed, m)
	}
	if m.Levels[baseLevel].BytesWritten == 0 || m.Levels[baseLevel].WriteAmp() == 0 {
		t.Errorf("L%d counted no bytes written:\n%s", baseLevel, m)
	}
	check := func(d *DB) {
		for i := 0; i < n; i++ {
			mustGet(t, d, fmt.Sprintf("key%05d", (i*7919)%n), fmt.Sprintf("value%d", i))
		}
	}
	check(d)
	must(t, d.Close())
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	check(d)
}

// TestDB_CloseDuringBackgroundWork closes while flushes and compactions may
// be running; nothing acknowledged is lost.
func TestDB_CloseDuringBackgroundWork(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, MemTableSize: 4 << 10, L0CompactionThreshold: 2}
	for round := 0; round < 3; round++ {
		d, err := Open("db", o)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 1000; i++ {
			must(t, d.Set(fmt.Appendf(nil, "r%d-%04d", round, i), []byte("some value"), NoSync))
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	for round := 0; round < 3; round++ {
		for i := 0; i < 1000; i += 97 {
			mustGet(t, d, fmt.Sprintf("r%d-%04d", round, i), "some value")
		}
	}
}

// TestDB_StickyWALError refuses every write after a WAL write fails, while
// reads go on.
func TestDB_StickyWALError(t *testing.T) {
	var armed atomic.Bool
	failWAL := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if armed.Load() && (op == errorfs.OpFileWrite || op == errorfs.OpFileSync) && strings.HasSuffix(path, ".log") {
			return errorfs.ErrInjected
		}
		return nil
	})
	d, err := Open("db", &Options{FS: errorfs.Wrap(vfs.NewMem(), failWAL)})
	if err != nil {
		t.Fatal(err)
	}
	must(t, d.Set([]byte("a"), []byte("1"), Sync))
	armed.Store(true)
	if err := d.Set([]byte("b"), []byte("2"), Sync); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("write on a failing WAL: %v", err)
	}
	armed.Store(false)
	if err := d.Set([]byte("c"), []byte("3"), Sync); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("write after a WAL failure: %v", err)
	}
	mustGet(t, d, "a", "1")
	mustNotFind(t, d, "b")
	mustNotFind(t, d, "c")
	if err := d.Close(); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Close after a WAL failure: %v, want the injected error", err)
	}
}

// TestOptions_ExtraFilterPolicies reads tables written under another
// policy with its filter when it is registered, and without it when not.
func TestOptions_ExtraFilterPolicies(t *testing.T) {
	other := &exactPolicy{}
	d, fs := openMem(t, &Options{FilterPolicy: other, DisableAutomaticCompactions: true})
	must(t, d.Set([]byte("a"), nil, NoSync))
	must(t, d.Set([]byte("c"), nil, NoSync))
	must(t, d.Flush())
	must(t, d.Close())
	for _, extra := range []bool{true, false} {
		o := &Options{FS: fs}
		if extra {
			o.ExtraFilterPolicies = append(o.ExtraFilterPolicies, other)
		}
		d, err := Open("db", o)
		if err != nil {
			t.Fatal(err)
		}
		mustNotFind(t, d, "b")
		mustGet(t, d, "c", "")
		got := d.Metrics().Lookups
		if wantNeg := map[bool]int64{true: 1, false: 0}[extra]; got.FilterNegatives != wantNeg {
			t.Errorf("extra=%v: FilterNegatives %d, want %d (%+v)", extra, got.FilterNegatives, wantNeg, got)
		}
		must(t, d.Close())
	}
}

// exactPolicy is a toy exact filter: the keys, each after its length.
type exactPolicy struct{}

func (*exactPolicy) Name() string                        { return "test.exact" }
func (*exactPolicy) NewWriter() bloompolicy.FilterWriter { return &exactWriter{} }
func (*exactPolicy) MayContain(filter, key []byte) bool {
	for len(filter) > 0 {
		n := int(filter[0])
		if n+1 > len(filter) {
			return true
		}
		if string(filter[1:1+n]) == string(key) {
			return true
		}
		filter = filter[1+n:]
	}
	return false
}

type exactWriter struct{ keys [][]byte }

func (w *exactWriter) AddKey(key []byte) { w.keys = append(w.keys, append([]byte(nil), key...)) }
func (w *exactWriter) Finish(dst []byte) []byte {
	for _, k := range w.keys {
		dst = append(append(dst, byte(len(k))), k...)
	}
	w.keys = nil
	return dst
}

// TestManifest_Rollover rewrites the MANIFEST on every edit with a tiny
// size limit: one MANIFEST remains, CURRENT names it, and reopen works.
func TestManifest_Rollover(t *testing.T) {
	o := &Options{MaxManifestFileSize: 1, DisableAutomaticCompactions: true}
	d, fs := openMem(t, o)
	for i := 0; i < 5; i++ {
		must(t, d.Set(fmt.Appendf(nil, "k%d", i), []byte("v"), NoSync))
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	must(t, d.Compact(nil, nil))
	must(t, d.Close())
	names, _ := fs.List("db")
	var manifests []string
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") {
			manifests = append(manifests, n)
		}
	}
	current := string(readFile(t, fs, "db/CURRENT"))
	if len(manifests) != 1 || current != manifests[0]+"\n" {
		t.Fatalf("manifests %v, CURRENT %q", manifests, current)
	}
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	for i := 0; i < 5; i++ {
		mustGet(t, d, fmt.Sprintf("k%d", i), "v")
	}
}

// TestFlush_ReusesMemTable checks what becomes of a flushed memtable: once
// no read holds it, the next memtable switch reuses it, emptied; while an
// iterator holds it, it is neither reused nor reachable from the DB, and
// when that iterator closes with a spare kept already, nothing keeps it
// alive: its memory goes back to the garbage collector.
func TestFlush_ReusesMemTable(t *testing.T) {
	d, _ := openMem(t, &Options{DisableAutomaticCompactions: true})
	defer mustClose(t, d)
	set := func(k string) {
		t.Helper()
		if err := d.Set([]byte(k), []byte("v"), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	flush := func() {
		t.Helper()
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	mutable := func() *memTable {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.mu.mem
	}
	a := mutable()
	set("a")
	flush()
	b := mutable()
	if d.spareMem.Load() != a || b == a {
		t.Fatal("the flushed memtable, which no read holds, is not kept for reuse")
	}
	set("b")
	flush()
	if mutable() != a || d.spareMem.Load() != b || a.Len() != 0 {
		t.Fatalf("the switch did not reuse the kept memtable, emptied (%d entries)", a.Len())
	}
	// a is mutable again; an iterator holds it across its flush.
	set("c")
	it, err := d.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	freed := make(chan struct{})
	runtime.AddCleanup(a, func(ch chan struct{}) { close(ch) }, freed)
	flush() // reuses b; a is held by it
	set("d")
	flush() // a new memtable; b is kept
	if d.spareMem.Load() != b || mutable() == a {
		t.Fatal("the memtable an iterator holds was reused")
	}
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key())+"="+string(it.Value()))
	}
	if got := strings.Join(keys, " "); got != "a=v b=v c=v" {
		t.Fatalf("the iterator over the held memtable reads %q, want a, b and c", got)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	a = nil
	for range 100 {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("the flushed memtable is still reachable, with a spare kept already")
}

// TestDB_Close_ReportsLeaks closes a DB with iterators and a snapshot
// still open: Close reports them with ErrLeaked, counting each, and still
// closes the store cleanly (it reopens with every write); a DB whose
// iterators and snapshots were all closed closes with no error.
func TestDB_Close_ReportsLeaks(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("db", &Options{FS: fs})
	must(t, err)
	must(t, d.Set([]byte("a"), []byte("1"), NoSync))
	it1, err := d.NewIter(nil)
	must(t, err)
	it2, err := d.NewIter(nil)
	must(t, err)
	closed, err := d.NewIter(nil)
	must(t, err)
	must(t, closed.Close())
	snap := d.NewSnapshot()
	err = d.Close()
	if !errors.Is(err, ErrLeaked) || !strings.Contains(err.Error(), "(iterators: 2, snapshots: 1)") {
		t.Fatalf("Close with 2 iterators and a snapshot open: %v, want ErrLeaked counting them", err)
	}
	for _, c := range []io.Closer{it1, it2, snap} {
		if err := c.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("closing a leaked %T after the DB: %v, want ErrClosed", c, err)
		}
	}
	d, err = Open("db", &Options{FS: fs})
	must(t, err)
	mustGet(t, d, "a", "1")
	it, err := d.NewIter(nil)
	must(t, err)
	s := d.NewSnapshot()
	must(t, it.Close())
	must(t, s.Close())
	must(t, d.Close())
}
