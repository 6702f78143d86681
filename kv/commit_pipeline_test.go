package kv

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestCommitPipeline_PublishOrder runs writers that commit batches at
// once, through the concurrent inserts of the commit pipeline, while
// readers check each point in time they see (an iterator) against what
// the writers had acknowledged:
//
//   - a batch is visible whole or not at all: writer w's batch i sets
//     all of w's keys to i;
//   - no later batch is visible before an earlier one: before its batch
//     i, writer w records how many batches every other writer had
//     acknowledged (those were committed before w's batch reserved its
//     sequence numbers), and a reader that sees w's batch i must see at
//     least as many of each other writer's;
//   - nothing goes back in time: a reader's next iterator sees no writer
//     at an older batch.
//
// Memtables are small, so rotations and flushes run while batches are
// inserted. Both WAL modes in memory, and the default mode on the disk,
// whose WAL is mapped a page at a time (wal_mmap.go), so that the
// writers' records, copied into the mapping or written by the sink,
// cross chunks all the time; a copy of that store, what a crash of the
// process leaves, must then hold every batch. Run it under -race.
func TestCommitPipeline_PublishOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   *Options
		onDisk bool
	}{
		{"BackgroundWALWrites=false", &Options{}, false},
		{"BackgroundWALWrites=true", &Options{BackgroundWALWrites: true}, false},
		{"mapped", &Options{FS: vfs.Default}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.MemTableSize = 64 << 10
			testPublishOrder(t, tc.opts, tc.onDisk)
		})
	}
}

const (
	orderWriters = 6
	orderKeys    = 5 // keys per writer, all set by each of its batches
)

func testPublishOrder(t *testing.T, opts *Options, onDisk bool) {
	var d *DB
	dir := t.TempDir()
	if onDisk {
		opts.private.walMmapChunk = int64(pageSize)
		var err error
		if d, err = Open(dir, opts); err != nil {
			t.Fatal(err)
		}
		if _, ok := d.commit.log.space.(*walMmapWriter); !ok {
			d.Close()
			t.Skipf("no mapped WAL here: writer %T", d.commit.log.space)
		}
	} else {
		d, _ = openMem(t, opts)
	}
	defer d.Close()
	batches := 400
	if testing.Short() {
		batches = 120
	}
	var acked [orderWriters]atomic.Int64
	var done atomic.Bool
	errc := make(chan error, orderWriters+4)
	var writers sync.WaitGroup
	for w := range orderWriters {
		writers.Add(1)
		go func() {
			defer writers.Done()
			if err := orderWriter(d, w, batches, &acked); err != nil {
				errc <- err
			}
		}()
	}
	var readers sync.WaitGroup
	var views atomic.Int64
	for r := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var last [orderWriters]int64
			for !done.Load() {
				if err := checkOrderView(d, &last); err != nil {
					errc <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				views.Add(1)
			}
		}()
	}
	writers.Wait()
	done.Store(true)
	readers.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	var last [orderWriters]int64
	if err := checkOrderView(d, &last); err != nil {
		t.Fatal(err)
	}
	for w := range orderWriters {
		if last[w] != int64(batches) {
			t.Fatalf("writer %d: batch %d visible at the end, want %d", w, last[w], batches)
		}
	}
	if views.Load() < 10 {
		t.Fatalf("readers checked only %d views", views.Load())
	}
	t.Logf("%d views checked, %d flushes", views.Load(), d.Metrics().Flush.Count)
	if onDisk {
		c, err := Open(copyOpenDir(t, d, dir), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var last [orderWriters]int64
		if err := checkOrderView(c, &last); err != nil {
			t.Fatalf("the crash copy: %v", err)
		}
		for w := range orderWriters {
			if last[w] != int64(batches) {
				t.Fatalf("the crash copy: writer %d at batch %d, want %d", w, last[w], batches)
			}
		}
	}
}

