package crashtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// ChildEnv is the environment variable that hands a child its work: Run
// starts Config.Child with it set, and the program must then call
// RunChild with its value rather than do anything else.
const ChildEnv = "BLOOMKV_CRASH_CHILD"

// childSpec is a child's work, in ChildEnv as JSON.
type childSpec struct {
	Round   Round    `json:"round"`
	Dir     string   `json:"dir"`
	Windows []window `json:"windows"` // per writer, the states the store may hold
	// CloseAfter, when positive, stops the writers after that long and
	// closes the store, so that the kill lands in Close or after it.
	CloseAfter time.Duration `json:"close_after"`
}

// The lines a child writes on its stdout, each with one Write, so that
// a kill never leaves half a line. The parent believes an op acknowledged
// only once its ack line is read.
const (
	lineOpened  = "opened"  // Open returned
	lineState   = "state"   // "state W M,M,...": the states of writer W the check found
	lineReady   = "ready"   // the check is done and the writers start
	lineAck     = "ack"     // "ack W N BEGAN ENDED": op N of writer W acknowledged
	lineStopped = "stopped" // the writers stopped, Close is called
	lineClosed  = "closed"  // Close returned
	lineFail    = "fail"    // "fail MESSAGE": the child failed
)

// RunChild is the life of a child, given ChildEnv's value: it opens the
// store, checks what the last kill left in it, and writes from the
// round's writers, reporting each op acknowledged on stdout, until the
// parent kills it. It returns only on a failure, which it reports on
// stdout too, or once stdin ends: the parent holds it open, so a child
// never outlives its parent.
func RunChild(spec string, stdin io.Reader, stdout io.Writer) error {
	var s childSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return fmt.Errorf("crashtest: %s: %w", ChildEnv, err)
	}
	out := &lineWriter{w: stdout}
	parentGone := make(chan error, 1)
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		parentGone <- errors.New("crashtest: the parent is gone")
	}()
	err := s.run(out, parentGone)
	out.print(lineFail, strings.ReplaceAll(err.Error(), "\n", "; "))
	return err
}

// run opens, checks and writes until an error, the end of stop, or a
// Close's end when CloseAfter asks for one.
func (s *childSpec) run(out *lineWriter, stop <-chan error) error {
	db, err := kv.Open(s.Dir, s.Round.options())
	if err != nil {
		return err
	}
	out.print(lineOpened)
	found, err := checkStore(db, &s.Round, s.Windows)
	if err != nil {
		return err
	}
	for w, ms := range found {
		out.print(lineState, strconv.Itoa(w), joinInts(ms))
	}
	out.print(lineReady)
	ws := s.startWriters(db, found, out)
	if s.CloseAfter > 0 {
		select {
		case err := <-ws.errc:
			return err
		case err := <-stop:
			return err
		case <-time.After(s.CloseAfter):
		}
		if err := ws.stop(); err != nil {
			return err
		}
		out.print(lineStopped)
		if err := db.Close(); err != nil {
			return err
		}
		out.print(lineClosed)
	}
	select {
	case err := <-ws.errc:
		return err
	case err := <-stop:
		return err
	}
}

// writers are the goroutines of a child that write, one per writer.
type writers struct {
	stopping atomic.Bool
	wg       sync.WaitGroup
	errc     chan error // each writer's error, if it fails
}

// startWriters starts each writer at the op after the last state found.
func (s *childSpec) startWriters(db *kv.DB, found [][]int, out *lineWriter) *writers {
	ws := &writers{errc: make(chan error, len(found))}
	began := time.Now()
	for w, ms := range found {
		ws.wg.Add(1)
		go func() {
			defer ws.wg.Done()
			for n := ms[len(ms)-1] + 1; !ws.stopping.Load(); n++ {
				start := time.Since(began).Nanoseconds()
				if err := s.Round.apply(db, s.Dir, w, n); err != nil {
					ws.errc <- fmt.Errorf("crashtest: op %d of writer %d: %w", n, w, err)
					return
				}
				end := time.Since(began).Nanoseconds()
				out.print(lineAck, strconv.Itoa(w), strconv.Itoa(n), strconv.FormatInt(start, 10), strconv.FormatInt(end, 10))
			}
		}()
	}
	return ws
}

// stop stops the writers after their ops in flight and returns the
// first error of one.
func (ws *writers) stop() error {
	ws.stopping.Store(true)
	ws.wg.Wait()
	select {
	case err := <-ws.errc:
		return err
	default:
		return nil
	}
}

// options are the kv.Options of the round's store.
func (r *Round) options() *kv.Options {
	return &kv.Options{MemTableSize: r.MemTableSize, BackgroundWALWrites: r.BackgroundWAL}
}

