//go:build unix

package kv

import (
	"syscall"

	"github.com/cockroachdb/pebble/vfs"
)

// lockFileID returns the identity of the file at path, if fs is backed by
// the operating system's files (its Stat reports a syscall.Stat_t) and
// the file exists.
func lockFileID(fs vfs.FS, path string) (fileID, bool) {
	fi, err := fs.Stat(path)
	if err != nil {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}
