package kv_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestBatch_Indexed_Model drives indexed batches, made from the DB or from
// a snapshot, with random Set, Delete and DeleteRange, while the DB takes
// random writes, flushes and compactions of its own, and checks every
// Batch.Get and every Batch.NewIter (moved at random, with random bounds,
// SetBounds and Clone) against a map: the batch's writes applied over the
// DB's (or the snapshot's) model. An iterator kept open across later
// writes to the batch and the DB must show neither until it is
// refreshed, and then both (only the batch's, over a snapshot). Batches are applied,
// and the DB then matches the model. It prints its seed; -seed replays one.
func TestBatch_Indexed_Model(t *testing.T) {
	seeds, rounds := 4, 60
	if testing.Short() {
		seeds, rounds = 2, 20
	}
	var gets, iters, refreshes int
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		r := &batchRun{t: t, rng: newRand(seed), model: map[string]string{}}
		var err error
		r.db, err = kv.Open("db", &kv.Options{
			FS: vfs.NewMem(), MemTableSize: int64(4<<10 + r.rng.IntN(8<<10)),
			BlockSize: 128, TargetFileSize: 4 << 10, L0CompactionThreshold: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer r.db.Close()
		for i := 0; i < rounds; i++ {
			r.round()
		}
		got, err := readAll(r.db.NewIter)
		if err != nil {
			t.Fatal(err)
		}
		if msg := diffMaps(got, r.model); msg != "" {
			t.Fatalf("DB after the batches: %s", msg)
		}
		gets, iters, refreshes = gets+r.gets, iters+r.iters, refreshes+r.refreshes
	})
	if !t.Failed() && (gets < seeds*rounds*5 || iters < seeds*rounds || refreshes < seeds*rounds/4) {
		t.Fatalf("only %d Batch.Get, %d Batch.NewIter and %d Refresh checked", gets, iters, refreshes)
	}
	t.Logf("checked %d Batch.Get, %d Batch.NewIter and %d Refresh", gets, iters, refreshes)
}

// batchRun is one seed's run: the DB and its model, and the batch of the
// round with the writes made to it so far.
type batchRun struct {
	t           *testing.T
	rng         *rand.Rand
	db          *kv.DB
	model       map[string]string
	snap        *kv.Snapshot
	snapModel   map[string]string
	b           *kv.Batch
	ops         []batchOp
	gets, iters int
	refreshes   int
}

// batchOp is one write of a batch: a Set (value not nil), a Delete, or a
// DeleteRange of [key, end).
type batchOp struct {
	key, end, value []byte
}

func batchKey(rng *rand.Rand) []byte { return fmt.Appendf(nil, "k%02d", rng.IntN(50)) }

// round makes a batch, from the DB or from a snapshot, writes to it and to
// the DB at random, reads it, and applies it (or drops it).
func (r *batchRun) round() {
	r.ops = nil
	if r.rng.IntN(3) == 0 {
		r.snap, r.snapModel = r.db.NewSnapshot(), maps.Clone(r.model)
		r.b = r.snap.NewIndexedBatch()
	} else {
		r.b = r.db.NewIndexedBatch()
	}
	var kept *kv.Iterator
	var keptModel *iterModel
	for step := 0; step < 40; step++ {
		switch n := r.rng.IntN(20); {
		case n < 9:
			r.batchWrite()
		case n < 12:
			r.dbWrite()
		case n < 17:
			r.checkGet()
		case n < 19:
			r.checkIter()
		case kept == nil:
			o := r.randBounds()
			var err error
			kept, err = r.b.NewIter(o)
			r.check(err, "Batch.NewIter")
			keptModel = newIterModel(r.expected(), o)
		case r.rng.IntN(3) == 0:
			// Refreshed, it sees the batch's writes so far over the
			// DB's state now (or the snapshot's).
			if msg := refreshIter(kept, keptModel, r.expected()); msg != "" {
				r.t.Fatalf("kept iterator: %s (batch %v)", msg, r.ops)
			}
			r.refreshes++
			r.checkIterModel(kept, keptModel, "kept iterator, refreshed")
		default:
			r.checkIterModel(kept, keptModel, "kept iterator")
		}
	}
	if kept == nil {
		o := r.randBounds()
		var err error
		kept, err = r.b.NewIter(o)
		r.check(err, "Batch.NewIter")
		keptModel = newIterModel(r.expected(), o)
		r.dbWrite()
		r.batchWrite()
	}
	r.checkIterModel(kept, keptModel, "kept iterator at the end")
	// Every round refreshes a kept iterator at least once, after the
	// writes made since it was opened or last refreshed.
	if msg := refreshIter(kept, keptModel, r.expected()); msg != "" {
		r.t.Fatalf("kept iterator at the end: %s (batch %v)", msg, r.ops)
	}
	r.refreshes++
	r.checkIterModel(kept, keptModel, "kept iterator at the end, refreshed")
	r.check(kept.Close(), "Iterator.Close")
	r.finish()
}