// apply issues op n of writer w, as the workload draws it, to db, the
// store in dir.
func (r *Round) apply(db *kv.DB, dir string, w, n int) error {
	o := r.op(w, n)
	if o.flush {
		return db.Flush()
	}
	if o.ingest {
		return r.ingest(db, dir, w, n, o.edits)
	}
	opts := kv.NoSync
	if o.sync {
		opts = kv.Sync
	}
	if !o.batch {
		return r.applyEdit(dbWriter{db, opts}, w, n, 0, o.edits[0])
	}
	b := db.NewBatch()
	defer b.Close()
	for j, e := range o.edits {
		if err := r.applyEdit(b, w, n, j, e); err != nil {
			return err
		}
	}
	if b.Len() != o.size {
		return fmt.Errorf("the batch is %d bytes, the workload counts %d", b.Len(), o.size)
	}
	return db.Apply(b, opts)
}

// editWriter is what an edit is applied to: a Batch, or a DB through
// dbWriter.
type editWriter interface {
	Set(key, value []byte) error
	Delete(key []byte) error
	DeleteRange(start, end []byte) error
}

// dbWriter writes each edit to a DB as one call, with opts.
type dbWriter struct {
	db   *kv.DB
	opts *kv.WriteOptions
}

func (d dbWriter) Set(k, v []byte) error         { return d.db.Set(k, v, d.opts) }
func (d dbWriter) Delete(k []byte) error         { return d.db.Delete(k, d.opts) }
func (d dbWriter) DeleteRange(s, e []byte) error { return d.db.DeleteRange(s, e, d.opts) }

// applyEdit applies edit j of op n of writer w.
func (r *Round) applyEdit(to editWriter, w, n, j int, e edit) error {
	switch e.kind {
	case editSet:
		return to.Set(key(w, e.key), r.value(w, n, j, e.valueLen))
	case editDelete:
		return to.Delete(key(w, e.key))
	}
	return to.DeleteRange(key(w, e.key), key(w, e.end))
}

// checkStore reads the store and returns, per writer, the states in its
// window that the store holds; none is an error.
func checkStore(db *kv.DB, r *Round, windows []window) ([][]int, error) {
	got, err := readStore(db, r)
	if err != nil {
		return nil, err
	}
	found := make([][]int, r.Writers)
	for w, win := range windows {
		found[w] = statesIn(r, got, w, win.Lo, win.Hi)
		if len(found[w]) == 0 {
			return nil, fmt.Errorf("crashtest: writer %d's keys are in no state its ops %d to %d leave (%s)",
				w, win.Lo, win.Hi, nearest(r, got, w, win.Hi))
		}
	}
	return found, nil
}

// lineWriter writes whole lines, from any goroutine.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// print writes the words as one line, with one Write. Its error is
// ignored: a parent that stops reading ends stdin too.
func (l *lineWriter) print(words ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf[:0], strings.Join(words, " ")...)
	l.buf = append(l.buf, '\n')
	_, _ = l.w.Write(l.buf)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// ingestDir is where the tables a round ingests into its store in dir
// are written first: beside it, on the same file system.
func ingestDir(dir string) string { return dir + ".ingest" }

// ingest writes the edits of op n of writer w into a table outside the
// store in dir, as a batch of them leaves the keys (the last edit of a
// key wins, and a range deletion deletes what comes before it in the
// batch), and ingests it.
func (r *Round) ingest(db *kv.DB, dir string, w, n int, edits []edit) error {
	fs := vfs.Default
	if err := fs.MkdirAll(ingestDir(dir), 0o755); err != nil {
		return err
	}
	path := fs.PathJoin(ingestDir(dir), fmt.Sprintf("w%02d.sst", w))
	f, err := fs.Create(path)
	if err != nil {
		return err
	}
	t := sstable.NewWriter(f, sstable.WriterOptions{})
	if err := r.writeIngested(t, w, n, edits); err != nil {
		t.Close()
		return err
	}
	if err := t.Close(); err != nil {
		return err
	}
	if err := db.Ingest([]string{path}); err != nil {
		return err
	}
	return fs.Remove(path)
}

// writeIngested adds to t the entries of a table that leaves writer w's
// keys as edits, op n's, applied as a batch would: the ranges,
// fragmented (deleting what the store holds before the table), and for each key its last edit, a set or a delete, unless a
// range deletion after it covers it (which the table's own range
// deletion, at the same sequence number, does not do).
func (r *Round) writeIngested(t *sstable.Writer, w, n int, edits []edit) error {
	type last struct {
		j   int  // the edit
		set bool // a set, else a delete
	}
	final := map[int]last{}
	var ranges []sstable.RangeTombstone
	for j, e := range edits {
		switch e.kind {
		case editSet, editDelete:
			final[e.key] = last{j, e.kind == editSet}
		case editDeleteRange:
			for k := range final {
				if e.key <= k && k < e.end {
					delete(final, k)
				}
			}
			ranges = append(ranges, sstable.RangeTombstone{Start: key(w, e.key), End: key(w, e.end)})
		}
	}
	for _, f := range rangedel.Fragment(sstable.DefaultComparer.Compare, ranges) {
		if err := t.AddRangeDel(f); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(final)) {
		e := final[k]
		var err error
		if e.set {
			err = t.Add(sstable.MakeInternalKey(key(w, k), 0, sstable.KindSet), r.value(w, n, e.j, edits[e.j].valueLen))
		} else {
			err = t.Add(sstable.MakeInternalKey(key(w, k), 0, sstable.KindDelete), nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
