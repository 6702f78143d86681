package kv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// Liveness of the waits around write stalls: a writer stalled on too many
// memtables or on L0, a Sync writer waiting for a group fsync, a writer
// waiting on BackgroundWALWrites' bound, and the calls that queue behind
// them (Flush, WaitIdle, Ingest, Checkpoint) must each return once what
// they wait for happens, fails, or the DB closes: never block for good.
// Each wait is bounded by waitFor, which fails the test with a dump of
// every goroutine.

// liveTimeout bounds every wait these tests make for a call to return.
const liveTimeout = 30 * time.Second

// opGate holds the file operations match picks, once armed, until the
// test opens it; failing set before the gate opens makes them fail with
// errorfs.ErrInjected.
type opGate struct {
	match   func(op, path string) bool
	armed   atomic.Bool
	failing atomic.Bool
	held    chan string // the path of the first operation held
	opened  chan struct{}
	once    sync.Once
}

func newOpGate(match func(op, path string) bool) *opGate {
	return &opGate{match: match, held: make(chan string, 1), opened: make(chan struct{})}
}

// pass holds op on path while the gate is shut and armed, and returns
// the injected error if failing was set before it opened.
func (g *opGate) pass(op, path string) error {
	if !g.armed.Load() || !g.match(op, path) {
		return nil
	}
	select {
	case g.held <- path:
	default:
	}
	<-g.opened
	if g.failing.Load() {
		return errorfs.ErrInjected
	}
	return nil
}

func (g *opGate) open() { g.once.Do(func() { close(g.opened) }) }

// gatedFS passes table and WAL creations, and its files' writes and
// syncs, through gate: "create", "write" and "sync" with the file's path.
type gatedFS struct {
	vfs.FS
	gate *opGate
}

type gatedFile struct {
	vfs.File
	path string
	gate *opGate
}

func (fs gatedFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return gatedFile{File: f, path: name, gate: fs.gate}, nil
}

func (fs gatedFS) Create(name string) (vfs.File, error) {
	if err := fs.gate.pass("create", name); err != nil {
		return nil, err
	}
	f, err := fs.FS.Create(name)
	return fs.wrap(name, f, err)
}

func (fs gatedFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, opts...)
	return fs.wrap(name, f, err)
}

func (f gatedFile) Write(p []byte) (int, error) {
	if err := f.gate.pass("write", f.path); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f gatedFile) Sync() error {
	if err := f.gate.pass("sync", f.path); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f gatedFile) SyncData() error {
	if err := f.gate.pass("sync", f.path); err != nil {
		return err
	}
	return f.File.SyncData()
}

// tableCreate matches the creation of a table: a flush's or a
// compaction's output.
func tableCreate(op, path string) bool { return op == "create" && strings.HasSuffix(path, ".sst") }

// memStall is a store whose writers stall on MemTableStopWritesThreshold
// with the flush held at its table's creation.
type memStall struct {
	d       *DB
	fs      vfs.FS // under the gate
	gate    *opGate
	done    chan error     // each writer's result
	acked   []atomic.Int64 // each writer's writes acknowledged
	stalled chan struct{}
}

// memStallValue is the value of each write of a memStall's writers.
var memStallValue = make([]byte, 100)

// memStallWrites is how many writes each writer makes: far more than
// the two memtables that the stall lets it fill.
const memStallWrites = 2000

func memStallKey(w, i int) []byte { return fmt.Appendf(nil, "w%02d-%05d", w, i) }

// newMemStall opens the store, shuts the gate on table creations, starts
// writers goroutines and waits until they stall (WriteStallBegin).
// Automatic compactions are off, so the stall is the memtables' alone.
func newMemStall(t *testing.T, writers int, o *Options) *memStall {
	t.Helper()
	s := &memStall{fs: vfs.NewMem(), gate: newOpGate(tableCreate), done: make(chan error, writers),
		acked: make([]atomic.Int64, writers), stalled: make(chan struct{}, 1)}
	if o == nil {
		o = &Options{}
	}
	o.FS = gatedFS{FS: s.fs, gate: s.gate}
	o.MemTableSize, o.MemTableStopWritesThreshold = 32<<10, 1
	o.DisableAutomaticCompactions = true
	o.EventListener = &EventListener{WriteStallBegin: func(WriteStallBeginInfo) {
		select {
		case s.stalled <- struct{}{}:
		default:
		}
	}}
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	s.d = d
	s.gate.armed.Store(true)
	for w := range writers {
		go func() {
			for i := range memStallWrites {
				if err := d.Set(memStallKey(w, i), memStallValue, NoSync); err != nil {
					s.done <- err
					return
				}
				s.acked[w].Add(1)
			}
			s.done <- nil
		}()
	}
	waitFor(t, s.stalled, liveTimeout, "waiting for the writers to stall")
	waitFor(t, s.gate.held, liveTimeout, "waiting for the flush to reach the gate")
	return s
}

