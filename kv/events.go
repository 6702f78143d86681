package kv

import (
	"fmt"
	"log"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// EventListener holds the functions a DB calls when its background work
// reaches a step worth logging, as Pebble's EventListener does (see
// Options.EventListener). Each field may be nil.
//
// The DB never calls a listener from a read, a write, or under any of its
// locks: it queues each event, and one goroutine of the DB calls the
// listener, in the order the events happened. A slow listener delays
// later events, never the store's work. A listener that panics is
// recovered, and the panic becomes the DB's background error (reported by
// BackgroundError, later writes, Flush and Close), as a failed flush is:
// the store's own goroutines keep running. Close returns once every event
// queued before it has been delivered.
//
// Delivery is asynchronous: a FlushEnd may come after the Flush that
// waited for it has returned. A listener may call the DB's methods, but
// not Close, which waits for the listener.
type EventListener struct {
	// BackgroundError is called when a flush or compaction fails (or a
	// listener panics): the DB accepts no more writes.
	BackgroundError func(error)
	// FlushBegin and FlushEnd bracket the flush of a memtable to L0,
	// those Open makes of the memtables its WAL replay fills included.
	FlushBegin func(FlushInfo)
	FlushEnd   func(FlushInfo)
	// CompactionBegin and CompactionEnd bracket a compaction, trivial
	// moves included.
	CompactionBegin func(CompactionInfo)
	CompactionEnd   func(CompactionInfo)
	// WALCreated is called when a new WAL is in place, WALDeleted when a
	// flushed one is removed (a WAL kept for recycling is not deleted; its
	// file becomes a later WAL).
	WALCreated func(WALCreateInfo)
	WALDeleted func(FileDeleteInfo)
	// TableCreated is called when a flush or compaction creates a table
	// file, TableDeleted when a table no Version holds is removed.
	TableCreated func(TableCreateInfo)
	TableDeleted func(FileDeleteInfo)
	// TableIngested is called when DB.Ingest has recorded its tables in
	// the store, or failed to (see TableIngestInfo), as Pebble's is.
	TableIngested func(TableIngestInfo)
	// WriteStallBegin is called when writes start waiting for a flush or
	// compaction, WriteStallEnd when none waits any more.
	WriteStallBegin func(WriteStallBeginInfo)
	WriteStallEnd   func()
}

// TableInfo describes a table file.
type TableInfo struct {
	FileNum           uint64 // the table's file number
	Size              uint64 // its length in bytes
	Smallest, Largest []byte // its first and last user keys
	SmallestSeqNum    uint64 // the bounds of its sequence numbers
	LargestSeqNum     uint64
	NumEntries        uint64 // every version, tombstones included
}

// String names the table with its size and key range.
func (t TableInfo) String() string {
	return fmt.Sprintf("%06d (%d B, [%q, %q])", t.FileNum, t.Size, t.Smallest, t.Largest)
}

// FlushInfo describes a flush. JobID ties FlushBegin to its FlushEnd.
type FlushInfo struct {
	JobID      int
	InputBytes int64 // the memtable's batches, as written to the WAL
	Output     []TableInfo
	Duration   time.Duration // FlushEnd only
	Done       bool          // FlushEnd only
	Err        error         // FlushEnd only: why the flush failed
}

// String is the flush as MakeLoggingEventListener logs it.
func (i FlushInfo) String() string {
	if !i.Done {
		return fmt.Sprintf("[JOB %d] flushing memtable of %d B to L0", i.JobID, i.InputBytes)
	}
	if i.Err != nil {
		return fmt.Sprintf("[JOB %d] flush failed after %s: %v", i.JobID, i.Duration, i.Err)
	}
	return fmt.Sprintf("[JOB %d] flushed %d B to L0: %d tables, %d B, in %s",
		i.JobID, i.InputBytes, len(i.Output), tablesSize(i.Output), i.Duration)
}

// CompactionInfo describes a compaction. JobID ties CompactionBegin to its
// CompactionEnd. Reason is "auto", "manual" or "move" (a trivial move:
// one table relinked a level down, nothing rewritten).
type CompactionInfo struct {
	JobID       int
	Reason      string
	StartLevel  int
	OutputLevel int
	Input       []TableInfo
	InputBytes  int64
	Output      []TableInfo // CompactionEnd only
	OutputBytes int64       // CompactionEnd only
	Duration    time.Duration
	Done        bool
	Err         error
}

// String is the compaction as MakeLoggingEventListener logs it.
func (i CompactionInfo) String() string {
	if !i.Done {
		return fmt.Sprintf("[JOB %d] compacting (%s) L%d -> L%d: %d tables, %d B",
			i.JobID, i.Reason, i.StartLevel, i.OutputLevel, len(i.Input), i.InputBytes)
	}
	if i.Err != nil {
		return fmt.Sprintf("[JOB %d] compaction L%d -> L%d failed after %s: %v",
			i.JobID, i.StartLevel, i.OutputLevel, i.Duration, i.Err)
	}
	return fmt.Sprintf("[JOB %d] compacted (%s) L%d -> L%d: %d tables, %d B in; %d tables, %d B out; in %s",
		i.JobID, i.Reason, i.StartLevel, i.OutputLevel, len(i.Input), i.InputBytes,
		len(i.Output), i.OutputBytes, i.Duration)
}

// WALCreateInfo describes a new WAL; Recycled tells whether its file was
// a flushed WAL's, renamed.
type WALCreateInfo struct {
	FileNum  uint64
	Path     string
	Recycled bool
}

// String is the WAL creation as MakeLoggingEventListener logs it.
func (i WALCreateInfo) String() string {
	if i.Recycled {
		return fmt.Sprintf("WAL created: %s (recycled)", i.Path)
	}
	return fmt.Sprintf("WAL created: %s", i.Path)
}

// FileDeleteInfo describes a removed WAL or table. Err is set when the
// removal failed (the next Open tries again).
type FileDeleteInfo struct {
	FileNum uint64
	Path    string
	Err     error
}

// String is the removal as MakeLoggingEventListener logs it.
func (i FileDeleteInfo) String() string {
	if i.Err != nil {
		return fmt.Sprintf("deleting %s failed: %v", i.Path, i.Err)
	}
	return fmt.Sprintf("deleted %s", i.Path)
}

// TableCreateInfo describes a table file being written. Reason is
// "flush" or "compaction".
type TableCreateInfo struct {
	JobID   int
	Reason  string
	FileNum uint64
	Path    string
}

// String is the table creation as MakeLoggingEventListener logs it.
func (i TableCreateInfo) String() string {
	return fmt.Sprintf("[JOB %d] %s: table created: %s", i.JobID, i.Reason, i.Path)
}

// TableIngestInfo describes an ingestion (DB.Ingest) whose tables were
// linked into the store: each table as the store holds it (its file
// number in the store, its keys' sequence number) with the level it was
// placed at, and GlobalSeqNum, the sequence number all their keys carry.
// Err is set when the flush of the memtable before it, or recording the
// tables, failed; Tables and GlobalSeqNum are then empty if the failure
// came before the levels were chosen. An ingestion refused earlier (a bad
// table, a failed link) reports no event: Ingest returns its error and
// the store is unchanged.
type TableIngestInfo struct {
	JobID        int
	Tables       []IngestedTable
	GlobalSeqNum uint64
	Err          error
}

// IngestedTable is one table of a TableIngestInfo and the level it went
// to.
type IngestedTable struct {
	TableInfo
	Level int
}

// String is the ingestion as MakeLoggingEventListener logs it.
func (i TableIngestInfo) String() string {
	if i.Err != nil {
		return fmt.Sprintf("[JOB %d] ingest failed: %v", i.JobID, i.Err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[JOB %d] ingested", i.JobID)
	for j, t := range i.Tables {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " L%d:%06d (%d B)", t.Level, t.FileNum, t.Size)
	}
	return b.String()
}

// WriteStallBeginInfo says why writes wait.
type WriteStallBeginInfo struct {
	Reason string
}

// String is the stall as MakeLoggingEventListener logs it.
func (i WriteStallBeginInfo) String() string { return "write stall: " + i.Reason }

// LoggerFunc adapts a printf-like function, such as log.Printf, to Logger.
type LoggerFunc func(format string, args ...any)

// Infof calls f.
func (f LoggerFunc) Infof(format string, args ...any) { f(format, args...) }

// MakeLoggingEventListener returns a listener that writes one line per
// event to logger (nil: the standard library's log.Printf), as Pebble's
// does.
func MakeLoggingEventListener(logger Logger) EventListener {
	if logger == nil {
		logger = LoggerFunc(log.Printf)
	}
	return EventListener{
		BackgroundError: func(err error) { logger.Infof("background error: %v", err) },
		FlushBegin:      func(i FlushInfo) { logger.Infof("%s", i) },
		FlushEnd:        func(i FlushInfo) { logger.Infof("%s", i) },
		CompactionBegin: func(i CompactionInfo) { logger.Infof("%s", i) },
		CompactionEnd:   func(i CompactionInfo) { logger.Infof("%s", i) },
		WALCreated:      func(i WALCreateInfo) { logger.Infof("%s", i) },
		WALDeleted:      func(i FileDeleteInfo) { logger.Infof("WAL %s", i) },
		TableCreated:    func(i TableCreateInfo) { logger.Infof("%s", i) },
		TableDeleted:    func(i FileDeleteInfo) { logger.Infof("table %s", i) },
		TableIngested:   func(i TableIngestInfo) { logger.Infof("%s", i) },
		WriteStallBegin: func(i WriteStallBeginInfo) { logger.Infof("%s", i) },
		WriteStallEnd:   func() { logger.Infof("write stall ending") },
	}
}

// events queues a DB's events for its listener and delivers them from one
// goroutine at a time, started when events wait and none runs.
type events struct {
	l     *EventListener // nil: no listener, nothing is queued
	jobID atomic.Int64

	mu      sync.Mutex
	queue   []func(*EventListener)
	running bool
	idle    sync.Cond // broadcast when the queue drains

	// stalled is set while writers wait in makeRoomForWrite; guarded by
	// d.mu.
	stalled bool
}

// init readies the events of a DB whose listener is l (nil: none).
func (e *events) init(l *EventListener) {
	e.l = l
	e.idle.L = &e.mu
}

// on reports whether a listener is set: events are built only then.
func (e *events) on() bool { return e.l != nil }

// nextJob returns the JobID of a new flush or compaction.
func (e *events) nextJob() int { return int(e.jobID.Add(1)) }

// emit queues call for the listener. It takes only the queue's own lock,
// for an append, so it may be called under any lock of the DB.
func (d *DB) emit(call func(*EventListener)) {
	e := &d.events
	if e.l == nil {
		return
	}
	e.mu.Lock()
	e.queue = append(e.queue, call)
	start := !e.running
	e.running = true
	e.mu.Unlock()
	if start {
		go d.deliverEvents()
	}
}

// deliverEvents calls the listener for each queued event, in order, until
// the queue is empty.
func (d *DB) deliverEvents() {
	e := &d.events
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			e.running = false
			e.idle.Broadcast()
			e.mu.Unlock()
			return
		}
		call := e.queue[0]
		e.queue[0] = nil
		e.queue = e.queue[1:]
		e.mu.Unlock()
		d.callListener(call)
	}
}

