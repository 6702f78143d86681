package kv

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
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
// runs are covered by the next, all together.
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
	// syncWaiters counts the writers waiting for a sync; lastSyncGroup
	// is how many the last sync had waiting.
	syncWaiters, lastSyncGroup int
}

// maxSinkBuffer bounds the buffer a sink keeps for reuse.
const maxSinkBuffer = 1 << 20

// newWALSink returns the sink of l, whose stream has size bytes in the
// file already, which records its failure in stop.
func newWALSink(l *walWriter, size int64, m *dbMetrics, stop *stickyError) *walSink {
	s := &walSink{l: l, m: m, stop: stop, appended: size, written: size, synced: -1, wantSync: -1}
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
		s.syncWaiters++
		defer func() { s.syncWaiters-- }()
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
// syncs if a waiting writer wants more synced than is.
//
// Before a sync, when the last sync served several writers, it yields
// the processor once, with s.mu released: the writers that sync just
// released are then likely to append their next records in time to share
// this fsync, where they would otherwise wait for the next one. Concurrent
// Sync writers then share one fsync almost all together, not in two
// halves, for the cost of a yield against that of an fsync.
func (s *walSink) writeOutLocked() {
	s.busy = true
	if s.wantSync > s.synced && s.lastSyncGroup > 1 {
		s.mu.Unlock()
		runtime.Gosched()
		s.mu.Lock()
	}
	data, target := s.buf, s.appended
	s.buf, s.spare = s.spare[:0], nil
	sync := s.wantSync > s.synced
	if sync {
		s.lastSyncGroup = s.syncWaiters
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
		}
		if len(data) > 0 || (s.l.flusher == nil && s.l.direct == nil) {
			s.m.walWrites.Add(1)
		}
	}
	s.cond.Broadcast()
}

// walFailed is the error that stops writes after err, a failed write or
// sync of the WAL.
func walFailed(err error) error {
	return fmt.Errorf("kv: WAL write failed, the DB accepts no more writes: %w", err)
}