// results waits for every writer's result.
func (s *memStall) results(t *testing.T, what string) []error {
	t.Helper()
	errs := make([]error, len(s.acked))
	for i := range errs {
		errs[i] = waitFor(t, s.done, liveTimeout, what)
	}
	return errs
}

// TestStall_MemTables_FlushFails stalls writers on
// MemTableStopWritesThreshold, then fails the flush they wait for: every
// writer returns the flush's error, and so do Close and later writes.
func TestStall_MemTables_FlushFails(t *testing.T) {
	s := newMemStall(t, 4, nil)
	s.gate.failing.Store(true)
	s.gate.open()
	for _, err := range s.results(t, "waiting for the stalled writers after the flush failed") {
		if !errors.Is(err, errorfs.ErrInjected) {
			t.Errorf("stalled writer after a failed flush: %v, want the flush's error", err)
		}
	}
	if err := s.d.Set([]byte("later"), nil, NoSync); !errors.Is(err, errorfs.ErrInjected) {
		t.Errorf("write after the failed flush: %v, want the flush's error", err)
	}
	if err := s.d.Close(); !errors.Is(err, errorfs.ErrInjected) {
		t.Errorf("Close after the failed flush: %v, want the flush's error", err)
	}
}

// TestStall_MemTables_ReleaseWakesAll stalls many writers (one waits in
// the stall, the others behind it for the commit pipeline), then lets the
// flush through: every writer completes every write.
func TestStall_MemTables_ReleaseWakesAll(t *testing.T) {
	const writers = 8
	s := newMemStall(t, writers, nil)
	defer mustClose(t, s.d)
	s.gate.open()
	for _, err := range s.results(t, "waiting for the stalled writers after the flush") {
		if err != nil {
			t.Fatalf("stalled writer: %v", err)
		}
	}
	for w := range writers {
		mustGet(t, s.d, string(memStallKey(w, memStallWrites-1)), string(memStallValue))
	}
	if m := s.d.Metrics(); m.WriteStalls == 0 || m.Flush.Count == 0 {
		t.Fatalf("no stall or no flush:\n%s", m)
	}
}

