package kv

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// walSink makes a WAL's records durable as their writers require, for
// many writers at once, with one writer doing the work for all of them
// at a time: group commit. Writing and syncing are apart, each done by
// one writer at a time, and a write may run while a sync does.
//
// By default the records appended go to the sink's buffer (under the
// commit pipeline's mu, in sequence order). A writer that must see its
// record in the file before it goes on (every one, by default:
// process-crash durability) waits for it in wait: if no other writer is
// writing, it takes the whole buffer, every record appended so far, its
// own and later ones, and writes it with one write(2); otherwise it
// waits for the writer that is, which may have covered its record
// already. A Sync writer then inserts its batch, lets it be published,
// and waits in syncTo for a sync of the file past its record: if none is
// running it syncs, for every writer whose record is written; otherwise
// it waits, and the next sync covers it. Concurrent Sync writers thus
// share fsyncs: those that arrive while one runs are covered by the
// next, all together, and the next waits a little for those the last
// one released (gatherLocked), writing all their records at once. A
// NoSync writer waits for a write, never for a sync.
//
// Where the WAL is memory-mapped (wal_mmap.go), each NoSync record
// appended while the sink holds nothing unwritten is encoded into the
// file's pages, under the pipeline's mu or by its writer (see walOrder):
// it does not pass through the sink. A Sync record goes to the sink, and
// so does every record appended while one is there, unwritten
// (walRoute): the sink then writes them to the file with pwrite(2), as
// above, where a store into the pages a sync just cleaned would fault,
// once the records before them are complete.
//
// With Options.BackgroundWALWrites the records go to the WAL's flusher
// instead, and count as written once handed to it (the flusher writes
// them in the background, within its loss bound); the sink then only
// serves Sync writers, draining the flusher before it syncs.
type walSink struct {
	l *walWriter
	m *dbMetrics
	// stop is the commit pipeline's sticky error, set when a write or
	// sync fails, before any writer hears of it: no record is appended
	// after the failure, none reaches the file (BackgroundWALWrites'
	// flusher would write it), and no later write is acknowledged.
	stop *stickyError

	mu sync.Mutex
	// wrote is signalled when a writer finishes a write, or the sink
	// fails.
	wrote sync.Cond
	// syncEnded, made by the first writer to wait for the sync running,
	// is closed when that sync ends (nil while no writer waits: a writer
	// alone allocates nothing). The Sync writers waiting for it are woken
	// by it alone, not by the writes that end meanwhile, and the writers
	// it served return without taking mu (they read synced).
	syncEnded chan struct{}
	// buf holds the bytes appended and not yet taken by a writer; spare
	// is the buffer of the last write, for reuse.
	buf, spare []byte
	// Stream offsets: appended ends the bytes appended, written those in
	// the file (or handed to the flusher), synced those synced (-1: none
	// yet, so the first sync asked for always runs; changed under mu,
	// read without it by the writers a sync woke).
	appended, written int64
	synced            atomic.Int64
	writing, syncing  bool  // a writer is writing, syncing
	gathering         bool  // the syncing writer is in gatherLocked
	err               error // the first failed write or sync; sticky
	// idle is set while every byte appended is written (written ==
	// appended, and no error): a mapped WAL's route may then copy
	// records into the file itself. Read without mu.
	idle atomic.Bool
	// What gatherLocked knows of the Sync writers: arrivals counts those
	// that began waiting since the last sync began (read without mu by
	// the gathering writer; changed under mu); expected is how many the
	// next sync waits for, those the last one served and those that
	// arrived while it ran; syncNanos is a moving average of a sync's
	// duration, 0 before the first; gather bounds the wait.
	arrivals  atomic.Int32
	expected  int32
	syncNanos int64
	gather    gatherBound
}

// maxSinkBuffer bounds the buffer a sink keeps for reuse.
const maxSinkBuffer = 1 << 20

