package kv

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// eventCounts counts the events a listener receives, by name.
type eventCounts struct {
	mu     sync.Mutex
	n      map[string]int
	errs   []error
	failed []string // events whose info was inconsistent
}

func (c *eventCounts) add(name string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[name]++
	if !ok {
		c.failed = append(c.failed, name)
	}
}

func (c *eventCounts) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// listener returns an EventListener counting into c, checking what each
// event says as it goes.
func (c *eventCounts) listener() *EventListener {
	c.n = map[string]int{}
	return &EventListener{
		BackgroundError: func(err error) {
			c.mu.Lock()
			c.errs = append(c.errs, err)
			c.mu.Unlock()
			c.add("BackgroundError", err != nil)
		},
		FlushBegin: func(i FlushInfo) { c.add("FlushBegin", i.JobID > 0 && !i.Done) },
		FlushEnd: func(i FlushInfo) {
			c.add("FlushEnd", i.JobID > 0 && i.Done && (i.Err != nil || len(i.Output) > 0 && i.Duration > 0))
		},
		CompactionBegin: func(i CompactionInfo) {
			c.add("CompactionBegin", len(i.Input) > 0 && i.InputBytes > 0 && i.OutputLevel >= i.StartLevel)
		},
		CompactionEnd: func(i CompactionInfo) {
			c.add("CompactionEnd", i.Done && (i.Err != nil || i.Reason == "move" || i.OutputBytes > 0))
		},
		WALCreated:      func(i WALCreateInfo) { c.add("WALCreated", strings.HasSuffix(i.Path, ".log")) },
		WALDeleted:      func(i FileDeleteInfo) { c.add("WALDeleted", i.Err == nil && strings.HasSuffix(i.Path, ".log")) },
		TableCreated:    func(i TableCreateInfo) { c.add("TableCreated", strings.HasSuffix(i.Path, ".sst")) },
		TableDeleted:    func(i FileDeleteInfo) { c.add("TableDeleted", strings.HasSuffix(i.Path, ".sst")) },
		WriteStallBegin: func(i WriteStallBeginInfo) { c.add("WriteStallBegin", i.Reason != "") },
		WriteStallEnd:   func() { c.add("WriteStallEnd", true) },
	}
}

// waitCount waits until event name has been delivered at least n times.
func (c *eventCounts) waitCount(t *testing.T, name string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); c.get(name) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			fatalWithGoroutines(t, fmt.Sprintf("%s delivered %d times, want %d", name, c.get(name), n))
		}
	}
}

// TestEventListener_EveryEvent runs a store through flushes, a manual and
// automatic compactions, a write stall (a flush held back while a writer
// fills the memtables) and an injected error in a flush, and counts the
// events its listener receives: each kind fires, begins match ends, and
// each event's info is consistent.
func TestEventListener_EveryEvent(t *testing.T) {
	mem := vfs.NewMem()
	d, err := Open("db", &Options{FS: mem}) // leaves a WAL for the next Open to delete
	if err != nil {
		t.Fatal(err)
	}
	d.Set([]byte("old"), []byte("x"), Sync)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	var failTables atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpCreate && strings.HasSuffix(path, ".sst") && failTables.Load() {
			return errorfs.ErrInjected
		}
		return nil
	})
	gate := newGateFS(errorfs.Wrap(mem, inj), 1<<30)
	var c eventCounts
	d, err = Open("db", &Options{FS: gate, MemTableSize: 16 << 10, L0CompactionThreshold: 2,
		EventListener: c.listener()})
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 100)
	for r := 0; r < 4; r++ {
		for i := 0; i < 100; i++ {
			if err := d.Set(fmt.Appendf(nil, "k%04d", i), value, NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Compact(nil, []byte("z")); err != nil {
		t.Fatal(err)
	}

	// A write stall: table creations wait at the gate, so the flush does,
	// while a writer fills more memtables than may wait for it.
	gate.pass.Store(0)
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 1000; i++ {
			if err := d.Set(fmt.Appendf(nil, "w%04d", i), value, NoSync); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	c.waitCount(t, "WriteStallBegin", 1)
	gate.open()
	if err := waitFor(t, done, 30*time.Second, "the stalled writer"); err != nil {
		t.Fatal(err)
	}
	c.waitCount(t, "WriteStallEnd", 1)

	// An injected error in a flush: a background error.
	failTables.Store(true)
	d.Set([]byte("x"), value, NoSync)
	if err := d.Flush(); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Flush with table creation failing: %v", err)
	}
	if err := d.Close(); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Close after a failed flush: %v", err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	t.Logf("events: %v", c.n)
	for _, name := range []string{"FlushBegin", "CompactionBegin", "WALCreated", "WALDeleted", "TableCreated",
		"TableDeleted", "WriteStallBegin", "BackgroundError"} {
		if c.n[name] == 0 {
			t.Errorf("no %s event", name)
		}
	}
	for _, pair := range [][2]string{{"FlushBegin", "FlushEnd"}, {"CompactionBegin", "CompactionEnd"},
		{"WriteStallBegin", "WriteStallEnd"}} {
		if c.n[pair[0]] != c.n[pair[1]] {
			t.Errorf("%d %s but %d %s", c.n[pair[0]], pair[0], c.n[pair[1]], pair[1])
		}
	}
	if c.n["FlushBegin"] < 5 || c.n["CompactionBegin"] < 2 || c.n["BackgroundError"] != 1 {
		t.Errorf("want at least 5 flushes, 2 compactions and one background error: %v", c.n)
	}
	if len(c.errs) != 1 || !errors.Is(c.errs[0], errorfs.ErrInjected) {
		t.Errorf("background errors reported: %v", c.errs)
	}
	if len(c.failed) > 0 {
		t.Errorf("events with inconsistent info: %v", c.failed)
	}
}

// TestEventListener_Panic checks that a listener that panics kills no
// goroutine of the DB: the panic becomes the background error, which
// later writes and Close report.
func TestEventListener_Panic(t *testing.T) {
	var ended atomic.Bool
	d, _ := openMem(t, &Options{EventListener: &EventListener{
		FlushEnd: func(FlushInfo) { panic("listener bug") },
		BackgroundError: func(error) {
			ended.Store(true)
		},
	}})
	d.Set([]byte("a"), []byte("1"), NoSync)
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !ended.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no BackgroundError after the listener panicked")
		}
	}
	err := d.Set([]byte("b"), []byte("2"), NoSync)
	if err == nil || !strings.Contains(err.Error(), "listener panicked: listener bug") {
		t.Fatalf("Set after the listener panicked: %v", err)
	}
	if v, err := d.Get([]byte("a")); err != nil || string(v) != "1" {
		t.Fatalf("Get after the listener panicked: %q, %v", v, err)
	}
	if err := d.Close(); err == nil || !strings.Contains(err.Error(), "listener panicked") {
		t.Fatalf("Close: %v", err)
	}
}

