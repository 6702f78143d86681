package kv

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// With Options.BackgroundWALWrites, a WAL's record writer does not write to
// the file itself: it appends its bytes to a walFlusher's buffer, which a
// goroutine of the WAL's own writes to the file in arrival order, taking
// whatever has piled up since its last write in one call. A commit then
// costs a copy into memory, not a system call; the flusher's writes reach
// the OS a moment later. The file only ever receives a prefix of the
// stream, so a crash loses a suffix of the acknowledged writes, never one
// in the middle.
//
//	writer ── Write ──▶ buf ──(flusher goroutine: one Write per batch of bytes)──▶ file
//	   │                 ▲
//	   │    Write waits here while buf holds walBufferLimit bytes
//	   └─ commit: waits before the acknowledgement while the records not
//	      wholly in the file hold more than walBufferLimit bytes
//
// The flusher does not wake for every commit, which would cost a system
// call (and a goroutine switch) per write again: woken by the first bytes
// put in an empty buffer, it waits up to walFlushDelay for more, and
// writes once the delay is over or walFlushBytes have piled up (Pebble's
// flusher, likewise, writes a 32 KiB block once it is full). So an
// acknowledged NoSync write reaches the OS within about walFlushDelay.
//
// drain waits until every byte buffered so far is in the file, cutting
// the delay short: a Sync write drains before it syncs, and closing the
// WAL (at a memtable switch, Flush and Close) drains before it syncs and
// closes. The first failed file write is sticky: the flusher writes
// nothing after it (that would leave a hole), and every later Write and
// drain returns it, so no write is acknowledged after it is known, and no
// Sync write succeeds after it.

// walBufferLimit bounds what a crash of the process can lose: the bytes
// of the WAL's acknowledged records that are not wholly in the file. A
// record only partly written is lost whole (recovery drops a torn last
// record), so they are counted from the start of the first record not
// wholly in the file, through the end of the last one acknowledged.
// The writer, having handed its record to the flusher, waits until that
// span is at most walBufferLimit before it acknowledges it (commit): a
// record bigger than the limit is acknowledged only once it
// is in the file. Write also waits while walBufferLimit bytes are
// buffered or being written, which bounds the memory a big record holds.
// The flusher writes every walFlushBytes, so writers wait only when it has
// fallen eight writes behind; the two buffers a WAL keeps share about
// this much (Pebble's WAL writer allocates at most 16 blocks of 32 KiB).
// Options.BackgroundWALWrites documents the bound.
const walBufferLimit = 256 << 10

// BackgroundWALLossBound is the most that a crash of the process may lose
// with Options.BackgroundWALWrites: acknowledged NoSync writes whose WAL
// records span at most this many bytes (256 KiB), a record partly in the
// file counted whole. Their batches' Batch.Len add up to no more.
const BackgroundWALLossBound = walBufferLimit

// walFlushBytes and walFlushDelay say when the flusher writes what it
// has: once that many bytes are buffered, or that long after the first
// of them.
const (
	walFlushBytes = 32 << 10
	walFlushDelay = time.Millisecond
)

// maxSpareBuffer bounds a buffer kept for reuse, so one big batch does not
// pin its memory for the life of the DB.
const maxSpareBuffer = 4 * walBufferLimit

// walBuffers keeps the buffers of a DB's closed flusher, grown to what
// the load needs, for the next WAL's flusher: a memtable switch does not
// start them over from empty. (A sync.Pool would not do: a garbage
// collection empties it, and a busy DB collects between switches.)
type walBuffers struct {
	mu   sync.Mutex
	bufs [][]byte
}

// get returns an empty buffer, a kept one if there is one.
func (c *walBuffers) get() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.bufs)
	if n == 0 {
		return nil
	}
	b := c.bufs[n-1][:0]
	c.bufs[n-1] = nil
	c.bufs = c.bufs[:n-1]
	return b
}

// put keeps b for a later get, unless it is too big to keep or two are
// kept already.
func (c *walBuffers) put(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b != nil && cap(b) <= maxSpareBuffer && len(c.bufs) < 2 {
		c.bufs = append(c.bufs, b)
	}
}

// walFlusher is the buffer and background writer of one WAL. The
// goroutine starts with the first Write, so a WAL that is never written
// has none, and stops at close.
type walFlusher struct {
	dst  io.Writer // the WAL file, or a writer at its end when continued
	name string
	bufs *walBuffers // where the buffers come from and go back to
	// hurry cuts the flusher's wait for more bytes short (capacity 1).
	hurry chan struct{}

	mu       sync.Mutex
	work     sync.Cond // the flusher waits on it for bytes or close
	drained  sync.Cond // writers wait on it for the flusher's progress
	buf      []byte    // bytes not yet taken by the flusher
	spare    []byte    // the buffer of the last write, for reuse
	idle     bool      // the flusher waits on work
	delaying bool      // the flusher waits for more bytes (on hurry)
	inFlight int       // bytes the flusher took from buf and is writing
	draining int       // drains waiting: write without delay
	started  bool
	closing  bool
	err      error         // the first failed write; sticky
	done     chan struct{} // closed when the goroutine ends

	// The stream offsets of the loss bound (see walBufferLimit), under mu:
	// accepted ends the bytes given to Write, written those the file
	// took, safe the last record wholly written. ends[head:] are the
	// ends of the records given to commit that are not wholly written,
	// ascending.
	accepted, written, safe int64
	ends                    []int64
	head                    int
}

