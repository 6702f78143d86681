package bench

import (
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/vfs"
)

// walSyncFS counts the syncs of the WAL files (*.log) opened for writing
// through it: how a Pebble engine reports Stats.WALSyncs. Pebble v1.1.5
// keeps no count of its own but the samples of its WAL fsync latency
// histogram, which its flusher records after it has woken the writers
// the sync served: read right after a Sync write returns, that count
// may lack the write's own sync. A sync through the file is counted
// before it returns, and so before any writer it serves.
type walSyncFS struct {
	vfs.FS
	syncs *atomic.Int64
}

// Create implements vfs.FS.
func (fs walSyncFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(name, f, err)
}

// ReuseForWrite implements vfs.FS: Pebble recycles WAL files with it.
func (fs walSyncFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return fs.wrap(newname, f, err)
}

// wrap returns f, counting its syncs if name is a WAL's.
func (fs walSyncFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return walSyncFile{File: f, syncs: fs.syncs}, nil
}

// walSyncFile is a WAL file whose syncs walSyncFS counts.
type walSyncFile struct {
	vfs.File
	syncs *atomic.Int64
}

// Sync implements vfs.File.
func (f walSyncFile) Sync() error {
	f.syncs.Add(1)
	return f.File.Sync()
}

// SyncData implements vfs.File.
func (f walSyncFile) SyncData() error {
	f.syncs.Add(1)
	return f.File.SyncData()
}

// SyncTo implements vfs.File.
func (f walSyncFile) SyncTo(length int64) (bool, error) {
	f.syncs.Add(1)
	return f.File.SyncTo(length)
}
