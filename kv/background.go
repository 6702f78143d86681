package kv

import (
	"fmt"
	"runtime/debug"

	"github.com/bloomkv/bloomkv/compaction"
)

// A background goroutine (the flush loop, a compaction) runs the user's
// callbacks: the Comparer's functions, the filter policy's, the FS's. A
// panic there has no caller to recover it and would kill the process, so
// each goroutine defers recoverLocked, which turns the panic into the DB's
// background error, as a failed flush does: writes stop with it, reads go
// on, and Close reports it. For that to hold, d.mu must be held wherever
// such a panic can surface: code that releases d.mu around a callback
// takes it back in a defer (unlockedDo).

// recoverLocked is deferred by a background goroutine that holds d.mu
// when it returns or panics, after the deferred Unlock (so it runs
// first). A panic becomes the background error, wrapping
// compaction.ErrCallbackPanic with the panic's value and stack; cleanup
// then undoes what the goroutine had registered, and waiters wake.
func (d *DB) recoverLocked(work string, cleanup func()) {
	p := recover()
	if p == nil {
		return
	}
	if d.mu.bgErr == nil {
		d.mu.bgErr = callbackPanicError(work, p)
		d.updateWritesUnslowedLocked()
	}
	cleanup()
	d.mu.cond.Broadcast()
}

// recoverCallback is deferred by a function that returns an error through
// err and calls the user's callbacks outside any lock: a panic becomes
// that error.
func recoverCallback(work string, err *error) {
	if p := recover(); p != nil {
		*err = callbackPanicError(work, p)
	}
}

// callbackPanicError is the error a recovered panic p of work becomes.
func callbackPanicError(work string, p any) error {
	return fmt.Errorf("kv: %s: %w: %v\n%s", work, compaction.ErrCallbackPanic, p, debug.Stack())
}

// unlockedDo runs fn with d.mu released, and takes d.mu back when fn
// returns or panics. d.mu is held on entry and exit.
func (d *DB) unlockedDo(fn func()) {
	d.mu.Unlock()
	defer d.mu.Lock()
	fn()
}