// expected is what the batch must show now: its writes over the model of
// the DB, or of the snapshot.
func (r *batchRun) expected() map[string]string {
	base := r.model
	if r.snap != nil {
		base = r.snapModel
	}
	m := maps.Clone(base)
	for _, op := range r.ops {
		applyOp(m, op)
	}
	return m
}

func applyOp(m map[string]string, op batchOp) {
	switch {
	case op.end != nil:
		for k := range m {
			if k >= string(op.key) && k < string(op.end) {
				delete(m, k)
			}
		}
	case op.value != nil:
		m[string(op.key)] = string(op.value)
	default:
		delete(m, string(op.key))
	}
}

// randomOp returns a random write; ranges are short, so keys survive.
func (r *batchRun) randomOp(step int) batchOp {
	op := batchOp{key: batchKey(r.rng)}
	switch n := r.rng.IntN(10); {
	case n < 6:
		op.value = fmt.Appendf(nil, "v%d-%d", step, r.rng.IntN(1000))
	case n < 9:
	default:
		op.end = append(op.key[:len(op.key):len(op.key)], byte('0'+r.rng.IntN(10)))
	}
	return op
}

func (r *batchRun) batchWrite() {
	op := r.randomOp(len(r.ops))
	var err error
	switch {
	case op.end != nil:
		err = r.b.DeleteRange(op.key, op.end)
	case op.value != nil:
		err = r.b.Set(op.key, op.value)
	default:
		err = r.b.Delete(op.key)
	}
	r.check(err, "Batch write")
	r.ops = append(r.ops, op)
}

// dbWrite writes to the DB directly, and sometimes flushes or compacts it.
func (r *batchRun) dbWrite() {
	op := r.randomOp(1000 + r.rng.IntN(1000))
	var err error
	switch {
	case op.end != nil:
		err = r.db.DeleteRange(op.key, op.end, kv.NoSync)
	case op.value != nil:
		err = r.db.Set(op.key, op.value, kv.NoSync)
	default:
		err = r.db.Delete(op.key, kv.NoSync)
	}
	r.check(err, "DB write")
	applyOp(r.model, op)
	switch r.rng.IntN(10) {
	case 0:
		r.check(r.db.Flush(), "Flush")
	case 1:
		r.check(r.db.Compact(nil, []byte("l")), "Compact")
	}
}

func (r *batchRun) checkGet() {
	want := r.expected()
	for i := 0; i < 3; i++ {
		k := batchKey(r.rng)
		r.gets++
		v, err := r.b.Get(k)
		w, ok := want[string(k)]
		switch {
		case !ok && !errors.Is(err, kv.ErrNotFound):
			r.t.Fatalf("Batch.Get(%s) = %q, %v; want ErrNotFound (batch %v)", k, v, err, r.ops)
		case ok && (err != nil || string(v) != w):
			r.t.Fatalf("Batch.Get(%s) = %q, %v; want %q (batch %v)", k, v, err, w, r.ops)
		}
	}
}