// orderWriter commits writer w's batches 1..batches, each setting w's
// keys to its number and w's vector key to the other writers'
// acknowledged counts as they were before the batch; every fifth is Sync.
func orderWriter(d *DB, w, batches int, acked *[orderWriters]atomic.Int64) error {
	b := d.NewBatch()
	for i := 1; i <= batches; i++ {
		b.Reset()
		seen := make([]byte, 8*orderWriters)
		for v := range orderWriters {
			binary.BigEndian.PutUint64(seen[8*v:], uint64(acked[v].Load()))
		}
		val := binary.BigEndian.AppendUint64(nil, uint64(i))
		for k := range orderKeys {
			b.Set(fmt.Appendf(nil, "w%d/k%d", w, k), val)
		}
		b.Set(fmt.Appendf(nil, "w%d/seen", w), append(val, seen...))
		if err := d.Apply(b, &WriteOptions{Sync: i%5 == 0}); err != nil {
			return fmt.Errorf("writer %d, batch %d: %w", w, i, err)
		}
		acked[w].Store(int64(i))
	}
	return nil
}

// checkOrderView reads every writer's keys through one iterator and
// checks them as TestCommitPipeline_PublishOrder says, last holding the
// batches the reader saw before.
func checkOrderView(d *DB, last *[orderWriters]int64) error {
	it, err := d.NewIter(nil)
	if err != nil {
		return err
	}
	defer it.Close()
	var at [orderWriters]int64
	var seen [orderWriters][]byte
	for w := range orderWriters {
		at[w] = -1
	}
	for it.First(); it.Valid(); it.Next() {
		var w int
		var rest string
		if _, err := fmt.Sscanf(string(it.Key()), "w%d/%s", &w, &rest); err != nil || w >= orderWriters {
			return fmt.Errorf("unexpected key %q", it.Key())
		}
		i := int64(binary.BigEndian.Uint64(it.Value()))
		if at[w] >= 0 && at[w] != i {
			return fmt.Errorf("writer %d's batch seen in part: key %s at batch %d, another at %d", w, it.Key(), i, at[w])
		}
		at[w] = i
		if rest == "seen" {
			seen[w] = append([]byte(nil), it.Value()[8:]...)
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	for w := range orderWriters {
		at[w] = max(at[w], 0)
	}
	for w := range orderWriters {
		if at[w] < last[w] {
			return fmt.Errorf("writer %d went back from batch %d to %d", w, last[w], at[w])
		}
		for v := range orderWriters {
			if seen[w] == nil {
				break
			}
			if before := int64(binary.BigEndian.Uint64(seen[w][8*v:])); at[v] < before && at[w] > 0 {
				return fmt.Errorf("writer %d's batch %d is visible, but writer %d's batch %d, acknowledged before it began, is not (at %d)",
					w, at[w], v, before, at[v])
			}
		}
	}
	*last = at
	return nil
}

// TestPublisher_RingBound checks the ring's bound: with pubRingSize
// writers in it, the next push waits, and the publication of the oldest
// lets it in, into the slot that one left, so the head never laps the
// tail.
func TestPublisher_RingBound(t *testing.T) {
	var q publisher
	d := &DB{}
	ws := make([]*writer, pubRingSize)
	for i := range ws {
		ws[i] = &writer{lastSeq: base.SeqNum(i + 1)}
		ws[i].publishedSig.reset()
		q.enqueue(ws[i])
	}
	next := &writer{lastSeq: pubRingSize + 1}
	next.publishedSig.reset()
	pushed := make(chan struct{})
	go func() {
		q.enqueue(next)
		close(pushed)
	}()
	select {
	case <-pushed:
		t.Fatalf("a writer was pushed with %d in the ring already", pubRingSize)
	case <-time.After(50 * time.Millisecond):
	}
	if !publishNow(&q, d, ws[0]) || d.visibleSeq.Load() != 1 {
		t.Fatalf("the oldest batch: visibleSeq %d", d.visibleSeq.Load())
	}
	select {
	case <-pushed:
	case <-time.After(30 * time.Second):
		t.Fatal("the oldest writer was published, and the waiting one was still not pushed")
	}
	if got := q.slots[0].Load(); got != next {
		t.Fatal("the writer pushed last is not in the slot the oldest left")
	}
	if head, tail := q.head, q.state.Load()&pubTailMask; head-tail != pubRingSize {
		t.Fatalf("head %d, tail %d: want %d writers in the ring", head, tail, pubRingSize)
	}
}

// publishNow releases w, inserted whole, and waits until it is
// published, as a write does.
func publishNow(q *publisher, d *DB, w *writer) bool {
	q.release(d, w, true)
	return q.await(w)
}

// TestPublisher_RingWraps pushes and publishes three rings' worth of
// writers, one at a time and then two at once with the later one
// inserted first: each slot serves write after write, and visibleSeq
// moves past a batch only once every batch before it is inserted.
func TestPublisher_RingWraps(t *testing.T) {
	var q publisher
	d := &DB{}
	push := func(seq int) *writer {
		w := &writer{lastSeq: base.SeqNum(seq)}
		w.publishedSig.reset()
		q.enqueue(w)
		return w
	}
	seq := 0
	for range 3 * pubRingSize / 2 {
		seq++
		if !publishNow(&q, d, push(seq)) || d.visibleSeq.Load() != uint64(seq) {
			t.Fatalf("batch %d: visibleSeq %d", seq, d.visibleSeq.Load())
		}
		first, second := push(seq+1), push(seq+2)
		seq += 2
		done := make(chan bool)
		go func() { done <- publishNow(&q, d, second) }()
		runtime.Gosched() // let second's publish run, and find first in its way
		select {
		case <-done:
			t.Fatalf("batch %d published before batch %d was inserted", seq, seq-1)
		default:
		}
		if got := d.visibleSeq.Load(); got != uint64(seq-2) {
			t.Fatalf("visibleSeq %d while batch %d is not inserted, want %d", got, seq-1, seq-2)
		}
		if !publishNow(&q, d, first) || !<-done || d.visibleSeq.Load() != uint64(seq) {
			t.Fatalf("batches %d and %d: visibleSeq %d", seq-1, seq, d.visibleSeq.Load())
		}
	}
	if head, tail := q.head&pubTailMask, q.state.Load()&pubTailMask; head != tail {
		t.Fatalf("writers left in the ring: head %d, tail %d", head, tail)
	}
}

// TestCommitPipeline_FailedInsertWithPipelineHeld checks that a writer
// whose insert fails records the failure without the pipeline's mu: a
// writer queueing for publication holds it while it waits for the ring
// to drain (publisher.enqueue), so a failure that waited for it would
// never leave the ring. The failure is the error later writes get.
func TestCommitPipeline_FailedInsertWithPipelineHeld(t *testing.T) {
	c := *sstable.DefaultComparer
	c.Compare = func(a, b []byte) int { panic("Compare fails") }
	mem := newMemTable(&c, 1)
	b := &Batch{}
	for _, k := range []string{"a", "b"} {
		if err := b.Set([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	b.setSeqNum(1)
	w := &writer{batch: b}
	var p commitPipeline
	p.mu.Lock()
	defer p.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- p.insert(mem, w) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("an insert whose Compare panics succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a failed insert waited for the pipeline's mu")
	}
	if err := p.stickyErr(); !strings.Contains(err.Error(), "Compare fails") {
		t.Fatalf("the error that stopped writes: %v, want the insert's", err)
	}
}

// TestMemTable_HasRoomBound fills a memtable with random batches, each
// inserted before the next asks for room, and checks every answer of
// hasRoom against the memtable's Size: the bound a reservation counts
// without reading Size must never let a batch in that Size would keep
// out. The run must end with the memtable full, and read Size far fewer
// times than it asked.
func TestMemTable_HasRoomBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 1))
	m := newMemTable(base.DefaultComparer, 1)
	m.limit = 1 << 20
	var ins memtable.Inserter
	asked, reads, seq := 0, 0, base.SeqNum(1)
	for {
		var b Batch
		for range 1 + rng.IntN(4) {
			key := make([]byte, 1+rng.IntN(40))
			for i := range key {
				key[i] = byte(rng.Uint32())
			}
			must(t, b.Set(key, make([]byte, rng.IntN(300))))
		}
		seen := m.sizeSeen
		asked++
		room := m.hasRoom(&b)
		if m.sizeSeen != seen || m.reservedSince == 0 {
			reads++
		}
		if want := m.batchBytes == 0 || m.Size()+int64(b.Len()) <= m.limit; room != want {
			t.Fatalf("batch %d: hasRoom %v, want %v (Size %d, batch %d bytes, limit %d)", asked, room, want, m.Size(), b.Len(), m.limit)
		}
		if !room {
			break
		}
		b.setSeqNum(seq)
		seq += base.SeqNum(b.Count())
		m.reserve(&b, seq-1)
		must(t, m.insert(b.data, &ins))
		m.writers.finish()
	}
	if m.Size() < m.limit/2 || reads > asked/4 {
		t.Fatalf("full at %d of %d bytes, after %d batches and %d reads of Size", m.Size(), m.limit, asked, reads)
	}
	t.Logf("full at %d of %d bytes, after %d batches and %d reads of Size", m.Size(), m.limit, asked, reads)
}

// TestWriterCount_Wait: wait returns once every writer reserved has
// finished, and not before, however the finishes race with its start.
func TestWriterCount_Wait(t *testing.T) {
	var c writerCount
	c.reserved = 3
	waited := make(chan struct{})
	go func() {
		c.wait()
		close(waited)
	}()
	c.finish()
	c.finish()
	select {
	case <-waited:
		t.Fatal("wait returned with a writer still to finish")
	case <-time.After(20 * time.Millisecond):
	}
	c.finish()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatal("wait did not return once every writer finished")
	}

	for round := range 2000 {
		c.reset()
		writers := 1 + round%8
		c.reserved = int64(writers)
		for range writers {
			go c.finish()
		}
		done := make(chan struct{})
		go func() {
			c.wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: wait missed a finish: %d of %d done", round, c.done.Load(), writers)
		}
	}
}

