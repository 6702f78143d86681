//go:build unix

package kv

import (
	"errors"
	"os"
	"syscall"

	"github.com/cockroachdb/pebble/vfs"
)

// fileIdentity returns the identity of the file or directory at path, if
// fs is backed by the operating system's files (its Stat reports a
// syscall.Stat_t) and the file exists, or the error of a Stat that
// failed otherwise.
func fileIdentity(fs vfs.FS, path string) (fileID, bool, error) {
	fi, err := fs.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fileID{}, false, nil
	case err != nil:
		return fileID{}, false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false, nil
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true, nil
}