// TestStall_MemTables_Close closes the DB under many stalled writers:
// each returns ErrClosed, Close returns once the flush held is let
// through, and a reopen holds every write acknowledged.
func TestStall_MemTables_Close(t *testing.T) {
	const writers = 8
	s := newMemStall(t, writers, nil)
	closed := make(chan error, 1)
	go func() { closed <- s.d.Close() }()
	for _, err := range s.results(t, "waiting for the stalled writers after Close") {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("stalled writer after Close: %v, want ErrClosed", err)
		}
	}
	s.gate.open() // Close waits for the flush it cannot cancel
	if err := waitFor(t, closed, liveTimeout, "waiting for Close"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	d, err := Open("db", &Options{FS: s.fs, DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	for w := range writers {
		if n := int(s.acked[w].Load()); n > 0 {
			mustGet(t, d, string(memStallKey(w, n-1)), string(memStallValue))
		}
	}
}

// TestStall_CallsQueuedBehindStall calls Flush, WaitIdle, Ingest and
// Checkpoint while writers are stalled. WaitIdle returns when its
// context ends. The others wait for the stall (they need the commit
// pipeline the stalled writer holds); they return nil once it ends, or
// ErrClosed when the DB closes instead, and Close does not wait for them
// for good. (Whether a call is queued behind the stall when Close comes,
// or meets the close first, is the scheduler's choice; either way it must
// return ErrClosed.)
func TestStall_CallsQueuedBehindStall(t *testing.T) {
	for _, closeIt := range []bool{false, true} {
		t.Run(fmt.Sprintf("close=%v", closeIt), func(t *testing.T) {
			s := newMemStall(t, 2, nil)
			writeTestTable(t, s.fs, "ext/t.sst")

			ctx, cancel := context.WithCancel(context.Background())
			idle := make(chan error, 1)
			go func() { idle <- s.d.WaitIdle(ctx) }()
			cancel()
			if err := waitFor(t, idle, liveTimeout, "waiting for WaitIdle after its context ended"); !errors.Is(err, context.Canceled) {
				t.Errorf("WaitIdle while stalled, context canceled: %v, want context.Canceled", err)
			}

			calls := map[string]func() error{
				"Flush":      s.d.Flush,
				"Ingest":     func() error { return s.d.Ingest([]string{"ext/t.sst"}) },
				"Checkpoint": func() error { return s.d.Checkpoint("ckpt") },
			}
			results := make(chan string, len(calls))
			for name, call := range calls {
				go func() { results <- fmt.Sprintf("%s: %v", name, call()) }()
			}
			closed := make(chan error, 1)
			if closeIt {
				go func() { closed <- s.d.Close() }()
			}
			want := "<nil>"
			if closeIt {
				want = ErrClosed.Error()
			}
			// With the DB closing, the calls return before the held flush
			// ends; otherwise they wait for it.
			var got []string
			if closeIt {
				for range calls {
					got = append(got, waitFor(t, results, liveTimeout, "waiting for the calls after Close"))
				}
			}
			s.gate.open()
			for len(got) < len(calls) {
				got = append(got, waitFor(t, results, liveTimeout, "waiting for the calls after the stall"))
			}
			for _, r := range got {
				if _, err, _ := strings.Cut(r, ": "); err != want {
					t.Errorf("%s, want %s", r, want)
				}
			}
			for range s.acked {
				if err := waitFor(t, s.done, liveTimeout, "waiting for the writers"); err != nil && !(closeIt && errors.Is(err, ErrClosed)) {
					t.Errorf("writer: %v", err)
				}
			}
			if closeIt {
				if err := waitFor(t, closed, liveTimeout, "waiting for Close"); err != nil {
					t.Fatalf("Close: %v", err)
				}
				return
			}
			mustGet(t, s.d, "ing", "v")
			mustClose(t, s.d)
		})
	}
}

// writeTestTable writes a table holding ing = v for Ingest.
func writeTestTable(t *testing.T, fs vfs.FS, path string) {
	t.Helper()
	if err := fs.MkdirAll(fs.PathDir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{})
	if err := w.Add(sstable.MakeInternalKey([]byte("ing"), 0, sstable.KindSet), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStall_L0_CompactionFails stalls a writer on L0StopWritesThreshold
// with the L0 compaction held, then fails the compaction: the writer
// returns its error, and so does Close.
func TestStall_L0_CompactionFails(t *testing.T) {
	var failing atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if failing.Load() && op == errorfs.OpCreate && strings.HasSuffix(path, ".sst") {
			return errorfs.ErrInjected
		}
		return nil
	})
	d, gate, done, _ := stallFixture(t, errorfs.Wrap(vfs.NewMem(), inj))
	failing.Store(true)
	gate.open()
	if err := waitFor(t, done, liveTimeout, "waiting for the stalled writer after the compaction failed"); !errors.Is(err, errorfs.ErrInjected) {
		t.Errorf("stalled writer after a failed compaction: %v, want the compaction's error", err)
	}
	if err := d.Close(); !errors.Is(err, errorfs.ErrInjected) {
		t.Errorf("Close after the failed compaction: %v, want the compaction's error", err)
	}
}

// TestStall_SyncWritersWaitingForASync holds the WAL's fsync with Sync
// writers waiting for it, one syncing and the others for the next sync,
// then fails the sync, or closes the DB and lets it through: every writer
// returns, with the sync's error, or acknowledged (Close syncs its
// record, which a reopen then holds); with Close, a writer that had not
// reached the commit pipeline yet may be refused with ErrClosed instead,
// but the one holding the sync is acknowledged.
func TestStall_SyncWritersWaitingForASync(t *testing.T) {
	for _, fail := range []bool{true, false} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			mem := vfs.NewMem()
			gate := newOpGate(func(op, path string) bool { return op == "sync" && strings.HasSuffix(path, ".log") })
			d, err := Open("db", &Options{FS: gatedFS{FS: mem, gate: gate}})
			if err != nil {
				t.Fatal(err)
			}
			gate.armed.Store(true)
			const writers = 4
			type result struct {
				key string
				err error
			}
			done := make(chan result, writers)
			for w := range writers {
				go func() {
					key := fmt.Sprintf("s%d", w)
					done <- result{key, d.Set([]byte(key), []byte("v"), Sync)}
				}()
			}
			waitFor(t, gate.held, liveTimeout, "waiting for a Sync writer's fsync")
			closed := make(chan error, 1)
			if fail {
				gate.failing.Store(true)
			} else {
				go func() { closed <- d.Close() }()
			}
			gate.open()
			acked := map[string]bool{}
			for range writers {
				r := waitFor(t, done, liveTimeout, "waiting for the Sync writers")
				switch {
				case fail && !errors.Is(r.err, errorfs.ErrInjected):
					t.Errorf("Sync writer (sync failing): %v, want the sync's error", r.err)
				case !fail && r.err == nil:
					acked[r.key] = true
				case !fail && !errors.Is(r.err, ErrClosed):
					// A writer that had not reached the commit pipeline
					// when Close began is refused with ErrClosed.
					t.Errorf("Sync writer (Close during the sync): %v, want nil or ErrClosed", r.err)
				}
			}
			if fail {
				if err := d.Close(); !errors.Is(err, errorfs.ErrInjected) {
					t.Fatalf("Close after the failed sync: %v, want the sync's error", err)
				}
				return
			}
			if err := waitFor(t, closed, liveTimeout, "waiting for Close"); err != nil {
				t.Fatalf("Close: %v", err)
			}
			d, err = Open("db", &Options{FS: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer mustClose(t, d)
			if len(acked) == 0 {
				t.Fatal("no Sync writer acknowledged, though one held the sync Close let through")
			}
			for key := range acked {
				mustGet(t, d, key, "v")
			}
		})
	}
}

// TestStall_BackgroundWALBoundWritersFail holds the background WAL
// writer's file write until writers wait on the bound of what it may
// hold unwritten (BackgroundWALLossBound), then fails it: every writer
// returns the write's error, and so does Close.
func TestStall_BackgroundWALBoundWritersFail(t *testing.T) {
	gate := newOpGate(func(op, path string) bool { return op == "write" && strings.HasSuffix(path, ".log") })
	// The first memtable (a sixteenth of MemTableSize) holds every write:
	// one WAL, whose flusher the writers wait for.
	d, err := Open("db", &Options{FS: gatedFS{FS: vfs.NewMem(), gate: gate}, BackgroundWALWrites: true,
		MemTableSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	f := d.commit.log.flusher
	gate.armed.Store(true)
	const writers = 4
	done := make(chan error, writers)
	value := make([]byte, 1<<10)
	for w := range writers {
		go func() {
			for i := range 4 * BackgroundWALLossBound / len(value) / writers {
				if err := d.Set(fmt.Appendf(nil, "w%d-%05d", w, i), value, NoSync); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	waitFor(t, gate.held, liveTimeout, "waiting for the background WAL write")
	deadline := time.Now().Add(liveTimeout)
	for {
		f.mu.Lock()
		full := len(f.buf)+f.inFlight >= walBufferLimit || f.accepted-f.safe > walBufferLimit
		f.mu.Unlock()
		if full {
			break
		}
		if time.Now().After(deadline) {
			fatalWithGoroutines(t, "the writers never reached the background WAL's bound")
		}
		time.Sleep(time.Millisecond)
	}
	gate.failing.Store(true)
	gate.open()
	for range writers {
		if err := waitFor(t, done, liveTimeout, "waiting for the writers after the WAL write failed"); !errors.Is(err, errorfs.ErrInjected) {
			t.Errorf("writer waiting on the bound: %v, want the WAL write's error", err)
		}
	}
	if err := d.Close(); !errors.Is(err, errorfs.ErrInjected) {
		t.Errorf("Close after the failed WAL write: %v, want its error", err)
	}
}

// TestStall_NoL0StallWithoutAutomaticCompactions checks what
// Options.DisableAutomaticCompactions promises: with nothing to drain L0,
// writers never stall on it (as RocksDB's disable_auto_compactions; Pebble
// would stall them until a manual Compact), however far L0's read
// amplification passes L0StopWritesThreshold.
func TestStall_NoL0StallWithoutAutomaticCompactions(t *testing.T) {
	d, _ := openMem(t, &Options{MemTableSize: 32 << 10, L0CompactionThreshold: 2, L0StopWritesThreshold: 2,
		DisableAutomaticCompactions: true})
	defer mustClose(t, d)
	done := make(chan error, 1)
	go func() {
		for r := range 4 {
			for i := range 400 { // 400 × ~110 B: more than a memtable, so memtables switch
				if err := d.Set(fmt.Appendf(nil, "k%04d", i), fmt.Appendf(nil, "r%d-%0100d", r, 0), NoSync); err != nil {
					done <- err
					return
				}
			}
			if err := d.Flush(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	if err := waitFor(t, done, liveTimeout, "writing with L0 above L0StopWritesThreshold"); err != nil {
		t.Fatal(err)
	}
	if m := d.Metrics(); m.Compact.L0ReadAmp < 4 || m.WriteStalls != 0 || m.Compact.Count != 0 {
		t.Fatalf("want L0 read-amp 4 or more, reached without a stall or a compaction:\n%s", m)
	}
	mustGet(t, d, "k0399", fmt.Sprintf("r3-%0100d", 0))
}
