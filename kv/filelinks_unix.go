//go:build unix

package kv

import (
	"syscall"

	"github.com/cockroachdb/pebble/vfs"
)

// unlinked reports whether f, a file of the operating system's (its Stat
// reports a syscall.Stat_t), is in no directory any more: removed, or its
// directory removed, while open. Its writes, synced or not, are then in
// no file an Open will find. Where Stat tells nothing, false; where it
// fails, its error, as the file cannot be vouched for.
func unlinked(f vfs.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0, nil
}
