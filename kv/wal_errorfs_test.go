package kv_test

import (
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// wrapFaults returns fs with inj's faults injected, as errorfs.Wrap does,
// and also on SyncData, which the WAL syncs with and errorfs passes
// through unfailed: a file's SyncData is its Sync (as in vfs.MemFS),
// failing as errorfs.OpFileSync.
func wrapFaults(fs vfs.FS, inj errorfs.Injector) vfs.FS {
	return syncDataFS{errorfs.Wrap(fs, inj)}
}

// syncDataFS routes its files' SyncData to their Sync.
type syncDataFS struct{ vfs.FS }

type syncDataFile struct{ vfs.File }

func (f syncDataFile) SyncData() error { return f.Sync() }

func wrapSyncData(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return syncDataFile{f}, nil
}

func (fs syncDataFS) Create(name string) (vfs.File, error) {
	return wrapSyncData(fs.FS.Create(name))
}

func (fs syncDataFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return wrapSyncData(fs.FS.Open(name, opts...))
}

func (fs syncDataFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return wrapSyncData(fs.FS.OpenReadWrite(name, opts...))
}

func (fs syncDataFS) OpenDir(name string) (vfs.File, error) {
	return wrapSyncData(fs.FS.OpenDir(name))
}

func (fs syncDataFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	return wrapSyncData(fs.FS.ReuseForWrite(oldname, newname))
}
