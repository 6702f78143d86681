package kv_test

// What an Iterator or a whole store must show, given a model map: the
// expected view of an iterator (iterModel) and the checks comparing an
// Iterator, a full scan or a store read back with it.

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/kv"
)

// iterModel is what an Iterator must show: the keys of a model map within
// bounds, sorted, and a position among them: -1 before the first,
// len(keys) past the last. positioned is false until the first
// positioning call.
type iterModel struct {
	keys       []string
	vals       map[string]string
	o          *kv.IterOptions
	pos        int
	valid      bool
	positioned bool
}

func newIterModel(m map[string]string, o *kv.IterOptions) *iterModel {
	im := &iterModel{vals: m, o: o}
	for k := range m {
		if o != nil && o.LowerBound != nil && k < string(o.LowerBound) {
			continue
		}
		if o != nil && o.UpperBound != nil && k >= string(o.UpperBound) {
			continue
		}
		im.keys = append(im.keys, k)
	}
	slices.Sort(im.keys)
	return im
}

// setBounds is Iterator.SetBounds: new bounds, no position.
func (im *iterModel) setBounds(o *kv.IterOptions) { *im = *newIterModel(im.vals, o) }

func (im *iterModel) set(pos int) bool {
	im.pos, im.positioned = max(-1, min(pos, len(im.keys))), true
	im.valid = pos >= 0 && pos < len(im.keys)
	return im.valid
}

func (im *iterModel) first() bool { return im.set(0) }
func (im *iterModel) last() bool  { return im.set(len(im.keys) - 1) }

func (im *iterModel) seekGE(k string) bool {
	i, _ := slices.BinarySearch(im.keys, k)
	return im.set(i)
}

func (im *iterModel) seekLT(k string) bool {
	i, _ := slices.BinarySearch(im.keys, k)
	return im.set(i - 1)
}

// next and prev step from the position: from before the first key onto
// it, and from past the last back onto it, as kv.Iterator documents.
// Before any positioning call they find nothing.
func (im *iterModel) next() bool { return im.positioned && im.pos < len(im.keys) && im.set(im.pos+1) }
func (im *iterModel) prev() bool { return im.positioned && im.pos >= 0 && im.set(im.pos-1) }

// iterMove is one positioning call, applied to both the iterator and its
// model.
type iterMove struct {
	name string
	it   func(*kv.Iterator) bool
	im   func(*iterModel) bool
}

// randomMove picks a move; seekKey supplies the targets of seeks.
func randomMove(rng *rand.Rand, seekKey func() []byte) iterMove {
	switch rng.IntN(10) {
	case 0:
		return iterMove{"First", (*kv.Iterator).First, (*iterModel).first}
	case 1:
		return iterMove{"Last", (*kv.Iterator).Last, (*iterModel).last}
	case 2:
		k := seekKey()
		return iterMove{fmt.Sprintf("SeekGE(%q)", k),
			func(it *kv.Iterator) bool { return it.SeekGE(k) },
			func(im *iterModel) bool { return im.seekGE(string(k)) }}
	case 3:
		k := seekKey()
		return iterMove{fmt.Sprintf("SeekLT(%q)", k),
			func(it *kv.Iterator) bool { return it.SeekLT(k) },
			func(im *iterModel) bool { return im.seekLT(string(k)) }}
	case 4, 5, 6:
		return iterMove{"Next", (*kv.Iterator).Next, (*iterModel).next}
	default:
		return iterMove{"Prev", (*kv.Iterator).Prev, (*iterModel).prev}
	}
}

// checkIter makes n random moves (the first one a First, Last or seek) on
// it and im and returns a description of the first disagreement, or "".
func checkIter(rng *rand.Rand, it *kv.Iterator, im *iterModel, n int, seekKey func() []byte) string {
	return checkIterMoves(rng, it, im, n, seekKey, false)
}

// checkIterReuse is checkIter with the reuse of an iterator mixed into
// its moves: SetBounds to random bounds (the model follows), and Clone,
// whose clone is moved at random against a model of its own and closed.
func checkIterReuse(rng *rand.Rand, it *kv.Iterator, im *iterModel, n int, seekKey func() []byte) string {
	return checkIterMoves(rng, it, im, n, seekKey, true)
}

// reuseMoves counts the SetBounds, Clone and Refresh moves checked, so a
// test can tell that they ran.
var reuseMoves struct{ setBounds, clones, refreshes atomic.Int64 }

// refreshIter refreshes it, whose model becomes im over m (the state it
// must now show) with im's bounds, and checks that it is left
// unpositioned; it returns a description of a disagreement, or "".
func refreshIter(it *kv.Iterator, im *iterModel, m map[string]string) string {
	if err := it.Refresh(); err != nil {
		return fmt.Sprintf("Refresh: %v", err)
	}
	*im = *newIterModel(m, im.o)
	reuseMoves.refreshes.Add(1)
	if it.Valid() || it.Key() != nil {
		return "valid after Refresh"
	}
	return ""
}

