package kv

import (
	"sync"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// cleaner deletes files the store no longer needs: tables no Version holds,
// WALs whose memtables are flushed, replaced MANIFESTs. Once the DB is
// closed it deletes nothing, since another DB may own the directory by then;
// the next Open removes whatever was left (deleteObsoleteFiles).
type cleaner struct {
	mu       sync.Mutex
	disabled bool
}

// disable stops all further deletions. Called by Close.
func (c *cleaner) disable() {
	c.mu.Lock()
	c.disabled = true
	c.mu.Unlock()
}

// deleteTables evicts the tables from the table and block caches and
// deletes their files.
func (c *cleaner) deleteTables(d *DB, files []*manifest.FileMetadata) {
	if len(files) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disabled {
		return
	}
	for _, f := range files {
		d.tableCache.evict(f.FileNum)
		c.removeLocked(d, base.FileTypeTable, f.FileNum)
	}
}

// deleteFile deletes one file of the store.
func (c *cleaner) deleteFile(d *DB, typ base.FileType, num base.FileNum) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.disabled {
		c.removeLocked(d, typ, num)
	}
}

// removeLocked removes a file. A failure is ignored: the file is garbage
// either way, and the next Open tries again.
func (c *cleaner) removeLocked(d *DB, typ base.FileType, num base.FileNum) {
	err := d.fs.Remove(d.path(base.MakeFilename(typ, num)))
	d.fileDeleted(typ, num, err)
	if err != nil {
		return
	}
	if typ == base.FileTypeTable {
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
			d.cleaner.deleteFile(d, typ, num)
		}
	}
}