// TestEventListener_SlowListenerBlocksNothing checks that a listener that
// blocks holds up neither reads, writes, flushes nor compactions: only
// the delivery of later events waits.
func TestEventListener_SlowListenerBlocksNothing(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int64
	d, _ := openMem(t, &Options{MemTableSize: 16 << 10, EventListener: &EventListener{
		TableCreated: func(TableCreateInfo) {
			calls.Add(1)
			<-release
		},
	}})
	for i := 0; i < 2000; i++ {
		if err := d.Set(fmt.Appendf(nil, "k%04d", i), make([]byte, 50), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Compact(nil, []byte("z")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get([]byte("k0001")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); calls.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the listener was never called")
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the blocked listener was called %d times, want 1 (the rest queued)", n)
	}
	if m := d.Metrics(); m.Flush.Count < 2 {
		t.Fatalf("%d flushes while the listener blocked", m.Flush.Count)
	}
	close(release)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if calls.Load() < 3 {
		t.Fatalf("after Close, %d TableCreated delivered", calls.Load())
	}
}

// TestEventListener_IteratorDuringClose has a listener hold an iterator
// of its own while Close runs, as a listener may call the DB's methods:
// once it closes the iterator, Close reports no leak.
func TestEventListener_IteratorDuringClose(t *testing.T) {
	holding, release := make(chan struct{}), make(chan struct{})
	var d *DB
	var once sync.Once
	listener := EventListener{FlushEnd: func(FlushInfo) {
		once.Do(func() {
			it, err := d.NewIter(nil)
			if err != nil {
				t.Error(err)
				close(holding)
				return
			}
			close(holding)
			<-release
			if err := it.Close(); err != nil && !errors.Is(err, ErrClosed) {
				t.Error(err)
			}
		})
	}}
	d, _ = openMem(t, &Options{EventListener: &listener})
	must(t, d.Set([]byte("k"), []byte("v"), NoSync))
	must(t, d.Flush())
	<-holding
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	time.Sleep(20 * time.Millisecond) // Close has begun: the listener still holds its iterator
	close(release)
	if err := waitFor(t, closed, 10*time.Second, "Close"); err != nil {
		t.Fatalf("Close with a listener's iterator closed during it: %v", err)
	}
}

// TestEventListener_PanicFailsFlush checks that a Flush after a listener
// panicked reports the panic, as EventListener documents, also when the
// memtable holds nothing to flush: the store takes no more writes, and a
// caller that flushes to check it is sound must hear so.
func TestEventListener_PanicFailsFlush(t *testing.T) {
	d, _ := openMem(t, &Options{EventListener: &EventListener{
		FlushEnd: func(FlushInfo) { panic("listener bug") },
	}})
	must(t, d.Set([]byte("a"), []byte("1"), NoSync))
	must(t, d.Flush())
	d.waitEvents()
	if err := d.Flush(); err == nil || !strings.Contains(err.Error(), "listener panicked: listener bug") {
		t.Fatalf("Flush after the listener panicked: %v", err)
	}
	if err := d.Close(); err == nil || !strings.Contains(err.Error(), "listener panicked") {
		t.Fatalf("Close: %v", err)
	}
}

// TestEventListener_FailedFlushTablesDeleted fails the sync of a flush's
// table once it is written: the flush deletes the table it created, the
// listener hears of it (TableDeleted), and Metrics.TablesDeleted counts
// it, as it counts every other table the store deletes.
func TestEventListener_FailedFlushTablesDeleted(t *testing.T) {
	inj := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpFileSync && strings.HasSuffix(path, ".sst") {
			return errorfs.ErrInjected
		}
		return nil
	})
	var c eventCounts
	d, err := Open("db", &Options{FS: errorfs.Wrap(vfs.NewMem(), inj), EventListener: c.listener()})
	if err != nil {
		t.Fatal(err)
	}
	must(t, d.Set([]byte("a"), []byte("1"), NoSync))
	if err := d.Flush(); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Flush with table syncs failing: %v", err)
	}
	d.waitEvents()
	if deleted, heard := d.Metrics().TablesDeleted, c.get("TableDeleted"); heard == 0 || deleted != int64(heard) {
		t.Fatalf("TablesDeleted %d, the listener heard of %d tables deleted", deleted, heard)
	}
	if err := d.Close(); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Close after a failed flush: %v", err)
	}
}