// newWALSink returns the sink of l, whose stream has size bytes in the
// file already, which records its failure in stop.
func newWALSink(l *walWriter, size int64, m *dbMetrics, stop *stickyError) *walSink {
	s := &walSink{l: l, m: m, stop: stop, appended: size, written: size}
	s.wrote.L = &s.mu
	s.synced.Store(-1)
	s.idle.Store(true)
	return s
}

// Write buffers p, the next bytes of the WAL's stream. The commit
// pipeline's record writer calls it, under the pipeline's mu. It fails
// once a write of the sink has failed.
func (s *walSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(p)
}

// writeAt buffers p, the bytes of a mapped WAL's stream from offset off
// on: those before off, if the sink has not seen them, were given their
// place in the mapping while it held nothing unwritten (see
// copiedLocked). The WAL's route calls it, under the pipeline's mu.
func (s *walSink) writeAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.copiedLocked(off)
	return s.writeLocked(p)
}

// copiedLocked notes that a mapped WAL's stream up to off is the
// mapping's when the sink holds nothing unwritten: the records past
// those it took were copied into the mapping, or given their place
// there (walWriter.append does so only then). Those not complete yet
// are before any byte the sink writes, which waits for them (see
// walOrder); the WAL's close and writeAll wait for them too.
func (s *walSink) copiedLocked(off int64) {
	if s.l.direct != nil && s.written == s.appended && off > s.appended {
		s.appended, s.written = off, off
	}
}

func (s *walSink) writeLocked(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	s.buf = append(s.buf, p...)
	s.appended += int64(len(p))
	s.idle.Store(false)
	return len(p), nil
}

// handedOn notes that the stream up to end is handed to the flusher:
// written, as far as the sink is concerned.
func (s *walSink) handedOn(end int64) {
	s.mu.Lock()
	s.appended, s.written = end, end
	s.mu.Unlock()
}

// wait returns once the stream up to end is written to the file, writing
// it itself when no other writer is. A Sync writer (sync set) then waits
// in syncTo for its record to be synced; in between it inserts its batch
// and lets it be published, so that the writes after it wait for its
// record to be written, not synced. A Sync writer that arrives while a
// sync gathers writers (gatherLocked) leaves its record to the syncing
// writer, which writes every record gathered with one write before it
// syncs. It returns the sink's error, if any.
func (s *walSink) wait(end int64, sync bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.copiedLocked(end)
	if sync {
		s.arrivals.Add(1)
	}
	for {
		switch {
		case s.err != nil:
			return s.err
		case s.written >= end:
			return nil
		case s.writing, sync && s.gathering:
			s.wrote.Wait()
		default:
			s.writeOutLocked()
		}
	}
}

// syncTo returns once the stream up to end, written, is synced, syncing
// every byte written itself when no other writer is syncing. It returns
// the sink's error, if any.
func (s *walSink) syncTo(end int64) error {
	s.mu.Lock()
	for {
		switch {
		case s.err != nil:
			err := s.err
			s.mu.Unlock()
			return err
		case s.synced.Load() >= end:
			s.mu.Unlock()
			return nil
		case s.syncing:
			if s.syncEnded == nil {
				s.syncEnded = make(chan struct{})
			}
			ended := s.syncEnded
			s.mu.Unlock()
			<-ended
			if s.synced.Load() >= end {
				return nil
			}
			s.mu.Lock()
		default:
			s.syncLocked()
		}
	}
}

// writeOutLocked writes out the whole buffer, with s.mu released.
func (s *walSink) writeOutLocked() {
	s.writing = true
	data, target := s.buf, s.appended
	s.buf, s.spare = s.spare[:0], nil
	s.mu.Unlock()
	err := s.l.writeOut(data, target)
	s.mu.Lock()
	s.writing = false
	if cap(data) <= maxSinkBuffer {
		s.spare = data[:0]
	}
	if err != nil {
		s.failLocked(err)
	} else {
		s.written = max(s.written, target)
		s.idle.Store(s.written == s.appended)
		if len(data) > 0 {
			s.m.walWrites.Add(1)
		}
	}
	s.wrote.Broadcast()
}

