package kv_test

// Every positioning call, prefix mode's included, mixed with SetBounds,
// Clone, Refresh and writes under the iterator, on iterators over the
// DB, a snapshot and an indexed batch (over either), through range
// deletions, flushes and compactions, against a sorted model.

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// mixedRun is one seed of TestIterator_Mixed_Model.
type mixedRun struct {
	t     *testing.T
	rng   *rand.Rand
	db    *kv.DB
	model map[string]string
	log   opLog
	// batchOps are the writes of the open indexed batch, replayed over
	// the DB's state by batchOver.
	batchOps []func(map[string]string)
}

func (r *mixedRun) key() string {
	p := r.rng.IntN(12)
	if r.rng.IntN(10) == 0 {
		return fmt.Sprintf("p%02d", p)
	}
	return fmt.Sprintf("p%02d/%02d", p, r.rng.IntN(10))
}

func (r *mixedRun) seekKey() string {
	k := r.key()
	switch r.rng.IntN(5) {
	case 0:
		return slashPrefix(k)
	case 1:
		return k + "z"
	}
	return k
}

func (r *mixedRun) bounds() (lower, upper string) {
	switch r.rng.IntN(5) {
	case 0:
		return "", ""
	case 1:
		return r.key(), ""
	case 2:
		k := r.key()
		return slashPrefix(k), slashPrefix(k) + "~"
	case 3:
		return "", r.key()
	}
	lower, upper = r.seekKey(), r.seekKey()
	if lower > upper && r.rng.IntN(5) > 0 {
		lower, upper = upper, lower
	}
	return lower, upper
}

func (r *mixedRun) check(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatalf("%v\nrecent steps:\n%s", err, r.log.String())
	}
}

// delRange deletes m's keys in [lo, hi).
func delRange(m map[string]string, lo, hi string) {
	for k := range m {
		if lo <= k && k < hi {
			delete(m, k)
		}
	}
}

func (r *mixedRun) write() {
	k := r.key()
	if r.rng.IntN(30) == 0 {
		k = ""
	}
	switch p := r.rng.IntN(10); {
	case p < 6:
		v := fmt.Sprintf("v%d", r.log.n)
		r.log.add("Set(%s)", k)
		r.model[k] = v
		r.check(r.db.Set([]byte(k), []byte(v), kv.NoSync))
	case p < 8:
		r.log.add("Delete(%s)", k)
		delete(r.model, k)
		r.check(r.db.Delete([]byte(k), kv.NoSync))
	default:
		lo, hi := r.key(), r.key()
		if r.rng.IntN(2) == 0 {
			hi = slashPrefix(lo) + "~"
		}
		r.log.add("DeleteRange(%s, %s)", lo, hi)
		delRange(r.model, lo, hi)
		r.check(r.db.DeleteRange([]byte(lo), []byte(hi), kv.NoSync))
	}
}

// mixedOpts returns the options of bounds ("": none) and PrefixOnly.
func mixedOpts(lower, upper string, prefixOnly bool) *kv.IterOptions {
	o := &kv.IterOptions{PrefixOnly: prefixOnly}
	if lower != "" {
		o.LowerBound = []byte(lower)
	}
	if upper != "" {
		o.UpperBound = []byte(upper)
	}
	return o
}

// TestIterator_Mixed_Model checks iterators of every source, in and out
// of prefix mode, against a model while their bounds change, their
// clones move, and writes to the DB or their batch come before a Refresh.
func TestIterator_Mixed_Model(t *testing.T) {
	seeds, rounds := 8, 600
	if testing.Short() {
		seeds, rounds = 2, 300
	}
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		r := &mixedRun{t: t, rng: newRand(seed), model: map[string]string{}}
		cmp := itertest.SlashComparer()
		if r.rng.IntN(2) == 0 {
			cmp.Compare = func(a, b []byte) int { return bytes.Compare(a, b) }
		}
		db, err := kv.Open("db", &kv.Options{
			FS: vfs.NewMem(), Comparer: cmp,
			MemTableSize: 2 << 10, BlockSize: 64 << r.rng.IntN(3), TargetFileSize: 2 << 10,
		})
		r.check(err)
		defer db.Close()
		r.db = db
		for i := 0; i < rounds; i++ {
			for n := r.rng.IntN(6); n > 0; n-- {
				r.write()
			}
			switch r.rng.IntN(10) {
			case 0:
				r.log.add("Flush")
				r.check(db.Flush())
			case 1:
				r.log.add("Compact")
				lo, hi := r.key(), r.key()
				if lo > hi {
					lo, hi = hi, lo
				}
				r.check(db.Compact([]byte(lo), []byte(hi+"~")))
			}
			r.checkIterator()
		}
	})
}

