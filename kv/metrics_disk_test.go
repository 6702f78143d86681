package kv

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// diskFile is what diskFS saw happen to one file of the store, under the
// name it had when it was created (or linked, or recycled into).
type diskFile struct {
	name    string
	written int64 // bytes written through the handles opened under name
	created int   // Create, Link or rename onto name
	removed int
	linked  bool // by Link: its bytes were written under another name
}

// diskFS attributes every byte written to the file it was written to, by
// name, and records which files were created, linked, renamed and
// removed. A file renamed keeps its record under its new name.
type diskFS struct {
	vfs.FS
	mu    sync.Mutex
	files map[string]*diskFile
}

func newDiskFS(fs vfs.FS) *diskFS { return &diskFS{FS: fs, files: map[string]*diskFile{}} }

func (fs *diskFS) file(name string) *diskFile {
	f := fs.files[name]
	if f == nil {
		f = &diskFile{name: name}
		fs.files[name] = f
	}
	return f
}

// fresh starts a new record for name: a file created anew.
func (fs *diskFS) fresh(name string) *diskFile {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := &diskFile{name: name, created: 1}
	if old := fs.files[name]; old != nil && old.removed == 0 {
		f.created += old.created // truncated and rewritten
	}
	fs.files[name] = f
	return f
}

func (fs *diskFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &diskHandle{File: f, fs: fs, rec: fs.fresh(name)}, nil
}

func (fs *diskFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, opts...)
	if err != nil {
		return nil, err
	}
	fs.mu.Lock()
	rec := fs.file(name)
	fs.mu.Unlock()
	return &diskHandle{File: f, fs: fs, rec: rec}, nil
}

func (fs *diskFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	if err != nil {
		return nil, err
	}
	fs.renamed(oldname, newname)
	fs.mu.Lock()
	rec := fs.file(newname)
	fs.mu.Unlock()
	return &diskHandle{File: f, fs: fs, rec: rec}, nil
}

func (fs *diskFS) Rename(oldname, newname string) error {
	if err := fs.FS.Rename(oldname, newname); err != nil {
		return err
	}
	fs.renamed(oldname, newname)
	return nil
}

// renamed moves oldname's record to newname: a recycled WAL's bytes, from
// then on, are its new name's.
func (fs *diskFS) renamed(oldname, newname string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	// The old name's record stays, under a name of its own, with the
	// bytes written before the rename.
	if f := fs.files[oldname]; f != nil {
		delete(fs.files, oldname)
		dir, file := fs.PathDir(oldname), fs.PathBase(oldname)
		fs.files[fs.PathJoin(dir, fmt.Sprintf("renamed%d-%s", len(fs.files), file))] = f
	}
	fs.files[newname] = &diskFile{name: newname, created: 1}
}

func (fs *diskFS) Link(oldname, newname string) error {
	if err := fs.FS.Link(oldname, newname); err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.files[newname] = &diskFile{name: newname, created: 1, linked: true}
	return nil
}

func (fs *diskFS) Remove(name string) error {
	if err := fs.FS.Remove(name); err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.file(name).removed++
	return nil
}

// take returns the records of the files under dir whose names end in
// suffix, keyed by their names' last element.
func (fs *diskFS) take(dir, suffix string) map[string]diskFile {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := map[string]diskFile{}
	for name, f := range fs.files {
		if strings.HasPrefix(name, dir+"/") && strings.HasSuffix(name, suffix) {
			out[fs.PathBase(name)] = *f
		}
	}
	return out
}

// reset forgets every record, between two runs of a store (no file is
// open for writing then): a file seen afterwards without a record of its
// creation is an earlier run's.
func (fs *diskFS) reset() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.files = map[string]*diskFile{}
}

// diskHandle counts the bytes written through it into rec.
type diskHandle struct {
	vfs.File
	fs  *diskFS
	rec *diskFile
}

func (h *diskHandle) add(n int) {
	h.fs.mu.Lock()
	h.rec.written += int64(n)
	h.fs.mu.Unlock()
}

func (h *diskHandle) Write(p []byte) (int, error) {
	n, err := h.File.Write(p)
	h.add(n)
	return n, err
}