// callListener makes one call, turning a panic into a background error.
func (d *DB) callListener(call func(*EventListener)) {
	defer func() {
		if r := recover(); r != nil {
			d.mu.Lock()
			d.setBackgroundErrorLocked(fmt.Errorf("kv: event listener panicked: %v", r))
			d.mu.cond.Broadcast()
			d.mu.Unlock()
		}
	}()
	call(d.events.l)
}

// waitEvents waits until every event queued so far is delivered.
func (d *DB) waitEvents() {
	e := &d.events
	e.mu.Lock()
	for e.running {
		e.idle.Wait()
	}
	e.mu.Unlock()
}

// setBackgroundErrorLocked records the first failure of background work,
// which stops writes and background work for good, and reports it to the
// listener. d.mu must be held.
func (d *DB) setBackgroundErrorLocked(err error) {
	if d.mu.bgErr != nil {
		return
	}
	d.mu.bgErr = err
	d.updateWritesUnslowedLocked()
	d.emit(func(l *EventListener) {
		if l.BackgroundError != nil {
			l.BackgroundError(err)
		}
	})
}

// stallLocked counts a write stall beginning and reports it, once until
// it ends: a stalled writer woken by some other step of background work
// waits on in the same stall. d.mu must be held.
func (d *DB) stallLocked(reason string) {
	if d.events.stalled {
		return
	}
	d.events.stalled = true
	d.metrics.writeStalls.Add(1)
	d.emit(func(l *EventListener) {
		if l.WriteStallBegin != nil {
			l.WriteStallBegin(WriteStallBeginInfo{Reason: reason})
		}
	})
}