// syncLocked syncs the file, with s.mu released, up to every byte
// appended: first it gathers the Sync writers the last sync released
// (gatherLocked), then waits for the write running, if any, and writes
// out what is left.
func (s *walSink) syncLocked() {
	s.syncing = true
	s.gatherLocked()
	for s.writing && s.err == nil {
		s.wrote.Wait()
	}
	if s.err == nil && len(s.buf) > 0 {
		s.writeOutLocked()
	}
	if s.err != nil {
		s.endSyncLocked()
		return
	}
	target := s.written
	group := s.arrivals.Swap(0) // the Sync writers waiting, served by this sync or the next
	start := time.Now()
	s.mu.Unlock()
	err := s.l.syncOut()
	s.mu.Lock()
	if err != nil {
		s.failLocked(err)
	} else {
		s.synced.Store(max(s.synced.Load(), target))
		s.m.walSyncs.Add(1)
		s.syncDone(group, time.Since(start))
	}
	s.endSyncLocked()
}

// endSyncLocked ends the sync running: it wakes the writers waiting for
// it.
func (s *walSink) endSyncLocked() {
	s.syncing = false
	if s.syncEnded != nil {
		close(s.syncEnded)
		s.syncEnded = nil
	}
}

// failLocked records err, a failed write or sync: the sink's and the
// commit pipeline's sticky error, before any writer hears of it.
func (s *walSink) failLocked(err error) {
	if s.err == nil {
		s.err = err
	}
	s.stop.set(walFailed(err))
	s.wrote.Broadcast()
}

// gatherLocked, before a sync, lets the Sync writers that the last sync
// released append their next records in time to share this one: it
// waits, with s.mu released, until as many Sync writers have arrived
// since the last sync began as that sync served plus those that arrived
// while it ran, or for half a sync's duration at most.
//
// Without it, Sync writers settle into two groups that take turns: the
// writers one sync releases come back while the next, begun at once for
// the writers that arrived meanwhile, runs, and wait for the one after
// it. Each sync then serves half the writers. Waiting for them costs the
// time they take to come back, a few microseconds where a sync takes
// tens, and each sync serves them all: for N writers, N per sync and the
// wait, against N/2 per sync. A writer alone never waits (it is all the
// last sync served).
//
// Only Sync writers wait for it: their batches are published already,
// and the writes after them wait for no sync. Where the writers it waits
// for come back slowly (Sync writes among many NoSync ones, say), the
// wait is a loss, and its bound adapts (gatherBound).
//
// The Sync writers that come back meanwhile do not write their records
// one by one (see wait): the syncing writer writes them all with one
// write once it stops waiting, and they insert and publish their batches
// while the sync runs. Coming back then costs each only its append, so
// that all of them are back sooner; on few processors, where they come
// back one after another, that is most of the wait.
//
// It spins, yielding the processor: a timer's wake-up would take longer
// than the wait, and on few processors the yield is what runs the
// writers it waits for.
//
// Then it settles: it yields on for as long as each yield brings in
// another Sync writer, and stops at the first that brings none. Where
// syncs take next to no time (tmpfs, an SSD that acknowledges a flush
// from its cache) and the writers come back one after another, as they
// do on few processors, half a sync ends before the first of them is
// back: the groups then shrink to the one or two writers that happen to
// be there, each paying a sync of its own. Settling lets every writer
// that is ready to run reach the sync. A writer that arrives waits for
// this sync and cannot arrive again, but new goroutines can (a server
// starting one per request), so settling also stops after a sync's
// duration, or minSettleBound where syncs are faster. A yield that finds
// nothing else to run costs a lone writer more than a fast sync, so
// settling pauses once it has brought nobody twice in a row, trying
// again now and then (gatherBound.settles).
func (s *walSink) gatherLocked() {
	if s.syncNanos == 0 || s.l.closed.Load() {
		return
	}
	want := s.expected
	settle := s.gather.settles()
	here := s.arrivals.Load() >= want
	if here && !settle {
		s.gather.ended(true)
		return
	}
	var deadline time.Time // none: the writers wanted are here
	if !here {
		deadline = time.Now().Add(s.gather.next(s.syncNanos))
	}
	settleFor := time.Duration(max(s.syncNanos, int64(minSettleBound)))
	s.gathering = true
	s.mu.Unlock()
	for s.arrivals.Load() < want && !s.l.closed.Load() && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	gathered := s.arrivals.Load() >= want
	brought := settle && settleArrivals(s.arrivals.Load, s.l.closed.Load, time.Now().Add(settleFor), runtime.Gosched)
	s.mu.Lock()
	s.gathering = false
	s.gather.ended(gathered)
	if settle {
		s.gather.settled(brought)
	}
}

