package kv

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/pebble/vfs"
)

// Tests of write stalls: writers wait at L0StopWritesThreshold, counted
// in L0 read-amp, while a flush or compaction is held back.

// gateFS lets a number of tables be created, then holds every further
// table creation until the test opens the gate: the flush or compaction
// that reaches it waits, as on a disk that has stopped answering.
type gateFS struct {
	vfs.FS
	pass   atomic.Int64  // table creations let through before the gate shuts
	held   chan string   // receives the name of the first table held
	opened chan struct{} // closed to let every held creation through
	once   sync.Once
}

func newGateFS(fs vfs.FS, pass int) *gateFS {
	g := &gateFS{FS: fs, held: make(chan string, 1), opened: make(chan struct{})}
	g.pass.Store(int64(pass))
	return g
}

func (g *gateFS) Create(name string) (vfs.File, error) {
	if typ, _, ok := base.ParseFilename(g.PathBase(name)); ok && typ == base.FileTypeTable && g.pass.Add(-1) < 0 {
		select {
		case g.held <- name:
		default:
		}
		<-g.opened
	}
	return g.FS.Create(name)
}

func (g *gateFS) open() { g.once.Do(func() { close(g.opened) }) }

// waitFor waits for a value from ch, failing with a dump of every
// goroutine when none comes within timeout: the test is deadlocked.
func waitFor[T any](t *testing.T, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		fatalWithGoroutines(t, fmt.Sprintf("%s: nothing after %v", what, timeout))
		panic("unreachable")
	}
}

// fatalWithGoroutines fails the test with msg and a dump of every
// goroutine, to show where a deadlock sits.
func fatalWithGoroutines(t *testing.T, msg string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Fatalf("%s; goroutines:\n%s", msg, buf)
}

