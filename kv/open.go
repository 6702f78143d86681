package kv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// DB is an open store. It is safe for concurrent use by many goroutines.
// After Close, every method returns ErrClosed.
type DB struct {
	dirname string
	opts    *Options
	fs      vfs.FS
	cmp     *base.Comparer
	filters map[string]bloompolicy.FilterPolicy

	fileLock io.Closer
	dataDir  vfs.File

	blockCache *sstable.Cache
	tableCache *tableCache
	filterMem  *filterHolder // the filters held in memory, under Options.FilterBudget's cap
	picker     *compaction.Picker
	// compactOpts is the level shape and table size, derived from opts
	// once at Open: the picker and the filter budget size levels by it.
	compactOpts *compaction.Options

	// closed is set first thing in Close; background work polls it to stop
	// early.
	closed atomic.Bool
	// writesUnslowed is set while nothing slows or stops a write that
	// fits in the memtable: no background work failed, and L0 is below
	// L0SlowdownWritesThreshold. makeRoomForWrite then takes no d.mu
	// (see updateWritesUnslowedLocked).
	writesUnslowed atomic.Bool
	// spareMem is a flushed memtable that nothing holds any more, kept
	// for the next memtable switch to reuse (see releaseMem).
	spareMem atomic.Pointer[memTable]

	// Every reservation reads the flags above, and every publication
	// changes visibleSeq, every iterator openIters: each of the two is on
	// a cache line of its own, so that on many cores a reservation does
	// not wait for the line that the last publication or iterator
	// changed, nor a read for the one the last iterator changed.
	_ cacheLinePad
	// visibleSeq is the highest sequence number readers may see: every
	// write numbered at or below it is in a memtable or a table.
	visibleSeq atomic.Uint64
	_          cacheLinePad
	// openIters counts the iterators not yet closed, for Close to report
	// the ones left open.
	openIters atomic.Int64

	commit    commitPipeline
	readState readStateHolder
	cleaner   cleaner
	metrics   dbMetrics
	events    events
	bgWG      sync.WaitGroup

	// manualMu serializes calls to Compact.
	manualMu sync.Mutex
	// fileCalls is held for reading by the calls that work on the store's
	// files in the caller's goroutine, outside the commit pipeline and
	// d.mu, for their whole run (Ingest, Checkpoint), and for writing by
	// Close once closed is set: Close returns only after each has
	// returned, so none links or removes a file of the store, copies one,
	// or calls the listener after Close released the directory.
	fileCalls sync.RWMutex

	mu struct {
		sync.Mutex
		// cond is broadcast whenever background work finishes a step, a
		// stall may end, or the DB closes.
		cond sync.Cond
		// mem takes writes; imm wait for a flush, oldest first. mem
		// changes only under the commit pipeline's mu too, so either
		// lock may read it.
		mem *memTable
		imm []*memTable
		// nextMemSize is the size limit of the next memtable (see
		// takeMemSizeLocked).
		nextMemSize int64
		// flushUpTo makes every immutable memtable whose WAL is below it
		// due for a flush, whatever their sizes (see flushDueLocked): a
		// Flush or an ingest waits for them.
		flushUpTo base.FileNum
		versions  versionSet
		snaps     snapshotList
		flushing  bool
		// compacting lists the compactions running now; manual counts the
		// Compact calls that want the background compactor paused.
		compacting []*compaction.Compaction
		manual     int
		// l0ReadAmp caches the current version's L0 read amplification
		// for the write stalls (see l0StallLocked).
		l0ReadAmp l0ReadAmpCache
		// bgErr is the first failure of a flush, a compaction or the
		// manifest. It stops writes and background work for good.
		bgErr error
		// checkpoints holds back the WALs running checkpoints copy.
		checkpoints checkpointHold
	}
}