func (h *diskHandle) WriteAt(p []byte, off int64) (int, error) {
	n, err := h.File.WriteAt(p, off)
	h.add(n)
	return n, err
}

// eventLog keeps every event a listener heard, in order.
type eventLog struct {
	mu        sync.Mutex
	flushes   map[int][]FlushInfo      // by JobID: Begin, End
	compacts  map[int][]CompactionInfo // by JobID: Begin, End
	created   []TableCreateInfo
	deleted   []FileDeleteInfo
	ingested  []TableIngestInfo
	walNew    []WALCreateInfo
	walGone   []FileDeleteInfo
	bgErrs    []error
	stallsOn  int
	stallsOff int
}

func (e *eventLog) listener() *EventListener {
	e.reset()
	lock := func(f func()) { e.mu.Lock(); defer e.mu.Unlock(); f() }
	return &EventListener{
		BackgroundError: func(err error) { lock(func() { e.bgErrs = append(e.bgErrs, err) }) },
		FlushBegin:      func(i FlushInfo) { lock(func() { e.flushes[i.JobID] = append(e.flushes[i.JobID], i) }) },
		FlushEnd:        func(i FlushInfo) { lock(func() { e.flushes[i.JobID] = append(e.flushes[i.JobID], i) }) },
		CompactionBegin: func(i CompactionInfo) { lock(func() { e.compacts[i.JobID] = append(e.compacts[i.JobID], i) }) },
		CompactionEnd:   func(i CompactionInfo) { lock(func() { e.compacts[i.JobID] = append(e.compacts[i.JobID], i) }) },
		TableCreated:    func(i TableCreateInfo) { lock(func() { e.created = append(e.created, i) }) },
		TableDeleted:    func(i FileDeleteInfo) { lock(func() { e.deleted = append(e.deleted, i) }) },
		TableIngested:   func(i TableIngestInfo) { lock(func() { e.ingested = append(e.ingested, i) }) },
		WALCreated:      func(i WALCreateInfo) { lock(func() { e.walNew = append(e.walNew, i) }) },
		WALDeleted:      func(i FileDeleteInfo) { lock(func() { e.walGone = append(e.walGone, i) }) },
		WriteStallBegin: func(WriteStallBeginInfo) { lock(func() { e.stallsOn++ }) },
		WriteStallEnd:   func() { lock(func() { e.stallsOff++ }) },
	}
}

func (e *eventLog) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.flushes, e.compacts = map[int][]FlushInfo{}, map[int][]CompactionInfo{}
	e.created, e.deleted, e.ingested, e.walNew, e.walGone, e.bgErrs = nil, nil, nil, nil, nil, nil
	e.stallsOn, e.stallsOff = 0, 0
}

// diskLoad is the store and what watches it for TestMetrics_MatchDisk.
type diskLoad struct {
	t      *testing.T
	fs     *diskFS
	ev     eventLog
	opts   *Options
	d      *DB
	next   int          // the next key written
	failOn atomic.Int32 // see injector
}

// injector fails, once l.failOn is set to n, the nth sync of a table of
// the store from then on: the table and those before it are written
// whole, and the work that wrote them fails. (Tables are written in one
// write from the sstable.Writer's buffer: a failed sync is how a flush
// or compaction fails with bytes on the disk.)
func (l *diskLoad) injector() errorfs.Injector {
	var syncs atomic.Int32
	return errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		n := l.failOn.Load()
		if n == 0 || op != errorfs.OpFileSync || !strings.HasSuffix(path, ".sst") || !strings.HasPrefix(path, "db/") {
			return nil
		}
		if syncs.Add(1) == n {
			l.failOn.Store(0)
			syncs.Store(0)
			return errorfs.ErrInjected
		}
		return nil
	})
}

func (l *diskLoad) open(background bool) {
	l.t.Helper()
	l.opts.BackgroundWALWrites = background
	l.opts.EventListener = l.ev.listener()
	l.fs.reset()
	d, err := Open("db", l.opts)
	if err != nil {
		l.t.Fatal(err)
	}
	l.d = d
}