// checkIterator opens an iterator over the DB, a snapshot or an indexed
// batch, and moves it at random, mixing SetBounds, Clone, Refresh and
// writes under it.
func (r *mixedRun) checkIterator() {
	lower, upper := r.bounds()
	prefixOnly := r.rng.IntN(3) == 0
	o := mixedOpts(lower, upper, prefixOnly)
	model := maps.Clone(r.model)
	var it *kv.Iterator
	var err error
	var snap *kv.Snapshot
	var b *kv.Batch
	kind := r.rng.IntN(3)
	switch kind {
	case 0:
		r.log.add("NewIter(%s, %v)", boundsString(o), prefixOnly)
		it, err = r.db.NewIter(o)
	case 1:
		snap = r.db.NewSnapshot()
		defer snap.Close()
		r.log.add("Snapshot.NewIter(%s, %v)", boundsString(o), prefixOnly)
		it, err = snap.NewIter(o)
	case 2:
		if r.rng.IntN(3) == 0 {
			snap = r.db.NewSnapshot()
			defer snap.Close()
			b = snap.NewIndexedBatch()
		} else {
			b = r.db.NewIndexedBatch()
		}
		defer b.Close()
		r.batchOps = nil
		r.log.add("IndexedBatch (snap %v)", snap != nil)
		for n := r.rng.IntN(6); n > 0; n-- {
			r.batchWrite(b, model)
		}
		r.log.add("Batch.NewIter(%s, %v)", boundsString(o), prefixOnly)
		it, err = b.NewIter(o)
	}
	r.check(err)
	defer it.Close()
	// snapModel is the state a Refresh of an iterator over a snapshot
	// (or a batch over one) must show.
	snapModel := maps.Clone(model)
	m := &prefixModel{iterModel: newIterModel(model, o), lower: lower, upper: upper, prefixOnly: prefixOnly}
	var trail []string
	fail := func(msg string) {
		r.t.Fatalf("iterator kind %d %s prefixOnly=%v: after %s: %s\nrecent steps:\n%s",
			kind, boundsString(o), prefixOnly, strings.Join(trail, ", "), msg, r.log.String())
	}
	for n := 10 + r.rng.IntN(30); n > 0; n-- {
		switch p := r.rng.IntN(20); {
		case p == 0:
			lower, upper = r.bounds()
			o = mixedOpts(lower, upper, prefixOnly)
			trail = append(trail, fmt.Sprintf("SetBounds%s", boundsString(o)))
			it.SetBounds(o.LowerBound, o.UpperBound)
			m.iterModel.setBounds(o)
			m.lower, m.upper, m.prefix = lower, upper, ""
			if it.Valid() {
				fail("valid after SetBounds")
			}
			continue
		case p == 1:
			// Writes under the iterator (to its batch, if any, or the
			// DB), then maybe a Refresh.
			for n := r.rng.IntN(4); n > 0; n-- {
				if b != nil && r.rng.IntN(2) == 0 {
					r.batchWrite(b, snapModel)
				} else {
					r.write()
				}
			}
			if r.rng.IntN(2) == 0 {
				trail = append(trail, "Refresh")
				r.log.add("Refresh")
				r.check(it.Refresh())
				// What the iterator reads now: the batch's writes over the
				// DB's state, or over the snapshot (snapModel, which follows
				// the batch's writes); the snapshot's state; the DB's.
				var nm map[string]string
				switch {
				case b != nil && snap == nil:
					nm = r.batchOver()
				case snap != nil:
					nm = maps.Clone(snapModel)
				default:
					nm = maps.Clone(r.model)
				}
				m.iterModel = newIterModel(nm, o)
				m.prefix, m.err = "", nil
				if it.Valid() {
					fail("valid after Refresh")
				}
			}
			continue
		case p == 2:
			trail = append(trail, "Clone")
			c, err := it.Clone()
			r.check(err)
			cm := &prefixModel{iterModel: newIterModel(m.vals, o), lower: lower, upper: upper, prefixOnly: prefixOnly}
			var ctrail []string
			for k := 5 + r.rng.IntN(10); k > 0; k-- {
				mv := randomPrefixMove(r.rng, r.seekKey)
				ctrail = append(ctrail, mv.name)
				got, want := mv.it(c), mv.m(cm)
				if msg := comparePrefixStep(c, cm, got, want); msg != "" {
					fail("clone: after " + strings.Join(ctrail, ", ") + ": " + msg)
				}
			}
			c.Close()
			continue
		}
		mv := randomPrefixMove(r.rng, r.seekKey)
		trail = append(trail, mv.name)
		got, want := mv.it(it), mv.m(m)
		if msg := comparePrefixStep(it, m, got, want); msg != "" {
			fail(msg)
		}
	}
}

// batchOver is what an iterator over the open indexed batch, on the DB,
// shows after Refresh: the batch's writes over the DB's state now.
func (r *mixedRun) batchOver() map[string]string {
	m := maps.Clone(r.model)
	for _, f := range r.batchOps {
		f(m)
	}
	return m
}

func (r *mixedRun) batchWrite(b *kv.Batch, m map[string]string) {
	k := r.key()
	var f func(map[string]string)
	switch p := r.rng.IntN(10); {
	case p < 6:
		v := fmt.Sprintf("b%d", r.log.n)
		r.log.add("Batch.Set(%s)", k)
		r.check(b.Set([]byte(k), []byte(v)))
		f = func(m map[string]string) { m[k] = v }
	case p < 8:
		r.log.add("Batch.Delete(%s)", k)
		r.check(b.Delete([]byte(k)))
		f = func(m map[string]string) { delete(m, k) }
	default:
		lo, hi := r.key(), r.key()
		if r.rng.IntN(2) == 0 {
			hi = slashPrefix(lo) + "~"
		}
		r.log.add("Batch.DeleteRange(%s, %s)", lo, hi)
		r.check(b.DeleteRange([]byte(lo), []byte(hi)))
		f = func(m map[string]string) { delRange(m, lo, hi) }
	}
	f(m)
	r.batchOps = append(r.batchOps, f)
}