// Open opens the store in dirname, creating the directory and an empty store
// if needed, and recovers it to the state of its last acknowledged write. A
// nil opts means all defaults.
//
// Open fails with a clear error when opts are invalid, when another DB (in
// this process or another) holds the directory, when the files are damaged
// (errors.Is(err, ErrCorruption)), and, as opts ask, when a store already
// exists (Options.ErrorIfExists, ErrDBAlreadyExists) or does not
// (Options.ErrorIfNotExists, ErrDBDoesNotExist). An empty dirname is an
// error: "." names the current directory.
func Open(dirname string, opts *Options) (db *DB, err error) {
	if dirname == "" {
		return nil, errors.New(`kv: Open: empty directory name (use "." for the current directory)`)
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	d := &DB{
		dirname: dirname,
		opts:    o,
		fs:      o.FS,
		cmp:     o.Comparer,
		filters: o.filters(),
	}
	d.mu.cond.L = &d.mu.Mutex
	d.cleaner.idle.L = &d.cleaner.mu
	d.events.init(o.EventListener)
	// A store never loses its CURRENT, so one seen before locking is there
	// after; checking first leaves a directory without a store untouched.
	if o.ErrorIfNotExists || o.ReadOnly {
		if err := d.checkExists(true); err != nil {
			return nil, err
		}
	}
	if err := d.lockDir(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.releaseFiles()
		}
	}()
	// A panic of the user's code that Open calls (the comparer, the
	// filter policy, the Logger: replaying the WALs, flushing what they
	// held) fails Open, as it stops a flush, rather than escaping with
	// the store's LOCK and files held. Deferred after the release above,
	// it runs first.
	defer recoverCallback("opening the store", &err)
	// Another process may be creating a store here until we hold the lock.
	if o.ErrorIfExists {
		if err := d.checkExists(false); err != nil {
			return nil, err
		}
	}
	d.blockCache = sstable.NewCache(o.BlockCacheSize)
	d.filterMem = newFilterHolder(d, o)
	d.tableCache = newTableCache(d, o.MaxOpenFiles)
	d.compactOpts = compactionOptions(o)
	d.picker = compaction.NewPicker(d.compactOpts, d.cmp)
	d.mu.versions.init(d)
	if err := d.recover(); err != nil {
		return nil, err
	}
	if err := d.checkSplitOnTables(); err != nil {
		return nil, err
	}
	if !o.ReadOnly {
		d.deleteObsoleteFiles()
	}
	d.mu.Lock()
	d.updateReadStateLocked()
	d.maybeScheduleFlushLocked()
	d.maybeScheduleCompactionLocked()
	d.mu.Unlock()
	return d, nil
}

// lockDir creates the directory if missing (a read-only DB's exists),
// takes its LOCK and opens it for syncs.
func (d *DB) lockDir() error {
	if !d.opts.ReadOnly { // a read-only DB's was found with its CURRENT
		if err := d.makeDir(d.dirname); err != nil {
			return fmt.Errorf("kv: creating %s: %w", d.dirname, err)
		}
	}
	l, err := d.lockStore(d.path(base.MakeFilename(base.FileTypeLock, 0)))
	if err != nil {
		return err
	}
	d.fileLock = l
	dir, err := d.fs.OpenDir(d.dirname)
	if err != nil {
		l.Close()
		d.fileLock = nil
		return fmt.Errorf("kv: opening directory %s: %w", d.dirname, err)
	}
	d.dataDir = dir
	return nil
}

// storeExists reports whether the directory holds a store: a CURRENT
// file, which a store writes in its first Open and never removes.
func (d *DB) storeExists() (bool, error) {
	_, err := d.fs.Stat(d.path(base.MakeFilename(base.FileTypeCurrent, 0)))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("kv: checking CURRENT in %s: %w", d.dirname, err)
}

// checkExists fails unless whether the directory holds a store is want.
func (d *DB) checkExists(want bool) error {
	exists, err := d.storeExists()
	switch {
	case err != nil:
		return err
	case exists && !want:
		return fmt.Errorf("%w in %s (Options.ErrorIfExists)", ErrDBAlreadyExists, d.dirname)
	case !exists && want && d.opts.ReadOnly:
		return fmt.Errorf("%w: no CURRENT file in %s (Options.ReadOnly)", ErrDBDoesNotExist, d.dirname)
	case !exists && want:
		return fmt.Errorf("%w: no CURRENT file in %s (Options.ErrorIfNotExists)", ErrDBDoesNotExist, d.dirname)
	}
	return nil
}