// write writes n keys, spread over the key space, and every 50th a
// range deletion of a few keys.
func (l *diskLoad) write(n int) {
	l.t.Helper()
	for range n {
		i := l.next
		l.next++
		k := fmt.Appendf(nil, "k%06d", (i*7919)%20000)
		must(l.t, l.d.Set(k, fmt.Appendf(nil, "%s-%d", strings.Repeat("v", 60), i), NoSync))
		if i%50 == 49 {
			must(l.t, l.d.DeleteRange(k, append(k, 'z'), NoSync))
		}
	}
}

// TestMetrics_MatchDisk runs a growing load through flushes, automatic
// compactions several levels deep, moves, a manual compaction, an ingest,
// range deletions, recycled WALs, a failed compaction and a failed flush
// and reopens, over a filesystem that attributes every byte written to
// its file; and checks that Metrics and the listener's events tell
// exactly what was written: each table's bytes once, at the level and
// by the kind of work that wrote it, each file created and deleted once.
func TestMetrics_MatchDisk(t *testing.T) {
	l := &diskLoad{t: t}
	l.fs = newDiskFS(nil)
	l.fs.FS = errorfs.Wrap(vfs.NewMem(), l.injector())
	l.opts = &Options{FS: l.fs, MemTableSize: 8 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10,
		LevelMultiplier: 4, BlockSize: 512, L0CompactionThreshold: 2}

	l.open(false)
	l.write(3000)
	must(t, l.d.Flush())
	waitIdle(t, l.d)
	must(t, l.d.Compact([]byte("k001000"), []byte("k004000")))
	l.ingest()
	l.write(500)
	must(t, l.d.Flush())
	waitIdle(t, l.d)
	// A manual compaction that fails once it has written a table and
	// another (or, if its first step writes one table, in the next).
	l.failOn.Store(2)
	if err := l.d.Compact(nil, nil); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Compact with a table write failing: %v", err)
	}
	l.closeAndCheck("first run", true)

	l.open(true)
	l.write(3000)
	must(t, l.d.Flush())
	waitIdle(t, l.d)
	// A flush that fails once its table is written: nothing else runs
	// (the store is idle, and 50 writes fill no memtable), so the next
	// table synced is the flush's.
	l.write(50)
	l.failOn.Store(1)
	if err := l.d.Flush(); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Flush with a table write failing: %v", err)
	}
	l.closeAndCheck("second run, background WAL writes", true)

	// Reopened with smaller memtables, the replay of the failed flush's
	// WAL fills several, which Open flushes.
	// One L0 table is enough to compact, so that a table flushed where
	// the store holds no keys moves down.
	l.opts.MemTableSize, l.opts.L0CompactionThreshold = MinMemTableSize, 1
	l.open(false)
	l.move()
	l.write(1000)
	must(t, l.d.Flush())
	waitIdle(t, l.d)
	l.closeAndCheck("third run, after replay", false)
}

// move flushes a table of a few keys where the store holds none, which
// L0's compaction moves down unchanged (L0CompactionThreshold 1), and
// waits for it.
func (l *diskLoad) move() {
	l.t.Helper()
	before := l.d.Metrics()
	for i := range 10 {
		must(l.t, l.d.Set(fmt.Appendf(nil, "n%03d", i), []byte("moved"), NoSync))
	}
	must(l.t, l.d.Flush())
	waitIdle(l.t, l.d)
	var moves int64
	for i, lm := range l.d.Metrics().Levels {
		moves += lm.Moves - before.Levels[i].Moves
	}
	if moves == 0 {
		l.t.Fatalf("no table moved:\n%s", l.d.Metrics())
	}
}

// ingest writes two tables outside the store and ingests them.
func (l *diskLoad) ingest() {
	l.t.Helper()
	var paths []string
	must(l.t, l.fs.MkdirAll("ext", 0755))
	for i, prefix := range []string{"a", "z"} {
		path := fmt.Sprintf("ext/%d.sst", i)
		f, err := l.fs.Create(path)
		must(l.t, err)
		w := sstable.NewWriter(f, sstable.WriterOptions{})
		for j := range 200 {
			must(l.t, w.Add(sstable.MakeInternalKey(fmt.Appendf(nil, "%s%05d", prefix, j), 0, sstable.KindSet), []byte("ingested")))
		}
		must(l.t, w.Close())
		paths = append(paths, path)
	}
	must(l.t, l.d.Ingest(paths))
}

