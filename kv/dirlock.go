package kv

import (
	"fmt"
	"io"
	"sync"
)

// A store's LOCK file keeps a second process from opening the store
// while one has it open: vfs.FS.Lock takes an fcntl(2) lock on it. Within
// one process those locks never conflict, and vfs.Default refuses a
// second Lock only of the same path as spelled: "db" and its absolute
// path, or a symbolic link to it, would both be granted, two DBs would
// append to one store's WAL and MANIFEST, and acknowledged writes would
// be lost. So the stores open in this process are registered by their
// LOCK file's identity (device and inode, where the file system reports
// them: see lockFileID), and an Open of one registered is refused before
// it touches the file, as closing any descriptor of a file drops every
// fcntl lock the process holds on it. For the same reason a lock is
// released before its entry is removed, so that no Open locks the file
// while its last holder's descriptor is still open.

// fileID is a file's identity: its device and inode.
type fileID struct{ dev, ino uint64 }

// openLocks registers the LOCK files of the stores open in this process.
var openLocks struct {
	mu   sync.Mutex
	held map[fileID]bool
}

// lockStore takes the LOCK file at path for d: it fails if a store open
// in this process holds it under any path, or if fs.Lock refuses it.
func (d *DB) lockStore(path string) (io.Closer, error) {
	openLocks.mu.Lock()
	defer openLocks.mu.Unlock()
	id, ok, err := lockFileID(d.fs, path)
	switch {
	case err != nil:
		return nil, fmt.Errorf("kv: locking %s: %w", path, err)
	case ok && openLocks.held[id]:
		return nil, fmt.Errorf("kv: %s is in use by another DB of this process (its %s is locked under another path)", d.dirname, path)
	}
	l, err := d.fs.Lock(path)
	if err != nil {
		return nil, fmt.Errorf("kv: %s is in use by another DB (locking %s: %w)", d.dirname, path, err)
	}
	id, ok, err = lockFileID(d.fs, path)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("kv: locking %s: %w", path, err)
	}
	if !ok {
		return l, nil
	}
	if openLocks.held == nil {
		openLocks.held = make(map[fileID]bool)
	}
	openLocks.held[id] = true
	return &storeLock{Closer: l, id: id}, nil
}

// storeLock is a LOCK file's lock, registered in openLocks.
type storeLock struct {
	io.Closer
	id fileID
}

// Close releases the lock, then removes its entry.
func (l *storeLock) Close() error {
	openLocks.mu.Lock()
	defer openLocks.mu.Unlock()
	err := l.Closer.Close()
	delete(openLocks.held, l.id)
	return err
}