// makeDir creates dir and its missing parents, then syncs the parent of
// each directory on the path, from dir up: the entries it adds survive a
// crash, and so do those an earlier attempt added and did not sync,
// having failed or died before its syncs (Open and Checkpoint retried,
// say, then a machine crash), which a Stat cannot tell from synced ones.
// The parent of a directory that existed before is synced where it can
// be: a directory this process may not read, or on a file system that
// syncs no directories (squashfs and iso9660 refuse with EINVAL), is
// passed over, as an Open of a store that exists must not fail for an
// ancestor it did not create now. The parent of one it creates must
// sync.
func (d *DB) makeDir(dir string) error {
	// The parent of dir and of each of its parents, up to the root, and
	// whether the directory below it existed.
	type step struct {
		parent  string
		existed bool
	}
	var steps []step
	for p := dir; ; {
		fi, err := d.fs.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s is not a directory", p)
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return err
		}
		parent := d.fs.PathDir(p)
		if parent == p {
			break
		}
		steps = append(steps, step{parent, err == nil})
		p = parent
	}
	if err := d.fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range steps {
		if err := syncDir(d.fs, s.parent); err != nil && !s.existed {
			return err
		}
	}
	return nil
}

// compactionOptions returns the compaction package's share of resolved
// options o.
func compactionOptions(o *Options) *compaction.Options {
	return &compaction.Options{
		L0CompactionThreshold: o.L0CompactionThreshold,
		LBaseMaxBytes:         o.LBaseMaxBytes,
		LevelMultiplier:       o.LevelMultiplier,
		TargetFileSize:        o.TargetFileSize,
		StaticLevels:          o.StaticLevels,
		FlushSplitBytes:       o.FlushSplitBytes,
		MaxSpaceAmp:           o.MaxSpaceAmp,
	}
}

// path returns the full name of a file of the store.
func (d *DB) path(name string) string { return d.fs.PathJoin(d.dirname, name) }

// Close syncs the WAL, so no acknowledged write is lost (NoSync writes
// included), stops background work (a running flush or compaction is
// abandoned; its work is redone after the next Open), and releases the
// directory. It does not flush the memtable: its writes stay in the synced
// WAL, and the next Open replays them into memory without writing a table
// (see Recovery in the package documentation), as LevelDB and Pebble do;
// call Flush first to have them in a table. Close returns ErrClosed when
// called twice, and otherwise the first background error met, if any.
//
// An Ingest or a Checkpoint running when Close is called returns before
// Close does (with ErrClosed where it notices the close; a Checkpoint that
// has taken the store's state completes its copy), so that nothing touches
// the store's files, or calls the listener, once Close has returned.
// Iterators and snapshots should be closed before the DB. Those still open
// become unusable (ErrClosed) and no longer hold anything: Close still
// closes the store cleanly, then reports them, as Pebble does, with an error
// wrapping ErrLeaked that counts them.
func (d *DB) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	// Wake writers stalled in makeRoomForWrite, and background waits.
	d.mu.Lock()
	d.mu.cond.Broadcast()
	d.mu.Unlock()
	// An Ingest or Checkpoint that began before notices the close at its
	// next step (or completes): wait for it.
	d.fileCalls.Lock()
	d.fileCalls.Unlock()

	// Holding the commit pipeline, after every write that reserved before
	// it, close the WAL: written out and synced.
	var live manifest.ClosedLog
	walErr := d.commit.runExclusive(func() error {
		var err error
		live, err = d.commit.closeLog()
		if err := d.commit.err.get(); err != nil {
			return err
		}
		return err
	})
	d.bgWG.Wait()

	// A Compact running in a caller's goroutine notices the close at its
	// next step; wait for it to let go of the MANIFEST.
	d.mu.Lock()
	for d.mu.manual > 0 || d.mu.versions.writing {
		d.mu.cond.Wait()
	}
	d.mu.Unlock()
	d.cleaner.waitIdle() // the files they left, deleted and reported
	d.waitEvents()       // a listener's panic becomes bgErr
	// Counted once the listener is done: it may hold an iterator of its
	// own while it handles an event queued before Close.
	leakErr := d.leaks()
	d.mu.Lock()
	bgErr := d.mu.bgErr
	var recordErr error
	if walErr == nil && bgErr == nil && !d.opts.ReadOnly {
		recordErr = d.closeManifestLocked(d.closedLogsLocked(live))
	}
	d.mu.Unlock()
	d.cleaner.close() // the MANIFEST replaced just now
	if bgErr == nil {
		d.mu.Lock()
		bgErr = d.mu.bgErr // a file system's panic there
		d.mu.Unlock()
	}
	d.releaseFiles()
	return errors.Join(walErr, bgErr, recordErr, leakErr)
}