// reuseMove makes a SetBounds or Clone move, named in *trail, and returns
// a description of a disagreement, or "".
func reuseMove(rng *rand.Rand, it *kv.Iterator, im *iterModel, seekKey func() []byte, trail *[]string) string {
	if rng.IntN(2) == 0 {
		o := &kv.IterOptions{}
		if rng.IntN(3) > 0 {
			o.LowerBound = seekKey()
		}
		if rng.IntN(3) > 0 {
			o.UpperBound = seekKey()
		}
		*trail = append(*trail, fmt.Sprintf("SetBounds(%q, %q)", o.LowerBound, o.UpperBound))
		it.SetBounds(o.LowerBound, o.UpperBound)
		im.setBounds(o)
		reuseMoves.setBounds.Add(1)
		if it.Valid() || it.Key() != nil {
			return "valid after SetBounds"
		}
		return ""
	}
	*trail = append(*trail, "Clone")
	c, err := it.Clone()
	if err != nil {
		return fmt.Sprintf("Clone: %v", err)
	}
	reuseMoves.clones.Add(1)
	msg := checkIter(rng, c, newIterModel(im.vals, im.o), 3+rng.IntN(10), seekKey)
	if err := c.Close(); msg == "" && err != nil {
		msg = fmt.Sprintf("clone's Close: %v", err)
	}
	if msg != "" {
		return "clone: " + msg
	}
	return ""
}

func checkIterMoves(rng *rand.Rand, it *kv.Iterator, im *iterModel, n int, seekKey func() []byte, reuse bool) string {
	var trail []string
	for i := 0; i < n; i++ {
		if reuse && rng.IntN(6) == 0 {
			if msg := reuseMove(rng, it, im, seekKey, &trail); msg != "" {
				return fmt.Sprintf("after %s: %s", strings.Join(trail, ", "), msg)
			}
			continue
		}
		mv := randomMove(rng, seekKey)
		for i == 0 && (mv.name == "Next" || mv.name == "Prev") {
			mv = randomMove(rng, seekKey)
		}
		trail = append(trail, mv.name)
		got, want := mv.it(it), mv.im(im)
		if msg := compareIterPosition(it, im, got, want); msg != "" {
			return fmt.Sprintf("after %s: %s", strings.Join(trail, ", "), msg)
		}
	}
	return ""
}

// compareIterPosition compares the iterator with its model after a move
// that returned got (want expected).
func compareIterPosition(it *kv.Iterator, im *iterModel, got, want bool) string {
	if err := it.Error(); err != nil {
		return fmt.Sprintf("iterator error: %v", err)
	}
	return comparePosition(it, im, got, want)
}

// comparePosition is compareIterPosition without the error check, for
// callers that expect one.
func comparePosition(it *kv.Iterator, im *iterModel, got, want bool) string {
	if got != it.Valid() {
		return fmt.Sprintf("move returned %v but Valid() is %v", got, it.Valid())
	}
	if got != want {
		if got {
			return fmt.Sprintf("at %q, model exhausted (model has %d keys)", it.Key(), len(im.keys))
		}
		return fmt.Sprintf("exhausted, model at %q (model has %d keys)", im.keys[im.pos], len(im.keys))
	}
	if !got {
		return ""
	}
	wk := im.keys[im.pos]
	if string(it.Key()) != wk {
		return fmt.Sprintf("at key %q, model at %q", it.Key(), wk)
	}
	if wv := im.vals[wk]; !bytes.Equal(it.Value(), []byte(wv)) {
		return fmt.Sprintf("key %q: value %s, model %s", wk, short(it.Value()), short([]byte(wv)))
	}
	return ""
}

// scanBoth walks it forward and then backward in full and returns a
// description of the first disagreement with im, or "".
func scanBoth(it *kv.Iterator, im *iterModel) string {
	ok, want := it.First(), im.first()
	for n := 0; ; n++ {
		if msg := compareIterPosition(it, im, ok, want); msg != "" {
			return fmt.Sprintf("forward scan, step %d: %s", n, msg)
		}
		if !ok {
			break
		}
		ok, want = it.Next(), im.next()
	}
	ok, want = it.Last(), im.last()
	for n := 0; ; n++ {
		if msg := compareIterPosition(it, im, ok, want); msg != "" {
			return fmt.Sprintf("backward scan, step %d: %s", n, msg)
		}
		if !ok {
			break
		}
		ok, want = it.Prev(), im.prev()
	}
	return ""
}

// short renders a value for messages, eliding the middle of long ones.
func short(v []byte) string {
	if len(v) <= 40 {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%q...%q (%d B)", v[:24], v[len(v)-8:], len(v))
}

// readAll returns every key and value an iterator over r shows.
func readAll(newIter func(*kv.IterOptions) (*kv.Iterator, error)) (map[string]string, error) {
	it, err := newIter(nil)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		m[string(it.Key())] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		return nil, errors.Join(err, it.Close())
	}
	return m, it.Close()
}

// diffMaps describes how got differs from want, or returns "".
func diffMaps(got, want map[string]string) string {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("missing %q (want %s)", k, short([]byte(want[k]))))
		case g != want[k]:
			diffs = append(diffs, fmt.Sprintf("%q = %s, want %s", k, short([]byte(g)), short([]byte(want[k]))))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("unexpected %q = %s", k, short([]byte(got[k]))))
		}
	}
	if len(diffs) > 8 {
		diffs = append(diffs[:8], fmt.Sprintf("... %d more", len(diffs)-8))
	}
	return strings.Join(diffs, "; ")
}