// stallEndedLocked reports the end of a write stall, if one began. d.mu
// must be held.
func (d *DB) stallEndedLocked() {
	if !d.events.stalled {
		return
	}
	d.events.stalled = false
	d.emit(func(l *EventListener) {
		if l.WriteStallEnd != nil {
			l.WriteStallEnd()
		}
	})
}

// tableInfos describes files.
func tableInfos(files []*manifest.FileMetadata) []TableInfo {
	infos := make([]TableInfo, len(files))
	for i, f := range files {
		infos[i] = tableInfo(f)
	}
	return infos
}

// tableInfo describes f.
func tableInfo(f *manifest.FileMetadata) TableInfo {
	return TableInfo{
		FileNum: uint64(f.FileNum), Size: f.Size,
		Smallest: f.Smallest.UserKey, Largest: f.Largest.UserKey,
		SmallestSeqNum: uint64(f.SmallestSeqNum), LargestSeqNum: uint64(f.LargestSeqNum),
		NumEntries: f.NumEntries,
	}
}

func tablesSize(ts []TableInfo) int64 {
	var n int64
	for _, t := range ts {
		n += int64(t.Size)
	}
	return n
}

// flushBegin reports a flush starting and returns its JobID (0 without a
// listener).
func (d *DB) flushBegin(inputBytes int64) int {
	if !d.events.on() {
		return 0
	}
	info := FlushInfo{JobID: d.events.nextJob(), InputBytes: inputBytes}
	d.emit(func(l *EventListener) {
		if l.FlushBegin != nil {
			l.FlushBegin(info)
		}
	})
	return info.JobID
}