// closeManifestLocked leaves, at Close, a MANIFEST whose only edit is the
// whole Version, recording with it the WALs that Close leaves live,
// sealed and synced, and their lengths (see closedLogsLocked). Without a
// later edit or WAL to show them synced, the last edits of a MANIFEST, or
// the last records of a WAL, cut off would read as the torn tail of a
// crash, and Open would drop them: the tables those edits added, deleted
// as a crash's leftovers; the writes of the WAL. With one edit, a cut
// anywhere before the MANIFEST's seal leaves no edit, which is
// corruption; and Open refuses a WAL recorded missing, or ending before
// the length recorded (see checkClosedLogLength). Nothing is written
// when the MANIFEST is that already. A failure loses nothing: the WALs
// are synced, and the MANIFEST CURRENT names is the one before. d.mu is
// held.
func (d *DB) closeManifestLocked(logs []manifest.ClosedLog) error {
	vs := &d.mu.versions
	if vs.edits == 0 && (len(logs) == 0 || slices.Equal(logs, vs.closedLogs)) {
		return nil
	}
	if err := vs.logAndApplyFresh(&manifest.VersionEdit{ClosedLogs: logs}); err != nil {
		return fmt.Errorf("kv: rewriting the MANIFEST at Close (every write is synced): %w", err)
	}
	return nil
}

// closedLogsLocked returns the WALs that hold writes in no table as Close
// leaves them, ascending, each with the length of its records: those of
// the memtables waiting for a flush, sealed at their rotation or replayed
// at Open, and live, the WAL that Close has just sealed and synced. A WAL
// holding no record is left out: missing, it loses nothing. d.mu is held.
func (d *DB) closedLogsLocked(live manifest.ClosedLog) []manifest.ClosedLog {
	var logs []manifest.ClosedLog
	for l := range d.liveLogsLocked() {
		c := manifest.ClosedLog{Num: l.num, Size: l.size}
		if l.num == live.Num {
			c.Size = live.Size
		}
		if c.Size > 0 && c.Num >= d.mu.versions.logNum {
			logs = append(logs, c)
		}
	}
	return logs
}

// leaks returns an error wrapping ErrLeaked when iterators or snapshots
// are still open, naming how many of each; nil otherwise.
func (d *DB) leaks() error {
	d.mu.Lock()
	snaps := d.mu.snaps.count()
	d.mu.Unlock()
	iters := d.openIters.Load()
	if iters == 0 && snaps == 0 {
		return nil
	}
	return fmt.Errorf("%w (iterators: %d, snapshots: %d)", ErrLeaked, iters, snaps)
}

// releaseFiles closes every file the DB holds, the LOCK last.
func (d *DB) releaseFiles() {
	if d.tableCache != nil {
		d.tableCache.close()
	}
	d.mu.versions.close()
	if d.commit.log != nil {
		d.commit.log.abandon()
		d.commit.log = nil
	}
	if d.dataDir != nil {
		d.dataDir.Close()
	}
	if d.fileLock != nil {
		d.fileLock.Close()
	}
}

// checkWritable returns ErrClosed after Close, and ErrReadOnly for a
// read-only DB (Options.ReadOnly).
func (d *DB) checkWritable() error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		return ErrReadOnly
	}
	return nil
}

// checkOpen returns ErrClosed after Close.
func (d *DB) checkOpen() error {
	if d.closed.Load() {
		return ErrClosed
	}
	return nil
}
