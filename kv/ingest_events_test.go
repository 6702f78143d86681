package kv_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// ingestEvents records the TableIngested events of a store, and the lines
// the logging listener writes for them.
type ingestEvents struct {
	mu    sync.Mutex
	infos []kv.TableIngestInfo
	lines []string
}

func (e *ingestEvents) listener() *kv.EventListener {
	l := kv.MakeLoggingEventListener(kv.LoggerFunc(func(format string, args ...any) {
		if line := fmt.Sprintf(format, args...); strings.Contains(line, "ingest") {
			e.mu.Lock()
			e.lines = append(e.lines, line)
			e.mu.Unlock()
		}
	}))
	logIngest := l.TableIngested
	l.TableIngested = func(i kv.TableIngestInfo) {
		e.mu.Lock()
		e.infos = append(e.infos, i)
		e.mu.Unlock()
		logIngest(i)
	}
	return &l
}

// TestDB_Ingest_Event checks that an ingest reports TableIngested with
// each table under its file number in the store and the level Metrics
// shows it at, the sequence number its keys carry, and a log line naming
// them; that an ingest refused for a bad table reports nothing; and that
// one whose MANIFEST write fails reports the error.
func TestDB_Ingest_Event(t *testing.T) {
	mem := vfs.NewMem()
	var failManifest atomic.Bool
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if failManifest.Load() && op == errorfs.OpFileWrite && strings.Contains(path, "MANIFEST") {
			return errorfs.ErrInjected
		}
		return nil
	}))
	var ev ingestEvents
	db, err := kv.Open("db", &kv.Options{FS: fs, DisableAutomaticCompactions: true, EventListener: ev.listener()})
	must(t, err)
	for k, v := range keyRange("a", 0, 50, "db") {
		must(t, db.Set([]byte(k), []byte(v), kv.NoSync))
	}
	must(t, db.Flush())
	writeExternal(t, mem, "ext/a.sst", keyRange("a", 10, 20, "x"), sstable.WriterOptions{})
	writeExternal(t, mem, "ext/b.sst", keyRange("b", 0, 10, "x"), sstable.WriterOptions{})
	writeExternal(t, mem, "ext/b2.sst", keyRange("b", 5, 15, "x"), sstable.WriterOptions{})
	must(t, db.Ingest([]string{"ext/a.sst", "ext/b.sst"}))
	m := db.Metrics()
	if err := db.Ingest([]string{"ext/b.sst", "ext/b2.sst"}); !errors.Is(err, kv.ErrIngestOverlap) {
		t.Fatalf("Ingest of overlapping tables: %v, want ErrIngestOverlap", err)
	}
	failManifest.Store(true)
	if err := db.Ingest([]string{"ext/b2.sst"}); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Ingest with the MANIFEST failing: %v, want the injected error", err)
	}
	if err := db.Close(); !errors.Is(err, errorfs.ErrInjected) { // delivers the events
		t.Fatalf("Close after a failed MANIFEST write: %v", err)
	}

	t.Logf("events: %+v\nlines: %q", ev.infos, ev.lines)
	if len(ev.infos) != 2 || len(ev.lines) != 2 {
		t.Fatalf("%d TableIngested events, %d log lines; want 2 of each", len(ev.infos), len(ev.lines))
	}
	ok := ev.infos[0]
	if ok.Err != nil || len(ok.Tables) != 2 || ok.GlobalSeqNum == 0 {
		t.Fatalf("first ingest's event: %+v", ok)
	}
	want, sep := fmt.Sprintf("[JOB %d] ingested", ok.JobID), ""
	for i, tab := range ok.Tables {
		if m.Levels[tab.Level].NumFiles == 0 || tab.SmallestSeqNum != ok.GlobalSeqNum || tab.Size == 0 {
			t.Fatalf("table %d of the event: %+v; levels hold %v", i, tab, levelFiles(m))
		}
		if _, err := mem.Stat(fmt.Sprintf("db/%06d.sst", tab.FileNum)); err != nil {
			t.Fatalf("table %d of the event is not in the store: %v", i, err)
		}
		want += fmt.Sprintf("%s L%d:%06d (%d B)", sep, tab.Level, tab.FileNum, tab.Size)
		sep = ","
	}
	if ok.Tables[0].Level != 0 || ok.Tables[1].Level != 6 || string(ok.Tables[1].Smallest) != "b0000" {
		t.Fatalf("tables placed at L%d and L%d (%q); want the a table in L0, over the flushed one, the b table in L6",
			ok.Tables[0].Level, ok.Tables[1].Level, ok.Tables[1].Smallest)
	}
	if ev.lines[0] != want {
		t.Fatalf("logged %q, want %q", ev.lines[0], want)
	}
	if failed := ev.infos[1]; !errors.Is(failed.Err, errorfs.ErrInjected) || !strings.Contains(ev.lines[1], "ingest failed") {
		t.Fatalf("failed ingest's event %+v, line %q", failed, ev.lines[1])
	}
}

