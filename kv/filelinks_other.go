//go:build !unix

package kv

import "github.com/cockroachdb/pebble/vfs"

// unlinked reports false: where files have no link count to tell by, a
// file removed while open goes unnoticed.
func unlinked(vfs.File) bool { return false }
