//go:build !unix

package kv

import "github.com/cockroachdb/pebble/vfs"

// fileIdentity reports no identity: where files have no device and inode
// to tell them by, a store is kept only by what vfs.FS.Lock makes of its
// LOCK.
func fileIdentity(vfs.FS, string) (fileID, bool, error) { return fileID{}, false, nil }