// stallFixture builds a store whose L0 read amplification is
// L0StopWritesThreshold (4 flushes of the same 200 keys, 4 tables over
// each key) with the L0→L1 compaction they trigger held at the
// gate, and starts a writer that writes more than a memtable holds. The
// store lives in fs. It returns the DB, its filesystems, the writer's
// result channel and the number of its writes acknowledged so far.
func stallFixture(t *testing.T, fs vfs.FS) (*DB, *gateFS, chan error, *atomic.Int64) {
	gate := newGateFS(fs, 4) // the four flushes pass; the compaction's first output waits
	// Compactions start only once L0 holds all four tables: between the
	// flushes the store's writes stop, and L0 would settle.
	o := &Options{FS: gate, MemTableSize: 32 << 10, L0CompactionThreshold: 4, L0StopWritesThreshold: 4,
		DisableAutomaticCompactions: true}
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 4; r++ {
		for i := 0; i < 200; i++ {
			if err := d.Set(fmt.Appendf(nil, "k%04d", i), fmt.Appendf(nil, "r%d", r), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	d.mu.Lock()
	d.opts.DisableAutomaticCompactions = false
	d.maybeScheduleCompactionLocked()
	d.mu.Unlock()
	held := waitFor(t, gate.held, 30*time.Second, "waiting for the L0 compaction to start")
	m := d.Metrics()
	if m.Levels[0].NumFiles != 4 || m.Flush.Count != 4 || m.Compact.InProgress != 1 {
		t.Fatalf("want 4 L0 tables and a compaction (held at %s) in progress:\n%s", held, m)
	}
	stalls := m.WriteStalls

	done := make(chan error, 1)
	acked := new(atomic.Int64)
	go func() {
		for i := 0; i < 400; i++ { // 400 × ~110 B: more than the 32 KiB memtable
			if err := d.Set(fmt.Appendf(nil, "w%04d", i), make([]byte, 100), NoSync); err != nil {
				done <- err
				return
			}
			acked.Add(1)
		}
		done <- nil
	}()

	// The writer fills the memtable, then must wait for L0 to shrink
	// before it can make the memtable immutable.
	deadline := time.Now().Add(30 * time.Second)
	for stalled := false; !stalled; {
		select {
		case err := <-done:
			t.Fatalf("the writer finished (err %v) while L0's read amplification is L0StopWritesThreshold\n%s", err, d.Metrics())
		case <-time.After(time.Millisecond):
		}
		stalled = d.Metrics().WriteStalls > stalls
		if !stalled && time.Now().After(deadline) {
			fatalWithGoroutines(t, "the writer never stalled")
		}
	}
	// Stalled it stays while the compaction is held.
	select {
	case err := <-done:
		t.Fatalf("the stalled writer finished (err %v) while L0's read amplification is L0StopWritesThreshold\n%s", err, d.Metrics())
	case <-time.After(100 * time.Millisecond):
	}
	if m := d.Metrics(); m.Levels[0].NumFiles != 4 || acked.Load() == 400 {
		t.Fatalf("stalled writer: %d writes acknowledged\n%s", acked.Load(), m)
	}
	return d, gate, done, acked
}

// TestCompaction_L0ReadAmpNotTableCount checks that L0's compaction
// trigger and the write stalls count L0's read amplification, not its
// tables: flushes of disjoint key ranges leave L0 with more tables than
// L0StopWritesThreshold but one over any key, which neither stalls writers
// nor calls for a compaction.
func TestCompaction_L0ReadAmpNotTableCount(t *testing.T) {
	o := &Options{MemTableSize: 32 << 10, L0CompactionThreshold: 2, L0SlowdownWritesThreshold: 2,
		L0StopWritesThreshold: 3}
	d, _ := openMem(t, o)
	defer mustClose(t, d)
	const flushes = 6
	for r := 0; r < flushes; r++ {
		for i := 0; i < 100; i++ {
			if err := d.Set(fmt.Appendf(nil, "r%d-k%04d", r, i), []byte("v"), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(t, d)
	m := d.Metrics()
	if m.Levels[0].NumFiles != flushes || m.Compact.L0ReadAmp != 1 {
		t.Fatalf("L0 holds %d tables with read-amp %d, want %d with read-amp 1\n%s",
			m.Levels[0].NumFiles, m.Compact.L0ReadAmp, flushes, m)
	}
	if m.WriteStalls != 0 || m.Compact.Count != 0 || m.Levels[0].Score >= 1 {
		t.Fatalf("disjoint L0 tables stalled writers (%d) or were compacted (%d, L0 score %.2f)\n%s",
			m.WriteStalls, m.Compact.Count, m.Levels[0].Score, m)
	}
}

// TestCompaction_WriteStall stalls a writer at L0StopWritesThreshold with
// the L0 compaction held, then either lets the compaction finish (the
// writer completes) or closes the DB (the writer fails with ErrClosed,
// Close abandons the compaction and returns cleanly, leaving no partial
// table behind, and nothing acknowledged is lost).
func TestCompaction_WriteStall(t *testing.T) {
	t.Run("resume", func(t *testing.T) {
		d, gate, done, _ := stallFixture(t, vfs.NewMem())
		defer mustClose(t, d)
		gate.open()
		if err := waitFor(t, done, 30*time.Second, "waiting for the stalled writer after compaction"); err != nil {
			t.Fatalf("stalled writer: %v", err)
		}
		waitIdle(t, d)
		if m := d.Metrics(); m.Levels[0].NumFiles >= 4 || m.Compact.Count == 0 {
			t.Fatalf("compaction did not shrink L0:\n%s", m)
		}
		for i := 0; i < 200; i++ {
			mustGet(t, d, fmt.Sprintf("k%04d", i), "r3")
		}
		for i := 0; i < 400; i++ {
			mustGet(t, d, fmt.Sprintf("w%04d", i), string(make([]byte, 100)))
		}
	})

	t.Run("close", func(t *testing.T) {
		d, gate, done, acked := stallFixture(t, vfs.NewMem())
		closed := make(chan error, 1)
		go func() { closed <- d.Close() }()
		err := waitFor(t, done, 30*time.Second, "waiting for the stalled writer after Close")
		if !errors.Is(err, ErrClosed) {
			t.Errorf("stalled writer after Close: %v, want ErrClosed", err)
		}
		// Close now waits for the compaction held at the gate; once let
		// through, the compaction sees the close and gives up.
		gate.open()
		if err := waitFor(t, closed, 30*time.Second, "waiting for Close"); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if m := d.Metrics(); m.Compact.Count != 0 {
			t.Errorf("the compaction completed after Close instead of being abandoned:\n%s", m)
		}
		onDisk := tableFiles(t, gate.FS, "db")
		// Reopen without background compactions: one started at Open could
		// replace tables before the check below lists the live ones.
		d2, err := Open("db", &Options{FS: gate.FS, DisableAutomaticCompactions: true})
		if err != nil {
			t.Fatal(err)
		}
		defer mustClose(t, d2)
		// Recovery may add an L0 table (the WAL's writes); every table left
		// on disk by Close must be one the store holds.
		live := versionTables(d2)
		for _, f := range onDisk {
			if !slices.Contains(live, f) {
				t.Errorf("table %s left on disk after Close is not in the store (it holds %v)", f, live)
			}
		}
		for i := 0; i < 200; i++ {
			mustGet(t, d2, fmt.Sprintf("k%04d", i), "r3")
		}
		for i := 0; i < int(acked.Load()); i++ {
			mustGet(t, d2, fmt.Sprintf("w%04d", i), string(make([]byte, 100)))
		}
	})
}

// readGateFS holds every open of a table file while shut: a compaction,
// which opens its input tables, waits there, and a flush, which opens
// none, goes on.
type readGateFS struct {
	vfs.FS
	mu   sync.Mutex
	shut chan struct{} // closed by open; nil while open
}

func newReadGateFS(fs vfs.FS) *readGateFS {
	return &readGateFS{FS: fs, shut: make(chan struct{})}
}

func (g *readGateFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if typ, _, ok := base.ParseFilename(g.PathBase(name)); ok && typ == base.FileTypeTable {
		g.mu.Lock()
		shut := g.shut
		g.mu.Unlock()
		if shut != nil {
			<-shut
		}
	}
	return g.FS.Open(name, opts...)
}

// open lets every held open, and every later one, through.
func (g *readGateFS) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
}

// TestCompaction_WriteStallCountsWaitingMemTables writes faster than
// compaction keeps up and samples L0's read amplification after every
// write: the memtables waiting for a flush count toward
// L0StopWritesThreshold, so L0 never rises above it, however many of
// them queue while it is near.
//
// It presses first with compactions held (readGateFS): the writer fills
// memtables until writes stop, every memtable queued is flushed, and L0
// must then stand at the threshold exactly: below it, the writer would
// go on; above it, the queued memtables were not counted. Then
// compactions run, and the writer goes on for pressingWrites more writes
// with flushes and compactions racing it. (Pressing by speed alone did
// not press where the writer, the flushes and the compactions share one
// processor: with GOMAXPROCS=1, L0 never reached the threshold in
// 300,000 writes.)
func TestCompaction_WriteStallCountsWaitingMemTables(t *testing.T) {
	const threshold = 4
	gate := newReadGateFS(vfs.NewMem())
	o := &Options{FS: gate, MemTableSize: 16 << 10, L0CompactionThreshold: 2,
		L0SlowdownWritesThreshold: threshold, L0StopWritesThreshold: threshold, MemTableStopWritesThreshold: 3}
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	defer gate.open() // before Close, which waits for the compaction held

	const pressingWrites = 30000
	var most, written atomic.Int64
	pressed := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		value := make([]byte, 100)
		from := -1 // the write at which compactions were let through
		for i := 0; ; i++ {
			key := fmt.Appendf(nil, "%016x", base.SeqNum(i)*0x9E3779B97F4A7C15)
			if err := d.Set(key, value, NoSync); err != nil {
				done <- err
				return
			}
			written.Store(int64(i + 1))
			amp := int64(d.Metrics().Compact.L0ReadAmp)
			for m := most.Load(); amp > m && !most.CompareAndSwap(m, amp); m = most.Load() {
			}
			select {
			case <-pressed:
				if from < 0 {
					from = i
				}
				if i >= from+pressingWrites {
					done <- nil
					return
				}
			default:
			}
		}
	}()

	// With compactions held, writes stop once L0 and the memtables queued
	// reach the threshold: the queue drains into L0, nothing changes L0
	// any more, and the writer fills the memtable and waits.
	var one Batch
	must(t, one.Set(make([]byte, 16), make([]byte, 100)))
	deadline := time.Now().Add(60 * time.Second)
	for {
		d.mu.Lock()
		// Full as hasRoom finds it, read without the commit pipeline's
		// mu, which the writer holds: the memtable's own counters.
		mem := d.mu.mem
		queued, amp, full := len(d.mu.imm), d.l0ReadAmpLocked(), !mem.empty() && mem.Size()+int64(one.Len()) > mem.limit
		d.mu.Unlock()
		if queued == 0 && amp >= threshold && full {
			break
		}
		if time.Now().After(deadline) {
			fatalWithGoroutines(t, fmt.Sprintf("writes did not stop with compactions held: L0 at %d, %d memtables queued, %d writes", amp, queued, written.Load()))
		}
		time.Sleep(time.Millisecond)
	}
	stopped := written.Load()
	if m := d.Metrics(); m.Compact.L0ReadAmp != threshold {
		t.Fatalf("writes stopped after %d with L0 at %d, want L0StopWritesThreshold (%d):\n%s",
			stopped, m.Compact.L0ReadAmp, threshold, m)
	}

	close(pressed)
	gate.open()
	if err := waitFor(t, done, 60*time.Second, "waiting for the writer"); err != nil {
		t.Fatal(err)
	}
	t.Logf("writes stopped after %d with L0 at the threshold; %d writes in all, L0 read amplification at most %d, %d stalls",
		stopped, written.Load(), most.Load(), d.Metrics().WriteStalls)
	if most.Load() > threshold {
		t.Fatalf("L0 read amplification reached %d, above L0StopWritesThreshold %d", most.Load(), threshold)
	}
}

// TestCompaction_WriteStallFlushesSmallMemTables stops writes at L0
// read amplification 2, the compaction threshold, with the small
// memtables a store starts with (MemTableSize/16, then doubling): two of
// them waiting count as two L0 tables, though together they are too
// small to be due for a flush, and L0, empty, needs no compaction. The
// stall must flush them, or the writer waits for good.
func TestCompaction_WriteStallFlushesSmallMemTables(t *testing.T) {
	d, err := Open("db", &Options{FS: vfs.NewMem(), MemTableSize: 16 << 20,
		L0CompactionThreshold: 2, L0StopWritesThreshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	done := make(chan error, 1)
	go func() {
		value := make([]byte, 1000)
		for i := range 20000 {
			if err := d.Set(fmt.Appendf(nil, "k%08d", i), value, NoSync); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	if err := waitFor(t, done, 60*time.Second, "20 MB of writes"); err != nil {
		t.Fatal(err)
	}
	if m := d.Metrics(); m.WriteStalls == 0 || m.Flush.Count == 0 {
		t.Fatalf("%d stalls, %d flushes: the writes never met the stop threshold", m.WriteStalls, m.Flush.Count)
	}
}

// TestWritesUnslowed checks the flag that lets a write which fits in the
// memtable reserve without d.mu (makeRoomForWrite): it is set while
// nothing slows writes, cleared once L0's read amplification reaches
// L0SlowdownWritesThreshold, set again when a compaction brings it down,
// and cleared for good by a background error, which the next write then
// reports.
func TestWritesUnslowed(t *testing.T) {
	o := &Options{MemTableSize: 32 << 10, L0CompactionThreshold: 20, L0SlowdownWritesThreshold: 2,
		L0StopWritesThreshold: 20, DisableL0Settling: true}
	d, _ := openMem(t, o)
	defer d.Close()
	check := func(when string, want bool) {
		t.Helper()
		d.mu.Lock()
		amp := d.l0ReadAmpLocked()
		d.mu.Unlock()
		if got := d.writesUnslowed.Load(); got != want {
			t.Fatalf("%s: writesUnslowed %v, want %v (L0 read-amp %d)\n%s", when, got, want, amp, d.Metrics())
		}
	}
	check("after Open", true)
	for r := range 2 {
		for i := range 50 {
			if err := d.Set(fmt.Appendf(nil, "k%04d", i), fmt.Appendf(nil, "r%d", r), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("after flush %d", r+1), r == 0)
	}
	if m := d.Metrics(); m.Compact.L0ReadAmp != 2 || m.Compact.Count != 0 {
		t.Fatalf("want L0 read-amp 2 and no compaction:\n%s", m)
	}
	// A slowed write still lands; it reserves under d.mu.
	if err := d.Set([]byte("slowed"), []byte("v"), NoSync); err != nil {
		t.Fatal(err)
	}
	mustGet(t, d, "slowed", "v")
	if err := d.Compact([]byte("a"), []byte("z")); err != nil {
		t.Fatal(err)
	}
	check("after the compaction", true)

	d.mu.Lock()
	d.setBackgroundErrorLocked(errors.New("injected background failure"))
	d.mu.Unlock()
	check("after a background error", false)
	if err := d.Set([]byte("after"), []byte("v"), NoSync); err == nil || !strings.Contains(err.Error(), "injected background failure") {
		t.Fatalf("Set after a background error: %v", err)
	}
}
