package kv

import (
	"sync"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// cleaner deletes files the store no longer needs: tables no Version holds,
// WALs whose memtables are flushed, replaced MANIFESTs. The deletions run
// on a goroutine of the cleaner's own, started when a file is queued and
// gone once the queue is empty, as Pebble's do: removing a file may take
// the file system milliseconds (freeing a large table's blocks), and
// those who find files obsolete must not wait for it. They are the
// installation of a compaction's or a flush's tables, under d.mu, which a
// memtable switch, and so every writer, waits for; and a reader letting
// go of the last Version that held a table.
//
// Close deletes what is queued, then nothing more, since another DB may
// own the directory by then; the next Open removes whatever was left
// (deleteObsoleteFiles). WaitIdle and Compact wait for the queue to
// empty.
type cleaner struct {
	mu sync.Mutex
	// idle, on mu (set by Open), is signalled when the goroutine leaves,
	// the queue empty.
	idle     sync.Cond
	queue    []obsoleteFile
	running  bool // the goroutine runs
	disabled bool
}

// obsoleteFile is a file queued for deletion.
type obsoleteFile struct {
	typ base.FileType
	num base.FileNum
}

// deleteTables queues the tables' files for deletion, which evicts them
// from the table and block caches first.
func (c *cleaner) deleteTables(d *DB, files []*manifest.FileMetadata) {
	if len(files) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range files {
		c.queueLocked(d, obsoleteFile{base.FileTypeTable, f.FileNum})
	}
}

// deleteFile queues one file of the store for deletion.
func (c *cleaner) deleteFile(d *DB, typ base.FileType, num base.FileNum) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queueLocked(d, obsoleteFile{typ, num})
}

// queueLocked queues f, starting the goroutine if it is not running.
// Nothing is queued once the cleaner is disabled. c.mu is held.
func (c *cleaner) queueLocked(d *DB, f obsoleteFile) {
	if c.disabled {
		return
	}
	c.queue = append(c.queue, f)
	if !c.running {
		c.running = true
		go c.run(d)
	}
}

// run deletes the queued files, in the order queued, until the queue is
// empty, and wakes those waiting for that (waitIdle, and WaitIdle through
// d.mu's cond).
func (c *cleaner) run(d *DB) {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.queue, c.running = nil, false
			c.idle.Broadcast()
			c.mu.Unlock()
			d.mu.Lock()
			d.mu.cond.Broadcast()
			d.mu.Unlock()
			return
		}
		f := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		c.remove(d, f)
	}
}

// isIdle reports whether nothing is queued or being deleted.
func (c *cleaner) isIdle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.running
}

// waitIdle waits until nothing is queued or being deleted.
func (c *cleaner) waitIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waitIdleLocked()
}

// waitIdleLocked is waitIdle with c.mu held.
func (c *cleaner) waitIdleLocked() {
	for c.running {
		c.idle.Wait()
	}
}

// close deletes what is queued, and then nothing more. Called by Close,
// once no flush or compaction runs.
func (c *cleaner) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waitIdleLocked()
	c.disabled = true
}

// remove deletes f, a table evicted from the caches first. A failure is
// ignored: the file is garbage either way, and the next Open tries again.
// A panic of the user's file system becomes the store's background error,
// as it would in a flush or a compaction.
func (c *cleaner) remove(d *DB, f obsoleteFile) {
	defer func() {
		if p := recover(); p != nil {
			d.mu.Lock()
			d.setBackgroundErrorLocked(callbackPanicError("deleting obsolete files", p))
			d.mu.cond.Broadcast()
			d.mu.Unlock()
		}
	}()
	if f.typ == base.FileTypeTable {
		d.tableCache.evict(f.num)
	}
	removeFile(d, f.typ, f.num)
}

// removeFile removes a file of the store, telling the event listener.
func removeFile(d *DB, typ base.FileType, num base.FileNum) {
	err := d.fs.Remove(d.path(base.MakeFilename(typ, num)))
	d.fileDeleted(typ, num, err)
	if err == nil && typ == base.FileTypeTable {
		d.metrics.tablesDeleted.Add(1)
	}
}

// deleteObsoleteFiles removes every file of the directory the current state
// does not need: tables outside the current Version, WALs older than the
// log number (other than the live one), MANIFESTs other than the current
// one, and temp files. Called by Open, when no other reader exists.
func (d *DB) deleteObsoleteFiles() {
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return
	}
	d.mu.Lock()
	live := make(map[base.FileNum]bool)
	for _, files := range d.mu.versions.current.Levels {
		for _, f := range files {
			live[f.FileNum] = true
		}
	}
	logNum, manifestNum := d.mu.versions.logNum, d.mu.versions.manifestNum
	d.mu.Unlock()
	for _, name := range names {
		typ, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		obsolete := false
		switch typ {
		case base.FileTypeTable:
			obsolete = !live[num]
		case base.FileTypeLog:
			obsolete = num < logNum
		case base.FileTypeManifest:
			obsolete = num != manifestNum
		case base.FileTypeTemp:
			obsolete = true
		}
		if obsolete {
			removeFile(d, typ, num)
		}
	}
}
