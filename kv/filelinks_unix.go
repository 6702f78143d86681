//go:build unix

package kv

import (
	"syscall"

	"github.com/cockroachdb/pebble/vfs"
)

// unlinked reports whether f, a file of the operating system's (its Stat
// reports a syscall.Stat_t), is in no directory any more: removed, or its
// directory removed, while open. Its writes, synced or not, are then in
// no file an Open will find. Where Stat fails or tells nothing, false.
func unlinked(f vfs.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0
}