// newWALFlusher returns the flusher of WAL name, whose stream has size
// bytes already in dst's file: the first byte given to Write is at stream
// offset size.
func newWALFlusher(dst io.Writer, name string, bufs *walBuffers, size int64) *walFlusher {
	f := &walFlusher{dst: dst, name: name, bufs: bufs, hurry: make(chan struct{}, 1), done: make(chan struct{})}
	f.accepted, f.written, f.safe = size, size, size
	f.work.L, f.drained.L = &f.mu, &f.mu
	return f
}

// start takes the buffers and starts the goroutine, at the first Write:
// a memtable switch creates the new WAL before it closes the old one, so
// only then are the old WAL's buffers back in f.bufs.
func (f *walFlusher) start() {
	f.started = true
	f.buf, f.spare = f.bufs.get(), f.bufs.get()
	if f.buf == nil {
		f.buf = make([]byte, 0, 2*walFlushBytes)
	}
	go f.run()
}

// Write buffers p for the flusher. It waits while walBufferLimit bytes or
// more are buffered or being written, and fails once a write of the
// flusher has failed.
func (f *walFlusher) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.err == nil && len(f.buf)+f.inFlight >= walBufferLimit {
		f.drained.Wait()
	}
	if f.err != nil {
		return 0, f.err
	}
	if f.closing {
		return 0, fmt.Errorf("kv: WAL %s written after close", f.name)
	}
	if !f.started {
		f.start()
	}
	f.buf = append(f.buf, p...)
	f.accepted += int64(len(p))
	f.wakeLocked(len(f.buf) >= walFlushBytes)
	return len(p), nil
}

// wakeLocked wakes the flusher if it waits for bytes, and cuts its delay
// short if now is set.
func (f *walFlusher) wakeLocked(now bool) {
	switch {
	case f.idle:
		f.work.Signal()
	case now && f.delaying:
		select {
		case f.hurry <- struct{}{}:
		default:
		}
	}
}

// run is the flusher goroutine: it writes out the buffer until the WAL
// closes or a write fails.
func (f *walFlusher) run() {
	defer close(f.done)
	timer := time.NewTimer(walFlushDelay)
	timer.Stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.err == nil {
		for len(f.buf) == 0 && !f.closing {
			f.idle = true
			f.work.Wait()
			f.idle = false
		}
		if len(f.buf) == 0 {
			return
		}
		f.delay(timer)
		data := f.buf
		f.buf, f.spare, f.inFlight = f.spare[:0], nil, len(data)
		f.mu.Unlock()
		n, err := f.dst.Write(data)
		f.mu.Lock()
		f.inFlight = 0
		f.advanceLocked(int64(n))
		if cap(data) <= maxSpareBuffer {
			f.spare = data[:0]
		}
		if err != nil {
			f.err = fmt.Errorf("kv: writing WAL %s in the background: %w", f.name, err)
			f.buf = nil
		}
		f.drained.Broadcast()
	}
}

// advanceLocked counts n more bytes in the file, and the records they
// complete.
func (f *walFlusher) advanceLocked(n int64) {
	f.written += n
	for f.head < len(f.ends) && f.ends[f.head] <= f.written {
		f.safe = f.ends[f.head]
		f.head++
	}
}

// commit takes the stream offsets at which the records of a group end,
// ascending, once Write has been given all their bytes, and waits until
// the acknowledged records not wholly in the file would hold at most
// walBufferLimit bytes with them: then they may be acknowledged. It
// returns the flusher's error, if any.
func (f *walFlusher) commit(ends []int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.head > 0 && f.head >= len(f.ends)/2 {
		f.ends = f.ends[:copy(f.ends, f.ends[f.head:])]
		f.head = 0
	}
	f.ends = append(f.ends, ends...)
	f.advanceLocked(0)
	if f.err != nil || f.accepted-f.safe <= walBufferLimit {
		return f.err
	}
	f.draining++
	defer func() { f.draining-- }()
	f.wakeLocked(true)
	for f.err == nil && f.accepted-f.safe > walBufferLimit {
		f.drained.Wait()
	}
	return f.err
}

// delay waits, with f.mu released, for walFlushBytes to pile up in the
// buffer, up to walFlushDelay, unless a drain or close waits already.
func (f *walFlusher) delay(timer *time.Timer) {
	if len(f.buf) >= walFlushBytes || f.draining > 0 || f.closing {
		return
	}
	select {
	case <-f.hurry: // a stale hurry, sent after the last delay ended
	default:
	}
	f.delaying = true
	f.mu.Unlock()
	timer.Reset(walFlushDelay)
	select {
	case <-timer.C:
	case <-f.hurry:
		timer.Stop()
	}
	f.mu.Lock()
	f.delaying = false
}

// drain waits until every byte buffered so far is written to the file, and
// returns the flusher's error, if any. It waits for those bytes only, not
// for the buffer to empty: under a steady stream of writes it may never
// be empty, and a Sync write would wait until the loss bound held the
// writers back.
func (f *walFlusher) drain() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.draining++
	defer func() { f.draining-- }()
	f.wakeLocked(true)
	for to := f.accepted; f.err == nil && f.written < to; {
		f.drained.Wait()
	}
	return f.err
}

// close drains the buffer and stops the goroutine; Write fails after it.
// It returns the flusher's error, if any.
func (f *walFlusher) close() error {
	err := f.drain()
	f.mu.Lock()
	f.closing = true
	started := f.started
	f.work.Signal()
	f.mu.Unlock()
	if started {
		<-f.done
	}
	f.mu.Lock()
	f.bufs.put(f.buf)
	f.bufs.put(f.spare)
	f.buf, f.spare = nil, nil
	f.mu.Unlock()
	return err
}
