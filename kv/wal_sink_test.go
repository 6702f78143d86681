package kv_test

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

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// walFilesFS wraps the WAL files its FS creates or reopens for writing
// (a recycled WAL, the last one at Open) with wrap.
type walFilesFS struct {
	vfs.FS
	wrap func(vfs.File) vfs.File
}

func (fs walFilesFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrapWAL(name, f, err)
}

func (fs walFilesFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, opts...)
	return fs.wrapWAL(name, f, err)
}

// wrapWAL wraps f, opened as name, if it is a WAL.
func (fs walFilesFS) wrapWAL(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return fs.wrap(f), nil
}

// slowSyncFS makes each SyncData of fs's WAL files take delay, as a
// disk's would: long against the time a writer takes to come back for
// its next write.
func slowSyncFS(fs vfs.FS, delay time.Duration) vfs.FS {
	return walFilesFS{FS: fs, wrap: func(f vfs.File) vfs.File { return slowSyncFile{File: f, delay: delay} }}
}

type slowSyncFile struct {
	vfs.File
	delay time.Duration
}

func (f slowSyncFile) SyncData() error {
	time.Sleep(f.delay)
	return f.File.SyncData()
}

// TestWALSink_SyncWritersShareEachSync checks that concurrent Sync
// writers which take a while to come back for their next write (here a
// millisecond, against syncs of 40) still share each sync all together:
// the sync waits for the writers the last one released (see
// walSink.gatherLocked). Without that, the writers that arrive while a
// sync runs are synced at once when it ends, without those it released,
// and the two groups take turns: about half the writers per sync.
func TestWALSink_SyncWritersShareEachSync(t *testing.T) {
	// A writer that the scheduler keeps from coming back within half a
	// sync (a loaded machine, the race detector) is not waited for, and
	// takes a write of its own: up to three stores are tried, and one
	// must share its syncs as the bounds below say. Without the gather
	// every try takes about twice the syncs.
	const tries = 3
	var failures []string
	for range tries {
		msg := shareSyncs(t)
		if msg == "" {
			return
		}
		failures = append(failures, msg)
	}
	t.Fatalf("in each of %d stores: %s", tries, strings.Join(failures, "; "))
}

