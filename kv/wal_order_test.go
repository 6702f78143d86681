package kv

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
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
// and settle waits until every record reserved is complete.
func TestWALOrder_CompletesInStreamOrder(t *testing.T) {
	var o walOrder
	o.start(100)
	o.reserve(130) // three records of 10 bytes
	var mu sync.Mutex
	var stored []int
	complete := func(i int) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			start := 100 + int64(i)*10
			err := o.complete(start, start+10, func() error {
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
		if err := o.settle(func() { t.Error("settle drained the writers of an order that did not stop") }); err != nil {
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
// complete as before; settle returns the failure once the writers that
// reserved records are drained, and not before.
func TestWALOrder_FailureStops(t *testing.T) {
	var o walOrder
	o.start(0)
	o.reserve(30) // three records of 10 bytes
	failure := errors.New("a fault")
	third := make(chan error, 1)
	go func() {
		third <- o.complete(20, 30, func() error {
			t.Error("a record past the failed one was stored")
			return nil
		})
	}()
	o.fail(failure) // the second record's encoding failed
	if err := <-third; !errors.Is(err, failure) {
		t.Fatalf("the third record's completion returned %v, want the failure", err)
	}
	stored := false
	if err := o.complete(0, 10, func() error { stored = true; return nil }); err != nil || !stored {
		t.Fatalf("the first record, before the failure: stored %v, %v", stored, err)
	}
	drained := make(chan struct{})
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		if err := o.settle(func() { <-drained }); !errors.Is(err, failure) {
			t.Errorf("settle returned %v, want the failure", err)
		}
	}()
	if !stillRunning(settled) {
		t.Fatal("settled before the writers were drained")
	}
	close(drained)
	<-settled
	if err := o.wait(10); err != nil {
		t.Fatalf("a wait for the bytes before the failure: %v", err)
	}
}

// reserveForWriter reserves batch's place in l's mapping as append does
// for a writer whose record follows one still being stored: the writer
// encodes it, out of the commit pipeline's mu, and whoever publishes it
// completes it.
func reserveForWriter(t *testing.T, l *walWriter, batch []byte) mappedRecord {
	t.Helper()
	r, dst, ok := l.direct.reserveRecord(l.w, len(batch))
	if !ok {
		t.Fatal("no room reserved in the mapping")
	}
	l.order.reserve(r.End)
	return mappedRecord{log: l, r: r, dst: dst}
}

// TestWALMmap_IncompleteRecordHoldsBackLaterOnes follows records through
// a mapped WAL as concurrent writers store them: a NoSync record whose
// writer has its place in the mapping but has not completed it, two more
// NoSync ones, which append then only reserves too, and a Sync one for
// the sink. While the first is incomplete, the second's completion and
// the sink's write wait for it, and the file, read as a crash would leave
// it, ends before the first: a torn tail, not corruption. Once it
// completes, everything follows.
func TestWALMmap_IncompleteRecordHoldsBackLaterOnes(t *testing.T) {
	d := openMapped(t, t.TempDir(), false)
	defer d.Close()
	l, name := createMappedLog(t, d)
	var m dbMetrics
	recs := []mappedRecord{reserveForWriter(t, l, testRecord(0))}
	for i := 1; i < 3; i++ {
		var mapped mappedRecord
		if _, copied, err := l.append(testRecord(i), false, false, &m, &mapped); err != nil || copied || mapped.log == nil {
			t.Fatalf("record %d, behind an incomplete one: copied %v, reserved %v, %v", i, copied, mapped.log != nil, err)
		}
		recs = append(recs, mapped)
	}
	for i := range recs {
		if err := recs[i].encode(testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	second := make(chan struct{})
	go func() {
		defer close(second)
		if err := recs[1].complete(); err != nil {
			t.Error(err)
		}
	}()
	var mapped mappedRecord
	end, copied, err := l.append(testRecord(3), true, false, &m, &mapped)
	if err != nil || copied || mapped.log != nil {
		t.Fatalf("the Sync record: copied %v, reserved %v, %v", copied, mapped.log != nil, err)
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
	closeAndCheckLog(t, l, name, 4)
}

// TestWALMmap_WritersEncodeTheirOwnRecords: writers that overlap have
// their records only reserved under the commit pipeline's mu and encode
// them themselves, and a copy of the store taken while it is open, as a
// crash of the process leaves it, holds every write acknowledged.
func TestWALMmap_WritersEncodeTheirOwnRecords(t *testing.T) {
	dir := t.TempDir()
	opts := mmapTestOptions(false)
	opts.MemTableSize = 64 << 20 // one WAL throughout
	d, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.commit.log.direct == nil {
		t.Skipf("no mapped WAL here: writer %T", d.commit.log.space)
	}
	// Whether writers overlap is the scheduler's choice: on a busy
	// machine one round of them may take turns throughout, so rounds go
	// on, each with keys of its own, until one overlapped.
	const writers, each, maxRounds = 4, 3000, 20
	rounds := 0
	for reserved := int64(0); reserved == 0; rounds++ {
		if rounds == maxRounds {
			t.Fatalf("no record was left to its writer to encode in %d rounds: the writers never overlapped", maxRounds)
		}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					k := encodeOwnKey(rounds, w, i)
					if err := d.Set(k, k, NoSync); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		d.commit.runExclusive(func() error {
			reserved = d.commit.log.order.reservedEnd
			return nil
		})
	}
	c, err := Open(copyOpenDir(t, d, dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for r := range rounds {
		for w := range writers {
			for i := range each {
				k := encodeOwnKey(r, w, i)
				if v, err := c.Get(k); err != nil || !bytes.Equal(v, k) {
					t.Fatalf("%s in the copy: %q, %v", k, v, err)
				}
			}
		}
	}
}

// encodeOwnKey is the key, and value, of TestWALMmap_WritersEncodeTheirOwnRecords's
// round r, writer w, write i.
func encodeOwnKey(r, w, i int) []byte { return []byte(fmt.Sprintf("r%d-w%d-%05d", r, w, i)) }
