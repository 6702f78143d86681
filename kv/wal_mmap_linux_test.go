//go:build linux

package kv

import (
	"syscall"
	"testing"
)

// TestWALMmapWriter_FaultIsError: a store that faults (the file was
// truncated under the mapping) is an error, not a crash.
func TestWALMmapWriter_FaultIsError(t *testing.T) {
	_, f, w := createMappedWAL(t, 1<<20, fallocate)
	if _, err := w.Write([]byte("before")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Ftruncate(int(f.Fd()), 0); err != nil {
		t.Fatal(err)
	}
	_, err := w.Write(make([]byte, 2*pageSize))
	if err == nil {
		t.Fatal("a write into a truncated mapping succeeded")
	}
	t.Logf("write after truncation: %v", err)
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
}
