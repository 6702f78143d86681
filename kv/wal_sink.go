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
// at a time: group commit.
//
// By default the records appended go to the sink's buffer (under the
// commit pipeline's mu, in sequence order). A writer that must see its
// record in the file before it is acknowledged (every one, by default:
// process-crash durability) waits for it in wait: if no other writer is
// writing, it takes the whole buffer, every record appended so far, its
// own and later ones, and writes it with one write(2), then syncs the
// file if it, or any writer waiting, asked for a sync; otherwise it waits
// for the writer that is, which may have covered its record already.
// Concurrent Sync writers thus share fsyncs: those that arrive while one
// runs are covered by the next, all together, and the next waits a little
// for those the last one released (gatherLocked).
//
// Where the WAL is memory-mapped (wal_mmap.go), the record writer copies
// each NoSync record into the file's pages itself, under the pipeline's
// mu, while the sink holds nothing unwritten: the record is written once
// appended. A Sync record goes to the sink, and so does every record
// appended while one is there, unwritten (walRoute): the sink then
// writes them to the file with pwrite(2), as above, where a store into
// the pages a sync just cleaned would fault.
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
	// noSyncWrites counts the NoSync writes the commit pipeline has
	// reserved, for gatherLocked.
	noSyncWrites *atomic.Uint64

	mu   sync.Mutex
	cond sync.Cond // signalled when a writer finishes its write and sync
	// buf holds the bytes appended and not yet taken by a writer; spare
	// is the buffer of the last write, for reuse.
	buf, spare []byte
	// Stream offsets: appended ends the bytes appended, written those in
	// the file (or handed to the flusher), synced those synced (-1: none
	// yet, so the first sync asked for always runs), wantSync the bytes
	// a waiting writer wants synced.
	appended, written, synced, wantSync int64
	busy                                bool  // a writer is writing or syncing
	err                                 error // the first failed write or sync; sticky
	// idle is set while every byte appended is written (written ==
	// appended, and no error): a mapped WAL's route may then copy
	// records into the file itself. Read without mu.
	idle atomic.Bool
	// What gatherLocked knows of the Sync writers: arrivals counts those
	// that began waiting since the last sync began (read without mu by
	// the gathering writer; changed under mu); lastSyncGroup is how many
	// the last sync served, and carried how many arrived while it ran;
	// syncNanos is a moving average of a sync's duration, 0 before the
	// first; noSyncAtSync is noSyncWrites when the last sync began;
	// gather bounds the wait.
	arrivals               atomic.Int32
	lastSyncGroup, carried int32
	syncNanos              int64
	noSyncAtSync           uint64
	gather                 gatherBound
}

// maxSinkBuffer bounds the buffer a sink keeps for reuse.
const maxSinkBuffer = 1 << 20

// newWALSink returns the sink of l, whose stream has size bytes in the
// file already, of commit pipeline p: it records its failure in p's
// sticky error.
func newWALSink(l *walWriter, size int64, m *dbMetrics, p *commitPipeline) *walSink {
	s := &walSink{l: l, m: m, stop: &p.err, noSyncWrites: &p.noSyncWrites, appended: size, written: size, synced: -1, wantSync: -1}
	s.cond.L = &s.mu
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
// on: those before off, if the sink has not seen them, were copied into
// the mapping while it held nothing unwritten, and are in the file. The
// WAL's route calls it, under the pipeline's mu.
func (s *walSink) writeAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.copiedLocked(off)
	return s.writeLocked(p)
}

// copiedLocked notes that a mapped WAL's stream up to off is in the file
// when the sink holds nothing unwritten: the records past those it took
// were copied into the mapping (walRoute copies only then).
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

// wait returns once the stream up to end is written to the file, and
// synced if sync is set, writing (and syncing) it itself when no other
// writer is. It returns the sink's error, if any.
func (s *walSink) wait(end int64, sync bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.copiedLocked(end)
	if sync {
		s.wantSync = max(s.wantSync, end)
		s.arrivals.Add(1)
	}
	for {
		switch {
		case s.err != nil:
			return s.err
		case s.written >= end && (!sync || s.synced >= end):
			return nil
		case s.busy:
			s.cond.Wait()
		default:
			s.writeOutLocked()
		}
	}
}

// writeOutLocked writes out the whole buffer, with s.mu released, and
// syncs if a waiting writer wants more synced than is: before a sync it
// gathers the Sync writers the last one released (gatherLocked).
func (s *walSink) writeOutLocked() {
	s.busy = true
	sync := s.wantSync > s.synced
	if sync {
		s.gatherLocked()
	}
	data, target := s.buf, s.appended
	s.buf, s.spare = s.spare[:0], nil
	var group int32
	var start time.Time
	if sync {
		group = s.arrivals.Swap(0) // every Sync writer waiting: its record is in target
		s.noSyncAtSync = s.noSyncWrites.Load()
		start = time.Now()
	}
	s.mu.Unlock()
	err := s.l.writeOut(data, sync)
	s.mu.Lock()
	s.busy = false
	if cap(data) <= maxSinkBuffer {
		s.spare = data[:0]
	}
	if err != nil {
		s.err = err
		s.stop.set(walFailed(err))
	} else {
		s.written = max(s.written, target)
		s.idle.Store(s.written == s.appended)
		if sync {
			s.synced = target
			s.m.walSyncs.Add(1)
			s.syncDone(group, time.Since(start))
		}
		if len(data) > 0 || (s.l.flusher == nil && s.l.direct == nil) {
			s.m.walWrites.Add(1)
		}
	}
	s.cond.Broadcast()
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
// It waits only while every write since the last sync began was a Sync
// write. A NoSync write reserved after this sync's writers is published
// after them, so it waits for this sync, and so does its writer's next
// write, Sync or not: the writers it waits for might not come back
// before it ends, and every write waits the longer. Where they come back
// slowly anyway, the wait's bound adapts (gatherBound).
//
// It spins, yielding the processor: a timer's wake-up would take longer
// than the wait, and on few processors the yield is what runs the
// writers it waits for.
func (s *walSink) gatherLocked() {
	if s.l.closed.Load() {
		return
	}
	if s.syncNanos == 0 || s.noSyncWrites.Load() != s.noSyncAtSync {
		// Only yield, once: on few processors the writers the last
		// sync released may then append in time.
		if s.lastSyncGroup > 1 {
			s.mu.Unlock()
			runtime.Gosched()
			s.mu.Lock()
		}
		return
	}
	want := s.carried + s.lastSyncGroup
	if s.arrivals.Load() >= want {
		s.gather.ended(true)
		return
	}
	deadline := time.Now().Add(s.gather.next(s.syncNanos))
	s.mu.Unlock()
	for s.arrivals.Load() < want && !s.l.closed.Load() && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	s.mu.Lock()
	s.gather.ended(s.arrivals.Load() >= want)
}

// gatherBound bounds gatherLocked's waits: half a sync, halved after
// each wait that ended without the writers it waited for, down to
// 1/64 of a sync, and restored by one that ended with them. Every
// gatherProbe-th wait may take half a sync whatever came before, so
// that writers who come back again are found again.
type gatherBound struct {
	shift int // the bound is a sync's duration >> (1 + shift)
	waits int
}

// gatherProbe and maxGatherShift: see gatherBound.
const (
	gatherProbe    = 16
	maxGatherShift = 5
)

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

// syncDone records a sync that served group writers and took d.
func (s *walSink) syncDone(group int32, d time.Duration) {
	s.lastSyncGroup, s.carried = group, s.arrivals.Load()
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
