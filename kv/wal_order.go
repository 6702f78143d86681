package kv

import (
	"runtime"
	"sync/atomic"
)

// walOrder keeps a mapped WAL's file valid in stream order while writers
// store their records into it at once.
//
// A NoSync record bound for the mapping is only reserved under the commit
// pipeline's mu (record.Writer.Reserve): its writer encodes it into its
// place afterwards, concurrently with the others, each chunk's length
// left invalid (record.Reservation). The record is completed, its lengths
// stored, by whoever publishes its writer, once every byte before it is
// whole in the file. So the file never holds a valid record after one
// that is not: a process killed at any point leaves a torn tail, as when
// one writer copied every record under the mu, and recovery reads it so.
// A writer is acknowledged once published, so once its record, and every
// record before it, is complete in the page cache: the default mode's
// promise.
//
// Everything else that puts bytes into the file waits its turn the same
// way (complete): the sink's writes with pwrite(2), the records that the
// route copies while mapping the next chunk, which then retires the last
// chunk's mapping. Closing the WAL, or copying it for a checkpoint, waits
// until every record reserved has been completed or given up (settle).
//
// A record whose encoding fails (a memory fault: see wal_mmap.go) stops
// the order: nothing past it is ever stored, its writer's error stops
// writes, and whoever waits for its turn gets the error.
type walOrder struct {
	_ cacheLinePad
	// done is the stream offset up to which every byte is whole in the
	// file.
	done atomic.Int64
	// settled counts the records reserved that were completed or given
	// up, so that no goroutine stores into their place any more.
	settled atomic.Int64
	// err is what stopped the order, once it stopped.
	err stickyError
	// reserved counts the records reserved; the commit pipeline's mu
	// guards it.
	reserved int64
	waiting  waiters
	_        cacheLinePad
}

// orderSpins is how many times a writer waiting for its turn yields
// before it parks: the writer before it is usually storing a few bytes.
const orderSpins = 16

// start readies o for a stream of size bytes, all whole in the file.
func (o *walOrder) start(size int64) { o.done.Store(size) }

// reserve counts a record reserved. Called under the commit pipeline's
// mu.
func (o *walOrder) reserve() { o.reserved++ }

// complete waits until every byte before start is whole in the file,
// then runs store, which makes the bytes from start to end whole, and
// moves the order past them. It returns the error that stopped the
// order, store's included, in which case store may not have run.
func (o *walOrder) complete(start, end int64, store func() error) error {
	if err := o.wait(start); err != nil {
		return err
	}
	if err := store(); err != nil {
		o.fail(err)
		return err
	}
	o.done.Store(end)
	o.waiting.wake()
	return nil
}

// completeReserved completes a reserved record, as complete does, if it
// was encoded, and counts it settled either way: its place is then no
// goroutine's to store into. It returns the error that stopped the
// order, if the record is not complete.
func (o *walOrder) completeReserved(start, end int64, encoded bool, store func() error) error {
	err := o.err.get() // its encoding's failure
	if encoded {
		err = o.complete(start, end, store)
	}
	o.settled.Add(1)
	o.waiting.wake()
	return err
}

// wait returns once every byte before off is whole in the file, or the
// order stopped, with its error.
func (o *walOrder) wait(off int64) error {
	if o.done.Load() >= off {
		return nil
	}
	ready := func() bool { return o.done.Load() >= off || o.err.get() != nil }
	for i := 0; i < orderSpins && !ready(); i++ {
		runtime.Gosched()
	}
	if !ready() {
		o.waiting.waitUntil(ready)
	}
	if o.done.Load() >= off {
		return nil // whatever stopped the order came after off
	}
	return o.err.get()
}

// settle waits until every record reserved is completed or given up, so
// that nothing stores into the mapping any more, and returns the error
// that stopped the order, if any. Called under the commit pipeline's mu.
func (o *walOrder) settle() error {
	reserved := o.reserved
	o.waiting.waitUntil(func() bool { return o.settled.Load() >= reserved })
	return o.err.get()
}

// fail stops the order with err, unless it stopped already, and wakes
// whoever waits for it.
func (o *walOrder) fail(err error) {
	o.err.set(err)
	o.waiting.wake()
}
