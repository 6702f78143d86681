package kv

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stalledFile is a WAL file whose writes block until released; it keeps
// what it was given.
type stalledFile struct {
	release chan struct{}
	mu      sync.Mutex
	got     bytes.Buffer
}

func (w *stalledFile) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(p)
}

// TestWALFlusher_BoundsUnwritten stalls the file under a writer that
// keeps writing 1 KiB records: once the bytes buffered and those the
// flusher is writing reach walBufferLimit, the writer waits, so no more
// than that (and the record that crossed it) is acknowledged without
// being in the file, what a process crash can lose. Once the file moves
// again, every byte reaches it, in order.
func TestWALFlusher_BoundsUnwritten(t *testing.T) {
	file := &stalledFile{release: make(chan struct{})}
	f := newWALFlusher(file, "test", &walBuffers{})
	const record = 1 << 10
	var acked atomic.Int64
	var want bytes.Buffer
	for i := range 2 * walBufferLimit / record {
		want.Write(bytes.Repeat([]byte{byte(i)}, record))
	}
	done := make(chan error, 1)
	go func() {
		p := want.Bytes()
		for len(p) > 0 {
			if _, err := f.Write(p[:record]); err != nil {
				done <- err
				return
			}
			acked.Add(record)
			p = p[record:]
		}
		done <- nil
	}()

	bound := int64(walBufferLimit + record)
	deadline := time.Now().Add(10 * time.Second)
	for { // until the writer waits: the file has nothing yet
		f.mu.Lock()
		pending := len(f.buf) + f.inFlight
		f.mu.Unlock()
		if pending >= walBufferLimit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer never reached the limit: %d bytes pending", pending)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // a writer not held back would go on
	if n := acked.Load(); n > bound {
		t.Fatalf("%d bytes acknowledged with none in the file, over the bound of %d", n, bound)
	}

	close(file.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := f.close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file.got.Bytes(), want.Bytes()) {
		t.Fatalf("the file got %d bytes, not the %d written in order", file.got.Len(), want.Len())
	}
}
