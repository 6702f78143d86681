package kv

import (
	"runtime"
	"sync/atomic"
)

// walOrder keeps a mapped WAL's file valid in stream order while writers
// store their records into it at once.
//
// Where writers overlap (see walWriter.append), a NoSync record bound
// for the mapping is only reserved under the commit pipeline's mu
// (record.Writer.Reserve): its writer encodes it into its place
// afterwards, concurrently with the others, each chunk's length left
// invalid (record.Reservation). The record is completed, its lengths
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
// until no goroutine stores into a reserved place any more (settle).
//
// A record whose encoding fails (a memory fault: see wal_mmap.go) stops
// the order: nothing past it is ever stored, its writer's error stops
// writes, and whoever waits for its turn gets the error.
//
// The fields that reservations change, under the mu, and those that
// publication changes, as it completes each record, are on cache lines
// of their own: on many cores a reservation, which every other writer
// waits for, then does not wait for the line that the last publication
// changed.
type walOrder struct {
	_ cacheLinePad
	// reservedEnd is where the last record reserved ends, and wholeTo
	// where the last record stored whole under the commit pipeline's mu
	// ends, which done is not moved past until something waits for it
	// (catchUp). The mu guards both.
	reservedEnd, wholeTo int64
	_                    cacheLinePad
	// done is the stream offset up to which every byte is whole in the
	// file.
	done atomic.Int64
	// err is what stopped the order, once it stopped.
	err     stickyError
	waiting waiters
	_       cacheLinePad
}

// orderSpins is how many times a goroutine waiting for its turn yields
// before it parks: the records before it are usually a few writers'
// inserts away from complete.
const orderSpins = 16

// start readies o for a stream of size bytes, all whole in the file.
func (o *walOrder) start(size int64) { o.done.Store(size) }

// pending reports whether a record reserved is not complete yet: then a
// record appended may not be stored whole, ahead of it. Called under the
// commit pipeline's mu.
func (o *walOrder) pending() bool { return o.done.Load() < o.reservedEnd }

// wrote notes a record stored whole under the commit pipeline's mu, with
// none pending, ending at stream offset end. Writers that do not overlap
// store every record so: that costs no atomic store.
func (o *walOrder) wrote(end int64) { o.wholeTo = end }

// catchUp moves done past the records stored whole, if none is pending:
// before a record is reserved, or bytes are put into the file another
// way, each of which waits for done. Called under the commit pipeline's
// mu.
//
// Unless a record was stored whole after the last one reserved
// (wholeTo past reservedEnd), there is nothing to do: either a record
// reserved is pending, or done has reached reservedEnd, and so wholeTo.
// Reservations in a row then do not read done, which publication
// changes.
func (o *walOrder) catchUp() {
	if o.wholeTo <= o.reservedEnd {
		return
	}
	if !o.pending() && o.done.Load() < o.wholeTo {
		o.advance(o.wholeTo)
	}
}

// reserve notes a record reserved, ending at stream offset end. Called
// under the commit pipeline's mu.
func (o *walOrder) reserve(end int64) {
	o.catchUp()
	o.reservedEnd = end
}

// advance moves the order past the bytes up to end, made whole.
func (o *walOrder) advance(end int64) {
	o.done.Store(end)
	o.waiting.wake()
}

// complete waits until every byte before start is whole in the file,
// then runs store, which makes the bytes from start to end whole, and
// moves the order past them. It returns the error that stopped the order
// before start, store's included, in which case store may not have run.
func (o *walOrder) complete(start, end int64, store func() error) error {
	if err := o.wait(start); err != nil {
		return err
	}
	if err := store(); err != nil {
		o.fail(err)
		return err
	}
	o.advance(end)
	return nil
}

// wait returns once every byte before off is whole in the file, or the
// order stopped before off, with its error.
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

// settle returns once no goroutine stores into a reserved place any more:
// once every record reserved is complete or, if the order stopped before
// one, once drain returns (every writer that reserved one published, so
// its record encoded, and completed or given up: see publishReady).
// It returns the error that stopped the order, if a record reserved is
// not complete. Called under the commit pipeline's mu, so that nothing
// is reserved meanwhile.
func (o *walOrder) settle(drain func()) error {
	if err := o.wait(o.reservedEnd); err != nil {
		drain()
		return err
	}
	return nil
}

// fail stops the order with err, unless it stopped already, and wakes
// whoever waits for it.
func (o *walOrder) fail(err error) {
	o.err.set(err)
	o.waiting.wake()
}
