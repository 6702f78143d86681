package kv

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
)

// stillRunning reports whether done is still open after a moment: a wait
// that must not end yet.
func stillRunning(done <-chan struct{}) bool {
	select {
	case <-done:
		return false
	case <-time.After(20 * time.Millisecond):
		return true
	}
}

// TestWALOrder_CompletesInStreamOrder: records completed out of order
// each wait for those before them, so their stores run in stream order,
// and settle waits until every record reserved is settled.
func TestWALOrder_CompletesInStreamOrder(t *testing.T) {
	var o walOrder
	o.start(100)
	for range 3 {
		o.reserve()
	}
	var mu sync.Mutex
	var stored []int
	complete := func(i int) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			start := 100 + int64(i)*10
			err := o.completeReserved(start, start+10, true, func() error {
				mu.Lock()
				stored = append(stored, i)
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
		return done
	}
	third, second := complete(2), complete(1)
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		if err := o.settle(); err != nil {
			t.Error(err)
		}
	}()
	if !stillRunning(third) || !stillRunning(second) || !stillRunning(settled) {
		t.Fatal("records completed, or the order settled, before the first record was")
	}
	<-complete(0)
	<-second
	<-third
	<-settled
	if !slices.Equal(stored, []int{0, 1, 2}) {
		t.Fatalf("stored in the order %v, want [0 1 2]", stored)
	}
	if got := o.done.Load(); got != 130 {
		t.Fatalf("whole up to %d, want 130", got)
	}
}

// TestWALOrder_FailureStops: a record whose encoding failed stops the
// order. The records after it are never stored, and their completion,
// like any wait past it, returns the failure; the records before it
// complete as before; settle still waits for every record to settle.
func TestWALOrder_FailureStops(t *testing.T) {
	var o walOrder
	o.start(0)
	for range 3 {
		o.reserve()
	}
	failure := errors.New("a fault")
	third := make(chan error, 1)
	go func() {
		third <- o.completeReserved(20, 30, true, func() error {
			t.Error("a record past the failed one was stored")
			return nil
		})
	}()
	o.fail(failure) // the second record's encoding failed
	if err := <-third; !errors.Is(err, failure) {
		t.Fatalf("the third record's completion returned %v, want the failure", err)
	}
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		if err := o.settle(); !errors.Is(err, failure) {
			t.Errorf("settle returned %v, want the failure", err)
		}
	}()
	if !stillRunning(settled) {
		t.Fatal("settled while two records were unsettled")
	}
	stored := false
	if err := o.completeReserved(0, 10, true, func() error { stored = true; return nil }); err != nil || !stored {
		t.Fatalf("the first record, before the failure: stored %v, %v", stored, err)
	}
	if err := o.completeReserved(10, 20, false, nil); !errors.Is(err, failure) {
		t.Fatalf("the failed record's completion returned %v, want the failure", err)
	}
	<-settled
	if err := o.wait(10); err != nil {
		t.Fatalf("a wait for the bytes before the failure: %v", err)
	}
}

// TestWALMmap_IncompleteRecordHoldsBackLaterOnes follows records through
// a mapped WAL as concurrent writers store them: three NoSync records
// reserved and encoded, then a Sync one for the sink. While the first is
// incomplete, the second's completion and the sink's write wait for it,
// and the file, read as a crash would leave it, ends before the first:
// a torn tail, not corruption. Once it completes, everything follows.
func TestWALMmap_IncompleteRecordHoldsBackLaterOnes(t *testing.T) {
	d := openMapped(t, t.TempDir(), false)
	defer d.Close()
	name := filepath.Join(t.TempDir(), "000001.log")
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	l := d.newWALWriter(1, name, f, f, 0, 0, d.opts.MemTableSize, true)
	if l.direct == nil {
		l.abandon()
		t.Skipf("no mapped WAL here: writer %T", l.space)
	}
	var m dbMetrics
	var recs []mappedRecord
	for i := range 3 {
		_, mapped, _, err := l.append(testRecord(i), false, &m)
		if err != nil {
			t.Fatal(err)
		}
		if mapped.log == nil {
			t.Fatalf("record %d was not reserved in the mapping", i)
		}
		if err := mapped.encode(testRecord(i)); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, mapped)
	}
	second := make(chan struct{})
	go func() {
		defer close(second)
		if err := recs[1].complete(); err != nil {
			t.Error(err)
		}
	}()
	end, mapped, _, err := l.append(testRecord(3), true, &m)
	if err != nil || mapped.log != nil {
		t.Fatalf("the Sync record: reserved in the mapping %v, %v", mapped.log != nil, err)
	}
	written := make(chan struct{})
	go func() {
		defer close(written)
		if err := l.sink.wait(end, true); err != nil {
			t.Error(err)
		}
	}()
	if !stillRunning(second) || !stillRunning(written) {
		t.Fatal("a record after an incomplete one was completed, or written by the sink")
	}
	if l.direct.pwrites != 0 {
		t.Fatalf("%d pwrites while the first record was incomplete, want 0", l.direct.pwrites)
	}
	if got := readLog(t, name); len(got) != 0 {
		t.Fatalf("%d records read while the first was incomplete, want 0", len(got))
	}
	if err := recs[0].complete(); err != nil {
		t.Fatal(err)
	}
	<-second
	if err := recs[2].complete(); err != nil {
		t.Fatal(err)
	}
	<-written
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	got := readLog(t, name)
	if len(got) != 4 {
		t.Fatalf("%d records read back, want 4", len(got))
	}
	for i, rec := range got {
		if !bytes.Equal(rec, testRecord(i)) {
			t.Fatalf("record %d reads back as %.40q", i, rec)
		}
	}
}