func (r *batchRun) randBounds() *kv.IterOptions {
	if r.rng.IntN(3) == 0 {
		return nil
	}
	o := &kv.IterOptions{}
	if r.rng.IntN(2) == 0 {
		o.LowerBound = batchKey(r.rng)
	}
	if r.rng.IntN(2) == 0 {
		o.UpperBound = batchKey(r.rng)
	}
	return o
}

func (r *batchRun) checkIter() {
	o := r.randBounds()
	it, err := r.b.NewIter(o)
	r.check(err, "Batch.NewIter")
	r.checkIterModel(it, newIterModel(r.expected(), o), fmt.Sprintf("iterator %s", boundsString(o)))
	r.check(it.Close(), "Iterator.Close")
}

func (r *batchRun) checkIterModel(it *kv.Iterator, im *iterModel, what string) {
	r.iters++
	msg := checkIterReuse(r.rng, it, im, 10+r.rng.IntN(20), func() []byte { return batchKey(r.rng) })
	if msg == "" && r.rng.IntN(3) == 0 {
		msg = scanBoth(it, im)
	}
	if msg != "" {
		r.t.Fatalf("%s: %s (batch %v)", what, msg, r.ops)
	}
}

// finish applies the round's batch to the DB (usually) or drops it.
func (r *batchRun) finish() {
	if r.rng.IntN(4) > 0 {
		r.snap = nil // Apply writes over the DB's current state
		want := r.expected()
		r.check(r.db.Apply(r.b, kv.NoSync), "Apply")
		r.model = want
	}
	r.b.Close()
	if r.snap != nil {
		r.check(r.snap.Close(), "Snapshot.Close")
	}
	r.snap = nil
}

func (r *batchRun) check(err error, what string) {
	r.t.Helper()
	if err != nil {
		r.t.Fatalf("%s: %v", what, err)
	}
}

// TestBatch_Indexed_Errors checks the reads of a plain batch, and of an
// indexed one after its DB or snapshot closed.
func TestBatch_Indexed_Errors(t *testing.T) {
	d, err := kv.Open("db", &kv.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	plain := d.NewBatch()
	if _, err := plain.Get([]byte("a")); !errors.Is(err, kv.ErrNotIndexed) {
		t.Fatalf("plain Batch.Get: %v, want ErrNotIndexed", err)
	}
	if _, err := plain.NewIter(nil); !errors.Is(err, kv.ErrNotIndexed) {
		t.Fatalf("plain Batch.NewIter: %v, want ErrNotIndexed", err)
	}
	s := d.NewSnapshot()
	sb := s.NewIndexedBatch()
	sb.Set([]byte("a"), []byte("1"))
	s.Close()
	if _, err := sb.Get([]byte("a")); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Get after the snapshot closed: %v, want ErrClosed", err)
	}
	b := d.NewIndexedBatch()
	b.Set([]byte("a"), []byte("1"))
	d.Close()
	if _, err := b.Get([]byte("a")); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
	if _, err := b.NewIter(nil); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("NewIter after Close: %v, want ErrClosed", err)
	}
}

// TestBatch_Indexed_AppliedToAnotherDB applies an indexed batch to a DB
// other than the one that made it: refused, nothing written, and the
// batch is still applied to its own DB; a plain batch goes to either.
func TestBatch_Indexed_AppliedToAnotherDB(t *testing.T) {
	fs := vfs.NewMem()
	a, err := kv.Open("a", &kv.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := kv.Open("b", &kv.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ib := a.NewIndexedBatch()
	if err := ib.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := b.Apply(ib, kv.NoSync); err == nil {
		t.Fatal("Apply of another DB's indexed batch: no error")
	}
	if _, err := b.Get([]byte("k")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get after the refused Apply: %v, want ErrNotFound", err)
	}
	if err := a.Apply(ib, kv.NoSync); err != nil {
		t.Fatal(err)
	}
	if v, err := a.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("Get from the batch's own DB = %q, %v", v, err)
	}
	plain := a.NewBatch()
	if err := plain.Set([]byte("p"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Apply(plain, kv.NoSync); err != nil {
		t.Fatalf("Apply of a plain batch made by another DB: %v", err)
	}
}