// TestMemTable_RecoveredHasRoom: a memtable refilled by the WAL replay
// at Open counts what it holds, so a batch that would take it past its
// limit goes to a new memtable, as it would have before the reopen.
func TestMemTable_RecoveredHasRoom(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, MemTableSize: 1 << 20}
	opts.private.fullSizeMemTables = true
	d, err := Open("db", opts)
	must(t, err)
	value := make([]byte, 1000)
	// Filled past 800 KiB by a margin: the memtable replayed from the WAL
	// holds the same writes in nodes of other random heights, so its size
	// differs by a few hundred bytes either way.
	for i := 0; d.mu.mem.Size() < 810<<10; i++ {
		must(t, d.Set([]byte(fmt.Sprintf("key%06d", i)), value, NoSync))
	}
	if len(d.mu.imm) != 0 || d.Metrics().Flush.Count != 0 {
		t.Fatal("the memtable rotated while it was filled")
	}
	must(t, d.Close())

	d, err = Open("db", opts)
	must(t, err)
	defer d.Close()
	recovered := d.mu.mem
	if recovered.Size() < 800<<10 {
		t.Fatalf("the memtable recovered holds %d bytes, want the %d written", recovered.Size(), 800<<10)
	}
	var big Batch
	for i := range 300 {
		must(t, big.Set([]byte(fmt.Sprintf("big%06d", i)), value))
	}
	must(t, d.Apply(&big, NoSync))
	if d.mu.mem == recovered {
		t.Fatalf("a batch of %d bytes went into the memtable recovered, which now holds %d bytes, limit %d", big.Len(), recovered.Size(), recovered.limit)
	}
}
