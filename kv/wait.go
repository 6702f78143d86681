package kv

import "context"

// WaitIdle waits until the store has no background work running or due:
// no memtable waiting for a flush or being flushed, no compaction running,
// none that the store's automatic compactions would start now (none at
// all under Options.DisableAutomaticCompactions), and no obsolete file
// waiting to be deleted. It is what a benchmark or a bulk load calls
// before measuring a settled store, and what a test calls to see the shape
// compactions leave.
//
// Writes made meanwhile may make more work due; WaitIdle returns once it
// sees the store idle, not when writes stop. It returns nil when the store
// is idle, ctx.Err() if ctx ends first, ErrClosed after Close, and the
// first background error when a flush or compaction has failed.
func (d *DB) WaitIdle(ctx context.Context) error {
	// A done context must wake the wait below, which cond.Wait cannot
	// observe by itself.
	stop := context.AfterFunc(ctx, func() {
		d.mu.Lock()
		d.mu.cond.Broadcast()
		d.mu.Unlock()
	})
	defer stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		switch {
		case d.closed.Load():
			return ErrClosed
		case d.mu.bgErr != nil:
			return d.mu.bgErr
		case d.idleLocked():
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		}
		d.mu.cond.Wait()
	}
}

// idleLocked reports whether no flush or compaction runs or is due, no
// pass over the filters held under a cap (filterHolder) runs, and no file
// waits to be deleted (cleaner). It asks the scheduler to start whatever
// compaction is due, so "due" is the scheduler's own rule, then reports
// whether it started none.
func (d *DB) idleLocked() bool {
	if d.writingTablesLocked() || d.filterMem.running || !d.cleaner.isIdle() {
		return false
	}
	d.maybeScheduleCompactionLocked()
	return len(d.mu.compacting) == 0
}

// writingTablesLocked reports whether a flush or a compaction runs, or a
// flush is due. d.mu is held.
func (d *DB) writingTablesLocked() bool {
	return d.mu.flushing || d.flushDueLocked() || d.mu.manual > 0 || len(d.mu.compacting) > 0
}

// workEndedLocked is what a flush loop, a compaction or a manual
// operation (Compact, Ingest) does as it ends: it starts the compactions
// now due, asks for a pass over the filters held under a cap once no
// work is left (filterHolder.workEndedLocked), and wakes the waiters.
// d.mu is held.
func (d *DB) workEndedLocked() {
	d.maybeScheduleCompactionLocked()
	d.filterMem.workEndedLocked()
	d.mu.cond.Broadcast()
}