// closeAndCheck closes the store, whose events are then all delivered,
// and checks its metrics against the files. failedWork says whether a
// flush or compaction of the run failed after writing tables.
func (l *diskLoad) closeAndCheck(what string, failedWork bool) {
	t := l.t
	t.Helper()
	waitIdleOrFailed(l.d)
	m := l.d.Metrics()
	_ = l.d.Close()
	t.Logf("%s:\n%s", what, m)
	tables, wals := l.fs.take("db", ".sst"), l.fs.take("db", ".log")
	ext := l.fs.take("ext", ".sst")
	c := &diskCheck{t: t, what: what, failedWork: failedWork, m: m, ev: &l.ev, tables: tables, wals: wals, ext: ext}
	c.tableBytes()
	c.levels()
	c.deleted()
	c.ingests()
	c.wal()
}

// waitIdleOrFailed waits for background work, unless it failed.
func waitIdleOrFailed(d *DB) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.mu.bgErr == nil && (d.mu.flushing || len(d.mu.compacting) > 0 || len(d.mu.imm) > 0) {
		d.mu.cond.Wait()
	}
	d.unlockedDo(d.cleaner.waitIdle)
}

type diskCheck struct {
	t          *testing.T
	what       string
	failedWork bool
	m          Metrics
	ev         *eventLog
	tables     map[string]diskFile // the store's .sst files
	wals       map[string]diskFile
	ext        map[string]diskFile
}

func (c *diskCheck) errorf(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf("%s: "+format, append([]any{c.what}, args...)...)
}

func tableName(num uint64) string { return base.MakeFilename(base.FileTypeTable, base.FileNum(num)) }

// tables checks that each table created was created once, told once
// (TableCreated), and that the bytes written to tables are the bytes the
// flushes and compactions that succeeded say they wrote, and the metrics
// count, plus those of the tables of failed work, deleted.
func (c *diskCheck) tableBytes() {
	c.t.Helper()
	told := map[string]TableCreateInfo{}
	for _, i := range c.ev.created {
		name := tableName(i.FileNum)
		if _, dup := told[name]; dup {
			c.errorf("TableCreated twice for %s", name)
		}
		told[name] = i
	}
	var written int64
	for name, f := range c.tables {
		if f.linked || f.created == 0 && f.written == 0 { // ingested, or from an earlier run
			continue
		}
		written += f.written
		if f.created != 1 {
			c.errorf("%s created %d times", name, f.created)
		}
		if _, ok := told[name]; !ok {
			c.errorf("%s (%d B written) created without TableCreated", name, f.written)
		}
	}
	for name := range told {
		if f, ok := c.tables[name]; !ok || f.linked || f.created == 0 {
			c.errorf("TableCreated for %s, which was not created", name)
		}
	}
	var levels, failed int64
	for _, l := range c.m.Levels {
		levels += l.BytesWritten
	}
	for _, i := range c.ev.created {
		switch ok, ended := c.jobEnded(i.JobID, i.FileNum); {
		case !ended:
			c.errorf("table %s created by job %d (%s), which no FlushEnd or CompactionEnd tells of",
				tableName(i.FileNum), i.JobID, i.Reason)
		case !ok:
			failed += c.tables[tableName(i.FileNum)].written
		}
	}
	if written == 0 || (failed > 0) != c.failedWork || written != levels+failed {
		c.errorf("tables written: %d B; levels' BytesWritten %d B + tables of failed work %d B = %d B",
			written, levels, failed, levels+failed)
	}
	if c.m.Flush.BytesWritten+c.m.Compact.BytesWritten != levels {
		c.errorf("Flush.BytesWritten %d + Compact.BytesWritten %d != levels' %d",
			c.m.Flush.BytesWritten, c.m.Compact.BytesWritten, levels)
	}
}

