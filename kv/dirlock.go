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
// directory's identity (device and inode, where the file system reports
// them: see fileIdentity), and an Open of one registered is refused
// before it touches the LOCK file, as closing any descriptor of a file
// drops every fcntl lock the process holds on it. The directory, not the
// LOCK file: a LOCK removed while the store is open (by hand, or by a
// cleanup script) is created afresh by the next Open, a new file that
// no fcntl lock or registration of the old one covers, while the
// directory stays the same. For the same reason a lock is released
// before its entry is removed, so that no Open locks the file while its
// last holder's descriptor is still open.
//
// Another process is kept out by the fcntl lock alone: one that opens
// the store after its LOCK was removed takes a lock on the new file, as
// with LevelDB and Pebble.

// fileID is a file's identity: its device and inode.
type fileID struct{ dev, ino uint64 }

// openLocks registers the directories of the stores open in this
// process.
var openLocks struct {
	mu   sync.Mutex
	held map[fileID]bool
}

// lockStore takes the LOCK file at path, in the store's directory, for
// d: it fails if a store open in this process has the directory under
// any path, or if fs.Lock refuses the file.
func (d *DB) lockStore(path string) (io.Closer, error) {
	openLocks.mu.Lock()
	defer openLocks.mu.Unlock()
	id, ok, err := fileIdentity(d.fs, d.dirname)
	switch {
	case err != nil:
		return nil, fmt.Errorf("kv: locking %s: %w", path, err)
	case ok && openLocks.held[id]:
		return nil, fmt.Errorf("kv: %s is in use by another DB of this process (it has the directory open under another path)", d.dirname)
	}
	l, err := d.fs.Lock(path)
	if err != nil {
		return nil, fmt.Errorf("kv: %s is in use by another DB (locking %s: %w)", d.dirname, path, err)
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

// storeLock is a LOCK file's lock, its directory registered in
// openLocks.
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
