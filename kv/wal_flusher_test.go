package kv

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/cockroachdb/pebble/vfs"
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
// flusher is writing reach walBufferLimit, Write waits, so the memory
// held stays within that (and the record that crossed it). (What a crash
// can lose is bounded by commit; see TestWALFlusher_CommitBoundsLoss.)
// Once the file moves again, every byte reaches it, in order.
func TestWALFlusher_BoundsUnwritten(t *testing.T) {
	file := &stalledFile{release: make(chan struct{})}
	f := newWALFlusher(file, "test", &walBuffers{}, 0)
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

// tricklingFile is a WAL file that takes each write a piece at a time,
// pausing between pieces, as a slow disk or a busy OS does; Len is what it
// holds so far, a write's pieces included.
type tricklingFile struct {
	piece int
	pause time.Duration
	n     atomic.Int64
}

func (w *tricklingFile) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), w.piece)
		time.Sleep(w.pause)
		w.n.Add(int64(k))
		p = p[k:]
	}
	return n, nil
}

func (w *tricklingFile) Len() int64 { return w.n.Load() }

// TestWALFlusher_CommitBoundsLoss gives a flusher over a slow file records
// of random sizes, 1 byte to 80 KiB and a few over walBufferLimit, as a
// leader does: Write, then commit. When commit returns (the records would
// be acknowledged), the records not wholly in the file, counted from the
// start of the first of them, must hold at most walBufferLimit bytes, and
// the test must have come near that bound.
func TestWALFlusher_CommitBoundsLoss(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	file := &tricklingFile{piece: 16 << 10, pause: 50 * time.Microsecond}
	f := newWALFlusher(file, "test", &walBuffers{}, 0)
	var ends []int64 // the ends of the records acknowledged
	var worst int64
	big := 0
	for len(ends) < 300 {
		size := 1 + rng.IntN(80<<10)
		if rng.IntN(50) == 0 {
			size, big = walBufferLimit+rng.IntN(64<<10), big+1
		}
		if _, err := f.Write(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
		end := f.accepted
		if err := f.commit([]int64{end}); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end)
		in := file.Len()
		safe := int64(0) // the end of the last record wholly in the file
		for i := len(ends) - 1; i >= 0; i-- {
			if ends[i] <= in {
				safe = ends[i]
				break
			}
		}
		if end-safe > walBufferLimit {
			t.Fatalf("record %d (%d bytes) acknowledged with %d bytes of records not wholly in the file, over %d",
				len(ends)-1, size, end-safe, walBufferLimit)
		}
		worst = max(worst, end-safe)
	}
	if err := f.close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records (%d over the limit), at most %d bytes acknowledged not wholly in the file", len(ends), big, worst)
	if worst < walBufferLimit/2 {
		t.Fatalf("at most %d bytes were at risk: the file was too fast to test the bound of %d", worst, walBufferLimit)
	}
	if file.Len() != ends[len(ends)-1] {
		t.Fatalf("the file holds %d bytes after close, want %d", file.Len(), ends[len(ends)-1])
	}
}

// TestWALFlusher_LimitDocumented checks that the loss bound the docs of
// Options.BackgroundWALWrites and of the package state is walBufferLimit,
// the one the code enforces and the crash tests assert.
func TestWALFlusher_LimitDocumented(t *testing.T) {
	want := fmt.Sprintf("%d KiB", walBufferLimit>>10)
	if walBufferLimit%(1<<10) != 0 {
		t.Fatalf("walBufferLimit is %d bytes, not a whole number of KiB", walBufferLimit)
	}
	checked := 0
	for _, file := range []string{"options.go", "doc.go"} {
		f, err := vfs.Default.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		src, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(strings.ReplaceAll(string(src), "//", "")), " ")
		if !strings.Contains(text, "at most "+want) {
			t.Errorf("%s does not state the loss bound as %q", file, "at most "+want)
		}
		checked++
	}
	if checked != 2 {
		t.Fatalf("%d files checked", checked)
	}
}

// steppedFile is a WAL file that takes each write only when the test
// lets it: one receive from step per write.
type steppedFile struct {
	step chan struct{}
	n    atomic.Int64
}

func (w *steppedFile) Write(p []byte) (int, error) {
	<-w.step
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// TestWALFlusher_DrainWaitsForItsBytesOnly drains a flusher while more
// bytes arrive after the drain began: it must return once the bytes
// buffered before it are in the file, not wait for the later ones. (A
// Sync write drains before its sync; under a steady stream of NoSync
// writes the buffer is never empty.)
func TestWALFlusher_DrainWaitsForItsBytesOnly(t *testing.T) {
	file := &steppedFile{step: make(chan struct{})}
	f := newWALFlusher(file, "test", &walBuffers{}, 0)
	defer func() {
		close(file.step) // let every write through
		if err := f.close(); err != nil {
			t.Error(err)
		}
	}()
	first, later := bytes.Repeat([]byte{1}, 100), bytes.Repeat([]byte{2}, 200)
	if _, err := f.Write(first); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
			f.mu.Lock()
			ok := cond()
			f.mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
		}
	}
	waitFor("the flusher writes the first bytes", func() bool { return f.inFlight == len(first) })
	drained := make(chan error, 1)
	go func() { drained <- f.drain() }()
	waitFor("the drain waits", func() bool { return f.draining > 0 })
	if _, err := f.Write(later); err != nil {
		t.Fatal(err)
	}
	file.step <- struct{}{} // the first write completes; the later bytes stay
	select {
	case err := <-drained:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("drain still waits for bytes buffered after it began")
	}
	if n := file.n.Load(); n != int64(len(first)) {
		t.Fatalf("drain returned with %d bytes in the file, want %d", n, len(first))
	}
}