// jobEnded reports whether job, which created table num, ended (a
// FlushEnd or CompactionEnd), and whether it ended with num among its
// outputs.
func (c *diskCheck) jobEnded(job int, num uint64) (ok, ended bool) {
	var end []TableInfo
	if f := c.ev.flushes[job]; len(f) == 2 {
		ended, end = true, f[1].Output
		if f[1].Err != nil {
			end = nil
		}
	}
	if f := c.ev.compacts[job]; len(f) == 2 {
		ended, end = true, f[1].Output
		if f[1].Err != nil {
			end = nil
		}
	}
	for _, o := range end {
		if o.FileNum == num {
			return true, ended
		}
	}
	return false, ended
}

// levels checks each level's counters against the events of the flushes
// and compactions into it, and the events' sizes against the files.
func (c *diskCheck) levels() {
	c.t.Helper()
	var want [7]LevelMetrics
	var flushes, compactions int64
	for job, evs := range c.ev.flushes {
		if len(evs) != 2 || evs[0].Done || !evs[1].Done {
			c.errorf("flush job %d: events %+v, want one FlushBegin and one FlushEnd", job, evs)
			continue
		}
		end := evs[1]
		if end.Err != nil {
			continue
		}
		flushes++
		want[0].BytesIn += end.InputBytes
		want[0].BytesFlushed += c.checkSizes(fmt.Sprintf("flush job %d", job), end.Output)
	}
	for job, evs := range c.ev.compacts {
		if len(evs) != 2 || evs[0].Done || !evs[1].Done {
			c.errorf("compaction job %d: events %+v, want one CompactionBegin and one CompactionEnd", job, evs)
			continue
		}
		end := evs[1]
		if end.Err != nil {
			continue
		}
		w := &want[end.OutputLevel]
		if end.Reason == "move" {
			w.Moves++
			continue
		}
		compactions++
		w.Compactions++
		in := c.checkSizes(fmt.Sprintf("compaction job %d input", job), end.Input)
		if in != end.InputBytes {
			c.errorf("compaction job %d: InputBytes %d, its inputs' sizes sum to %d", job, end.InputBytes, in)
		}
		w.BytesRead += in
		out := c.checkSizes(fmt.Sprintf("compaction job %d", job), end.Output)
		if out != end.OutputBytes {
			c.errorf("compaction job %d: OutputBytes %d, its outputs' sizes sum to %d", job, end.OutputBytes, out)
		}
		w.BytesCompacted += out
	}
	for i := range want {
		got, w := c.m.Levels[i], want[i]
		if got.BytesFlushed != w.BytesFlushed || got.BytesCompacted != w.BytesCompacted ||
			got.BytesWritten != w.BytesFlushed+w.BytesCompacted || got.BytesRead != w.BytesRead ||
			got.Compactions != w.Compactions || got.Moves != w.Moves || i == 0 && got.BytesIn != w.BytesIn {
			c.errorf("L%d: metrics flushed %d, compacted %d, written %d, read %d, in %d, %d compactions, %d moves; "+
				"events say flushed %d, compacted %d, read %d, in %d, %d compactions, %d moves",
				i, got.BytesFlushed, got.BytesCompacted, got.BytesWritten, got.BytesRead, got.BytesIn, got.Compactions, got.Moves,
				w.BytesFlushed, w.BytesCompacted, w.BytesRead, w.BytesIn, w.Compactions, w.Moves)
		}
	}
	if c.m.Flush.Count != flushes || c.m.Compact.Count != compactions {
		c.errorf("Flush.Count %d, Compact.Count %d; events: %d flushes, %d compactions",
			c.m.Flush.Count, c.m.Compact.Count, flushes, compactions)
	}
}

// checkSizes checks each of tables as checkSize does and returns the sum
// of their sizes.
func (c *diskCheck) checkSizes(what string, tables []TableInfo) int64 {
	c.t.Helper()
	var sum int64
	for _, t := range tables {
		c.checkSize(what, t)
		sum += int64(t.Size)
	}
	return sum
}