// flushEnd reports a flush finished (or failed, err).
func (d *DB) flushEnd(job int, inputBytes int64, files []*manifest.FileMetadata, start time.Time, err error) {
	if !d.events.on() {
		return
	}
	info := FlushInfo{JobID: job, InputBytes: inputBytes, Output: tableInfos(files),
		Duration: time.Since(start), Done: true, Err: err}
	d.emit(func(l *EventListener) {
		if l.FlushEnd != nil {
			l.FlushEnd(info)
		}
	})
}

// compactionInfo describes c, before it runs.
func (d *DB) compactionInfo(c *compaction.Compaction) CompactionInfo {
	info := CompactionInfo{JobID: d.events.nextJob(), Reason: "auto",
		StartLevel: c.StartLevel, OutputLevel: c.OutputLevel, InputBytes: int64(c.InputBytes())}
	switch {
	case c.Manual:
		info.Reason = "manual"
	case c.TrivialMove():
		info.Reason = "move"
	}
	for _, f := range c.Tables() {
		info.Input = append(info.Input, tableInfo(f))
	}
	return info
}

// compactionBegin reports c starting and returns its description, which
// compactionEnd completes.
func (d *DB) compactionBegin(c *compaction.Compaction) CompactionInfo {
	if !d.events.on() {
		return CompactionInfo{}
	}
	info := d.compactionInfo(c)
	d.emit(func(l *EventListener) {
		if l.CompactionBegin != nil {
			l.CompactionBegin(info)
		}
	})
	return info
}

// compactionEnd reports a compaction finished (or failed, err).
func (d *DB) compactionEnd(info CompactionInfo, outputs []*manifest.FileMetadata, start time.Time, err error) {
	if !d.events.on() {
		return
	}
	info.Output, info.Duration, info.Done, info.Err = tableInfos(outputs), time.Since(start), true, err
	info.OutputBytes = tablesSize(info.Output)
	d.emit(func(l *EventListener) {
		if l.CompactionEnd != nil {
			l.CompactionEnd(info)
		}
	})
}

// tableCreated reports a table file created by job for reason.
func (d *DB) tableCreated(job int, reason string, num base.FileNum) {
	if !d.events.on() {
		return
	}
	info := TableCreateInfo{JobID: job, Reason: reason, FileNum: uint64(num),
		Path: d.path(base.MakeFilename(base.FileTypeTable, num))}
	d.emit(func(l *EventListener) {
		if l.TableCreated != nil {
			l.TableCreated(info)
		}
	})
}

// walCreated reports WAL num in place.
func (d *DB) walCreated(num base.FileNum, recycled bool) {
	if !d.events.on() {
		return
	}
	info := WALCreateInfo{FileNum: uint64(num), Path: d.path(base.MakeFilename(base.FileTypeLog, num)), Recycled: recycled}
	d.emit(func(l *EventListener) {
		if l.WALCreated != nil {
			l.WALCreated(info)
		}
	})
}

// fileDeleted reports the removal of a WAL or table (err: it failed).
func (d *DB) fileDeleted(typ base.FileType, num base.FileNum, err error) {
	if !d.events.on() || typ != base.FileTypeLog && typ != base.FileTypeTable {
		return
	}
	info := FileDeleteInfo{FileNum: uint64(num), Path: d.path(base.MakeFilename(typ, num)), Err: err}
	d.emit(func(l *EventListener) {
		switch {
		case typ == base.FileTypeLog && l.WALDeleted != nil:
			l.WALDeleted(info)
		case typ == base.FileTypeTable && l.TableDeleted != nil:
			l.TableDeleted(info)
		}
	})
}

// tableIngested reports an ingestion that reached the step of recording
// its tables: placed (their levels chosen and, err nil, recorded) or
// not.
func (d *DB) tableIngested(tables []ingestTable, placed bool, err error) {
	if !d.events.on() {
		return
	}
	info := TableIngestInfo{JobID: d.events.nextJob(), Err: err}
	if placed {
		info.GlobalSeqNum = uint64(tables[0].meta.GlobalSeqNum)
		for _, t := range tables {
			info.Tables = append(info.Tables, IngestedTable{
				TableInfo: tableInfo(t.meta), Level: t.level})
		}
	}
	d.emit(func(l *EventListener) {
		if l.TableIngested != nil {
			l.TableIngested(info)
		}
	})
}
