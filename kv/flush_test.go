package kv

import (
	"bytes"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestFlush_KeepsWhatASnapshotTakenDuringItsWaitSees holds a write
// between its reservation and its memtable insert, flushes the memtable
// meanwhile, and takes a snapshot while the flush waits for that write:
// the snapshot sees the older version of the key, in the same memtable,
// and must still see it once the flush is done.
func TestFlush_KeepsWhatASnapshotTakenDuringItsWaitSees(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	stall := make(chan bool, 1) // holds true while the next compare of "k" is to stall
	cmp := *sstable.DefaultComparer
	compare := cmp.Compare
	cmp.Compare = func(a, b []byte) int {
		if bytes.Equal(a, []byte("k")) || bytes.Equal(b, []byte("k")) {
			select {
			case <-stall:
				entered <- struct{}{}
				<-release
			default:
			}
		}
		return compare(a, b)
	}
	d, err := Open("db", &Options{FS: vfs.NewMem(), Comparer: &cmp, DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Set([]byte("k"), []byte("v1"), NoSync); err != nil {
		t.Fatal(err)
	}
	stall <- true
	wrote, flushed := make(chan error, 1), make(chan error, 1)
	go func() { wrote <- d.Set([]byte("k"), []byte("v2"), NoSync) }()
	<-entered // v2 has its sequence number; its insert waits
	go func() { flushed <- d.Flush() }()
	// Wait until the flush waits for v2's writer.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		d.mu.Lock()
		waiting := len(d.mu.imm) > 0 && d.mu.imm[0].writers.waiters.n.Load() > 0
		d.mu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the flush never waited for the write")
		}
	}
	s := d.NewSnapshot()
	defer s.Close()
	if v, err := s.Get([]byte("k")); err != nil || string(v) != "v1" {
		t.Fatalf("snapshot during the flush: %q, %v; want v1", v, err)
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if n := d.Metrics().Levels[0].NumFiles; n != 1 {
		t.Fatalf("%d tables in L0 after the flush, want 1", n)
	}
	if v, err := s.Get([]byte("k")); err != nil || string(v) != "v1" {
		t.Fatalf("snapshot after the flush: %q, %v; want v1", v, err)
	}
	if v, err := d.Get([]byte("k")); err != nil || string(v) != "v2" {
		t.Fatalf("after the flush: %q, %v; want v2", v, err)
	}
}