// checkSize checks that table t's size is the bytes written to its file,
// where this run wrote it.
func (c *diskCheck) checkSize(what string, t TableInfo) {
	c.t.Helper()
	f, ok := c.tables[tableName(t.FileNum)]
	if !ok || f.linked || f.created == 0 {
		return // written before this run, or ingested
	}
	if int64(t.Size) != f.written {
		c.errorf("%s: table %s of %d B, %d B written to it", what, tableName(t.FileNum), t.Size, f.written)
	}
}

// deleted checks TablesDeleted against the tables removed and the events.
func (c *diskCheck) deleted() {
	c.t.Helper()
	told := map[string]bool{}
	for _, i := range c.ev.deleted {
		name := c.base(i.Path)
		if i.Err != nil {
			c.errorf("deleting %s failed: %v", name, i.Err)
		}
		if told[name] {
			c.errorf("TableDeleted twice for %s", name)
		}
		told[name] = true
	}
	var removed int64
	for name, f := range c.tables {
		removed += int64(f.removed)
		if f.removed > 1 || f.removed == 1 != told[name] {
			c.errorf("%s removed %d times, TableDeleted told: %v", name, f.removed, told[name])
		}
	}
	if removed == 0 || c.m.TablesDeleted != removed || int64(len(c.ev.deleted)) != removed {
		c.errorf("TablesDeleted %d, %d TableDeleted events, %d tables removed", c.m.TablesDeleted, len(c.ev.deleted), removed)
	}
}

func (c *diskCheck) base(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// ingests checks Metrics.Ingest against the tables linked in and the
// TableIngested events.
func (c *diskCheck) ingests() {
	c.t.Helper()
	var tables, bytes, calls int64
	for _, i := range c.ev.ingested {
		if i.Err != nil {
			continue
		}
		calls++
		for _, tab := range i.Tables {
			tables++
			bytes += int64(tab.Size)
			if f := c.tables[tableName(tab.FileNum)]; !f.linked {
				c.errorf("ingested table %d: not linked into the store: %+v", tab.FileNum, f)
			}
		}
	}
	var extBytes int64
	for _, f := range c.ext {
		extBytes += f.written
	}
	if c.m.Ingest.Count != calls || c.m.Ingest.Tables != tables || c.m.Ingest.Bytes != bytes || bytes != extBytes {
		c.errorf("Ingest %+v; events: %d ingests of %d tables, %d B; %d B written outside the store",
			c.m.Ingest, calls, tables, bytes, extBytes)
	}
}

// wal checks the WAL counters and events against the WAL files.
func (c *diskCheck) wal() {
	c.t.Helper()
	var written int64
	names := make([]string, 0, len(c.wals))
	for name, f := range c.wals {
		written += f.written
		names = append(names, name)
	}
	sort.Strings(names)
	created := map[string]bool{}
	for _, f := range c.wals {
		if f.created > 0 {
			created[c.base(f.name)] = true
		}
	}
	var recycled int64
	for _, i := range c.ev.walNew {
		if i.Recycled {
			recycled++
		}
		if !created[c.base(i.Path)] {
			c.errorf("WALCreated for %s, no such file", i.Path)
		}
	}
	if recycled == 0 || c.m.WAL.Recycled != recycled {
		c.errorf("WAL.Recycled %d, %d WALCreated events say recycled", c.m.WAL.Recycled, recycled)
	}
	var removed int
	for _, f := range c.wals {
		removed += f.removed
	}
	if removed != len(c.ev.walGone) {
		c.errorf("%d WALs removed, %d WALDeleted events", removed, len(c.ev.walGone))
	}
	c.t.Logf("%s: WAL bytes in %d, written to WAL files %d (%v)", c.what, c.m.WAL.BytesIn, written, names)
	// WAL.BytesIn counts the batches; the files hold them with their
	// framing (and zeros written ahead of syncs), so more.
	if c.m.WAL.BytesIn == 0 || written < c.m.WAL.BytesIn {
		c.errorf("WAL.BytesIn %d, %d B written to the WALs", c.m.WAL.BytesIn, written)
	}
}
