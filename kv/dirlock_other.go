//go:build !unix

package kv

import "github.com/cockroachdb/pebble/vfs"

// lockFileID reports no identity: where files have no device and inode
// to tell them by, a store's LOCK is only what vfs.FS.Lock makes it.
func lockFileID(vfs.FS, string) (fileID, bool, error) { return fileID{}, false, nil }