// shareSyncs runs TestWALSink_SyncWritersShareEachSync's writers on a new
// store, and says how they broke its bounds, "" if they did not.
func shareSyncs(t *testing.T) string {
	const (
		writers = 4
		rounds  = 8
		think   = time.Millisecond
	)
	db, err := kv.Open("db", &kv.Options{FS: slowSyncFS(vfs.NewMem(), 40*time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m0 := db.Metrics().WAL
	syncWriters(t, db, writers, rounds, think)
	m := db.Metrics().WAL
	syncs, writes := m.Syncs-m0.Syncs, m.Writes-m0.Writes
	t.Logf("%d Sync writes by %d writers, %d syncs, %d writes", writers*rounds, writers, syncs, writes)
	// All together, each round takes one sync; the first two may not (no
	// sync's duration is known before the first ends).
	if syncs > rounds+2 {
		return fmt.Sprintf("%d Sync writes by %d writers took %d syncs (%.1f writes each); want at most %d",
			writers*rounds, writers, syncs, float64(writers*rounds)/float64(syncs), rounds+2)
	}
	// And two WAL writes: the first writer back writes its record, which
	// must be in the file before its batch is published; the records of
	// the others, which come back while its sync gathers them, wait for
	// the syncing writer to write them all at once. The first two rounds
	// may take a write per writer.
	if want := 2*(rounds-2) + 2*writers; writes > int64(want) {
		return fmt.Sprintf("%d Sync writes by %d writers took %d WAL writes; want at most %d",
			writers*rounds, writers, writes, want)
	}
	return ""
}

// walGate holds the writes, or the syncs, of the WAL files of the FS
// it is on, once armed, until the gate opens.
type walGate struct {
	syncs  bool // hold SyncData, not Write
	armed  atomic.Bool
	held   chan struct{} // receives once a write or sync is held
	opened chan struct{} // closed to let them through
}

// newWALGate returns a gate holding syncs if syncs is set, writes
// otherwise.
func newWALGate(syncs bool) *walGate {
	return &walGate{syncs: syncs, held: make(chan struct{}, 1), opened: make(chan struct{})}
}

// on returns fs with g on its WAL files.
func (g *walGate) on(fs vfs.FS) vfs.FS {
	return walFilesFS{FS: fs, wrap: func(f vfs.File) vfs.File { return walGateFile{File: f, g: g} }}
}

// hold waits, when armed, until the gate opens.
func (g *walGate) hold() {
	if g.armed.Load() {
		select {
		case g.held <- struct{}{}:
		default:
		}
		<-g.opened
	}
}

type walGateFile struct {
	vfs.File
	g *walGate
}

func (f walGateFile) Write(p []byte) (int, error) {
	if !f.g.syncs {
		f.g.hold()
	}
	return f.File.Write(p)
}

func (f walGateFile) SyncData() error {
	if f.g.syncs {
		f.g.hold()
	}
	return f.File.SyncData()
}

// TestDB_SyncWritePublishedBeforeItsSync holds a Sync write's fsync and
// checks that the write is visible meanwhile and has not returned, that a
// NoSync write after it completes without waiting for that fsync, and
// that both are there once the fsync is done and after a reopen (see
// commitPipeline.run).
func TestDB_SyncWritePublishedBeforeItsSync(t *testing.T) {
	mem := vfs.NewMem()
	g := newWALGate(true)
	db, err := kv.Open("db", &kv.Options{FS: g.on(mem)})
	must(t, err)
	g.armed.Store(true)
	synced := make(chan error, 1)
	go func() { synced <- db.Set([]byte("s"), []byte("1"), kv.Sync) }()
	<-g.held // the Sync write's fsync runs
	wrote := make(chan error, 1)
	go func() { wrote <- db.Set([]byte("n"), []byte("2"), kv.NoSync) }()
	select {
	case err := <-wrote:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a NoSync write waited for the fsync of the Sync write before it")
	}
	checkContents(t, db, map[string]string{"s": "1", "n": "2"}, "while the Sync write's fsync is held")
	select {
	case err := <-synced:
		t.Fatalf("the Sync write returned (%v) before its fsync", err)
	default:
	}
	g.armed.Store(false)
	close(g.opened)
	must(t, <-synced)
	checkReopened(t, db, mem, map[string]string{"s": "1", "n": "2"})
}

// TestWALSink_SyncWritersAcrossRotations runs Sync writers that pause
// between writes over syncs that take time, with memtables small enough
// that the WAL switches every few writes, so that switches close WALs
// while syncs gather the writers (see walSink.gatherLocked) and Sync
// writers wait in syncTo. Every write must be there, after a reopen too.
func TestWALSink_SyncWritersAcrossRotations(t *testing.T) {
	const (
		writers = 4
		rounds  = 24
	)
	mem := vfs.NewMem()
	opts := &kv.Options{FS: slowSyncFS(mem, 2*time.Millisecond), MemTableSize: 64 << 10}
	db, err := kv.Open("db", opts)
	must(t, err)
	value := make([]byte, 8<<10)
	want := map[string]string{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				k := fmt.Sprintf("w%d-%02d", w, i)
				if err := db.Set([]byte(k), value, kv.Sync); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[k] = string(value)
				mu.Unlock()
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	m := db.Metrics()
	if m.Flush.Count == 0 {
		t.Fatalf("no memtable was flushed: the WAL never switched (%s)", m)
	}
	t.Logf("%d Sync writes, %d syncs, %d flushes", writers*rounds, m.WAL.Syncs, m.Flush.Count)
	checkContents(t, db, want, "after the writes")
	checkReopened(t, db, mem, want)
}

// failingWritesFile fails every Write of a WAL file once fail is set,
// and makes each SyncData take delay.
type failingWritesFile struct {
	vfs.File
	fail  *atomic.Bool
	delay time.Duration
}

var errInjectedWrite = errors.New("injected WAL write failure")

func (f failingWritesFile) Write(p []byte) (int, error) {
	if f.fail.Load() {
		return 0, errInjectedWrite
	}
	return f.File.Write(p)
}

func (f failingWritesFile) SyncData() error {
	time.Sleep(f.delay)
	return f.File.SyncData()
}

// TestWALSink_GatheredWritersHearAFailedWrite runs Sync writers that
// come back while each sync gathers them, so that they leave their
// records to the syncing writer (see walSink.wait), and then fails the
// WAL's writes: every writer must return the failure, none may wait
// forever for a write that will not come, and the store must refuse
// writes from then on.
func TestWALSink_GatheredWritersHearAFailedWrite(t *testing.T) {
	const writers = 4
	var fail atomic.Bool
	fs := walFilesFS{FS: vfs.NewMem(), wrap: func(f vfs.File) vfs.File {
		return failingWritesFile{File: f, fail: &fail, delay: 20 * time.Millisecond}
	}}
	db, err := kv.Open("db", &kv.Options{FS: fs})
	must(t, err)
	defer db.Close()
	var acked atomic.Int64
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := 0; ; i++ {
				if err := db.Set(fmt.Appendf(nil, "w%d-%d", w, i), []byte("v"), kv.Sync); err != nil {
					errs <- err
					return
				}
				acked.Add(1)
				time.Sleep(time.Millisecond)
			}
		}()
	}
	for db.Metrics().WAL.Syncs < 6 {
		time.Sleep(time.Millisecond)
	}
	fail.Store(true)
	for range writers {
		select {
		case err := <-errs:
			if !errors.Is(err, errInjectedWrite) {
				t.Fatalf("a writer returned %v, want the injected write failure", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a Sync writer did not return after the WAL's writes failed")
		}
	}
	if err := db.Set([]byte("after"), []byte("v"), kv.NoSync); err == nil {
		t.Fatal("a write after the WAL failed was accepted")
	}
	m := db.Metrics().WAL
	if m.Writes >= acked.Load() {
		t.Fatalf("%d Sync writes took %d WAL writes: the gathered writers wrote their records one by one", acked.Load(), m.Writes)
	}
	t.Logf("%d Sync writes acknowledged, %d syncs, %d WAL writes before the failure", acked.Load(), m.Syncs, m.Writes)
}

// TestWALSink_FastSyncsGatherRunnableWriters checks that Sync writers
// share each sync when syncs take next to no time (an in-memory file
// system here; tmpfs, or an SSD that acknowledges a flush from its
// cache) and the writers come back one after another, as they do on a
// single processor: the sync's bound on waiting for them, half a sync,
// ends before the first is back, and each sync would serve one or two.
// The syncing writer yields for as long as the writers its yields run
// come in (see walSink.gatherLocked).
func TestWALSink_FastSyncsGatherRunnableWriters(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const (
		writers = 8
		rounds  = 200
	)
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m0 := db.Metrics().WAL
	syncWriters(t, db, writers, rounds, 0)
	m := db.Metrics().WAL
	syncs := m.Syncs - m0.Syncs
	perSync := float64(writers*rounds) / float64(syncs)
	t.Logf("%d Sync writes by %d writers, %d syncs: %.1f writes per sync", writers*rounds, writers, syncs, perSync)
	if perSync < writers/2 {
		t.Fatalf("%d Sync writes by %d writers took %d syncs, %.1f writes each; want at least %d each",
			writers*rounds, writers, syncs, perSync, writers/2)
	}
}

// TestWALSink_SettleEndsUnderAStreamOfWriters checks that new Sync
// writers arriving without end, one goroutine each as a server may start
// per request, do not hold syncs off: the syncing writer's yields run
// new ones, yet writes must keep completing, in each quarter of the
// stream. (Settling stops at its bound, TestSettleArrivals; the
// scheduler, which now and then runs the syncing writer again before
// the next newcomer, usually ends it sooner.)
func TestWALSink_SettleEndsUnderAStreamOfWriters(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const periods, period = 4, 50 * time.Millisecond
	syncWriters(t, db, 2, 50, 0) // warm up: the first syncs learn a sync's duration
	var wg sync.WaitGroup
	var done atomic.Int64
	var perPeriod []int64
	started := 0
	for range periods {
		before := done.Load()
		for end := time.Now().Add(period); time.Now().Before(end); started++ {
			wg.Add(1)
			key := fmt.Appendf(nil, "s%d", started)
			go func() {
				defer wg.Done()
				if err := db.Set(key, []byte("v"), kv.Sync); err != nil {
					t.Error(err)
				}
				done.Add(1)
			}()
			runtime.Gosched()
		}
		perPeriod = append(perPeriod, done.Load()-before)
	}
	wg.Wait()
	t.Logf("%d writers started, completions per %v: %v", started, period, perPeriod)
	if slices.Contains(perPeriod, 0) {
		t.Fatalf("Sync writes completed per %v of a stream of new writers: %v; want some in each", period, perPeriod)
	}
}

// syncWriters runs writers goroutines at once on db, each writing rounds
// keys of its own with Sync, think apart, and waits for them.
func syncWriters(t *testing.T, db *kv.DB, writers, rounds int, think time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				if err := db.Set(fmt.Appendf(nil, "w%d-%d", w, i), []byte("v"), kv.Sync); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(think)
			}
		}()
	}
	wg.Wait()
}