// TestDB_Ingest_WriteInFlight ingests a table while a Sync write has
// reserved its sequence number but waits for its record to be written to
// the WAL, so that its batch is not in the memtable yet. The ingest must wait for it: were the
// write published after the ingest, the visible sequence number would
// move back below the ingest's, and the ingested keys would vanish from
// reads until the next write (and the write, numbered below the ingest's
// sequence number in the MANIFEST, would be skipped by recovery).
func TestDB_Ingest_WriteInFlight(t *testing.T) {
	mem := vfs.NewMem()
	g := newWALGate(false)
	db, err := kv.Open("db", &kv.Options{FS: g.on(mem)})
	must(t, err)
	writeExternal(t, mem, "ext/i.sst", keyRange("i", 0, 10, "x"), sstable.WriterOptions{})
	g.armed.Store(true)
	wrote := make(chan error, 1)
	go func() { wrote <- db.Set([]byte("w"), []byte("1"), kv.Sync) }()
	<-g.held // the write waits for its record's write, unpublished
	ingested := make(chan error, 1)
	go func() { ingested <- db.Ingest([]string{"ext/i.sst"}) }()
	select {
	case err := <-ingested:
		t.Logf("Ingest returned (%v) while the write waited for its record's write", err)
		ingested <- err
	case <-time.After(100 * time.Millisecond): // it waits for the write
	}
	g.armed.Store(false)
	close(g.opened)
	must(t, <-wrote)
	must(t, <-ingested)
	want := keyRange("i", 0, 10, "x")
	want["w"] = "1"
	checkContents(t, db, want, "after the write and the ingest")
	checkReopened(t, db, mem, want)
}

// linkGateFS stalls the first link into the store's directory once armed:
// it signals stalled and waits for resume.
type linkGateFS struct {
	vfs.FS
	armed           atomic.Bool
	stalled, resume chan struct{}
}

func (fs *linkGateFS) Link(oldname, newname string) error {
	if fs.armed.CompareAndSwap(true, false) {
		close(fs.stalled)
		<-fs.resume
	}
	return fs.FS.Link(oldname, newname)
}

// TestDB_Ingest_CloseWaits closes the store while an Ingest is linking
// its table: Close returns only once the Ingest has, so the listener
// hears of the ingestion (refused: the store closed) before Close
// returns, and no file the Ingest linked is left in the store.
func TestDB_Ingest_CloseWaits(t *testing.T) {
	fs := &linkGateFS{FS: vfs.NewMem(), stalled: make(chan struct{}), resume: make(chan struct{})}
	ev := &ingestEvents{}
	d, err := kv.Open("db", &kv.Options{FS: fs, EventListener: ev.listener()})
	if err != nil {
		t.Fatal(err)
	}
	writeTable(t, fs, "ext.sst", "a", "b")
	fs.armed.Store(true)
	ingested := make(chan error, 1)
	go func() { ingested <- d.Ingest([]string{"ext.sst"}) }()
	<-fs.stalled
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	for d.Set([]byte("x"), nil, kv.NoSync) == nil {
		time.Sleep(time.Millisecond) // until Close has begun
	}
	time.Sleep(50 * time.Millisecond) // time for a Close that does not wait to return
	close(fs.resume)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ingested:
		if !errors.Is(err, kv.ErrClosed) {
			t.Fatalf("Ingest overlapping Close: %v, want ErrClosed", err)
		}
	default:
		t.Fatal("Close returned before the Ingest it overlapped")
	}
	ev.mu.Lock()
	n := len(ev.infos)
	ev.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d ingestion events when Close returned, want 1", n)
	}
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, ".sst") {
			t.Fatalf("the Ingest left %s in the store", name)
		}
	}
}