// settleArrivals is gatherLocked's settling: it yields for as long as
// each yield brings in another Sync writer (arrived counts them), until
// stop reports true or the moment until, and reports whether any came.
func settleArrivals(arrived func() int32, stop func() bool, until time.Time, yield func()) (brought bool) {
	for n := arrived(); !stop() && time.Now().Before(until); {
		yield()
		m := arrived()
		if m == n {
			break
		}
		n, brought = m, true
	}
	return brought
}

// gatherBound bounds gatherLocked's waits: half a sync, halved after
// each wait that ended without the writers it waited for, down to
// 1/64 of a sync, and restored by one that ended with them. Every
// gatherProbe-th wait may take half a sync whatever came before, so
// that writers who come back again are found again.
//
// It also says when gatherLocked settles: always, until settleMisses
// settles in a row have brought no writer; then once after skipping
// gatherProbe syncs, and after twice as many each time a settle brings
// nobody again, up to maxSettleSkip, until one brings a writer. A yield
// with nothing else to run wakes another thread to look for work, a
// few microseconds: a lone Sync writer on fast syncs would pay it on
// every sync, and pays it a little less than once in maxSettleSkip.
type gatherBound struct {
	shift int // the bound is a sync's duration >> (1 + shift)
	waits int
	// misses counts the settles in a row that brought no writer; skip
	// is how many syncs are still to go without one, and skipped how
	// many the last pause skipped.
	misses, skip, skipped int
}

// gatherProbe, maxGatherShift, settleMisses and maxSettleSkip: see
// gatherBound.
const (
	gatherProbe    = 16
	maxGatherShift = 5
	settleMisses   = 2
	maxSettleSkip  = 1024
)

// minSettleBound bounds gatherLocked's settling where a sync takes less:
// time for a few dozen writers to come back one after another on two
// processors, and less than a sync of most disks.
const minSettleBound = 100 * time.Microsecond

// next returns the bound of the next wait, for syncs of syncNanos.
func (g *gatherBound) next(syncNanos int64) time.Duration {
	shift := g.shift
	if g.waits++; g.waits%gatherProbe == 0 {
		shift = 0
	}
	return time.Duration(syncNanos >> (1 + shift))
}

// ended records whether a wait ended with the writers it waited for (or
// needed none).
func (g *gatherBound) ended(gathered bool) {
	if gathered {
		g.shift = 0
	} else {
		g.shift = min(g.shift+1, maxGatherShift)
	}
}

// settles reports whether the next sync's gather settles.
func (g *gatherBound) settles() bool {
	if g.skip > 0 {
		g.skip--
		return false
	}
	return true
}

// settled records whether a settle brought a writer.
func (g *gatherBound) settled(brought bool) {
	if brought {
		g.misses, g.skipped = 0, 0
		return
	}
	if g.misses++; g.misses >= settleMisses {
		g.skipped = min(max(2*g.skipped, gatherProbe), maxSettleSkip)
		g.skip = g.skipped
	}
}

// syncDone records a sync that served group writers and took d.
func (s *walSink) syncDone(group int32, d time.Duration) {
	s.expected = group + s.arrivals.Load()
	if s.syncNanos == 0 {
		s.syncNanos = int64(d)
	} else {
		s.syncNanos += (int64(d) - s.syncNanos) / 8
	}
}

// walFailed is the error that stops writes after err, a failed write or
// sync of the WAL.
func walFailed(err error) error {
	return fmt.Errorf("kv: WAL write failed, the DB accepts no more writes: %w", err)
}
