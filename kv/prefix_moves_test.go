package kv_test

// The positioning calls of PrefixOnly and plain iterators, in random
// order, against a sorted model that knows prefix mode: which calls enter
// it, which leave it, and the errors of its misuse.

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// scanKeys opens an iterator with o, runs First and Next to the end and
// returns the keys seen; it fails the test on any error.
func scanKeys(t *testing.T, db *kv.DB, o *kv.IterOptions) []string {
	t.Helper()
	it, err := db.NewIter(o)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key()))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// openSlashDB opens a store on a fresh memory FS under a comparer that
// splits after the first '/', holding keys; flush writes them to a table
// first, so that filters take part.
func openSlashDB(t *testing.T, flush bool, keys ...string) *kv.DB {
	t.Helper()
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), Comparer: itertest.SlashComparer()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, k := range keys {
		if err := db.Set([]byte(k), []byte("v"), kv.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if flush {
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestIterator_PrefixOnly_First checks that First on a PrefixOnly iterator
// with a LowerBound is no prefix seek: it shows every key from the bound
// on, as a plain iterator does.
func TestIterator_PrefixOnly_First(t *testing.T) {
	for _, flush := range []bool{false, true} {
		db := openSlashDB(t, flush, "a/1", "b/1", "b/2", "c/1")
		for _, lower := range []string{"a/5", "b/1", "a/", ""} {
			want := scanKeys(t, db, &kv.IterOptions{LowerBound: []byte(lower)})
			got := scanKeys(t, db, &kv.IterOptions{LowerBound: []byte(lower), PrefixOnly: true})
			if !slices.Equal(got, want) || len(want) < 3 {
				t.Errorf("flush=%v lower %q: PrefixOnly First/Next gave %q, plain %q; want [b/1 b/2 c/1] or more", flush, lower, got, want)
			}
		}
	}
}

// TestIterator_PrefixOnly_FirstAfterFailedSeek checks that a prefix seek
// refused for lying outside the bounds leaves no state behind: First then
// finds the keys within the bounds.
func TestIterator_PrefixOnly_FirstAfterFailedSeek(t *testing.T) {
	var keys []string
	for p := 74; p <= 78; p++ {
		for s := 0; s < 12; s += 3 {
			keys = append(keys, fmt.Sprintf("p%02d/%03d", p, s))
		}
	}
	db := openSlashDB(t, true, keys...)
	it, err := db.NewIter(&kv.IterOptions{LowerBound: []byte("p75/000"), UpperBound: []byte("p77/006"), PrefixOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.SeekGE([]byte("p78/012z")) || !errors.Is(it.Error(), kv.ErrInvalidPrefixSeek) {
		t.Fatalf("SeekGE outside the bounds: valid=%v err=%v, want ErrInvalidPrefixSeek", it.Valid(), it.Error())
	}
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
	}
	if it.Error() != nil || len(got) != 10 || got[0] != "p75/000" || got[9] != "p77/003" {
		t.Fatalf("First/Next after the failed seek: %q, err %v; want the 10 keys p75/000..p77/003", got, it.Error())
	}
}

// TestIterator_Prev_AfterPrefixSeekMiss checks that Prev reports
// ErrReversePrefixIteration in prefix mode even when the prefix seek found
// nothing, as Pebble's Prev does, and that the next absolute positioning
// call clears it.
func TestIterator_Prev_AfterPrefixSeekMiss(t *testing.T) {
	db := openSlashDB(t, true, "a/1", "c/1")
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.SeekPrefixGE([]byte("b/1")) || it.Error() != nil {
		t.Fatalf("SeekPrefixGE(b/1): valid=%v err=%v, want nothing found and no error", it.Valid(), it.Error())
	}
	if it.Prev() || !errors.Is(it.Error(), kv.ErrReversePrefixIteration) {
		t.Fatalf("Prev after a prefix seek that found nothing: valid=%v err=%v, want ErrReversePrefixIteration", it.Valid(), it.Error())
	}
	if !it.Last() || string(it.Key()) != "c/1" || it.Error() != nil {
		t.Fatalf("Last after the error: valid=%v key=%q err=%v", it.Valid(), it.Key(), it.Error())
	}
}

// TestIterator_SeekPrefixGE_EmptyPrefix checks prefix mode under an empty
// prefix, the empty key's (as in Pebble): SeekPrefixGE of the empty key,
// or of nil, shows the empty key and no other, Next stops after it, and
// Prev fails with ErrReversePrefixIteration. An empty prefix is still a
// prefix: the iterator took it for none, and walked the whole store.
func TestIterator_SeekPrefixGE_EmptyPrefix(t *testing.T) {
	for _, flush := range []bool{false, true} {
		for _, seek := range [][]byte{nil, {}} {
			// Iterator states come from a pool: empty it, so the
			// iterator starts with no buffers, as a first one does.
			runtime.GC()
			runtime.GC()
			db := openSlashDB(t, flush, "", "a/1", "b/1")
			it, err := db.NewIter(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !it.SeekPrefixGE(seek) || string(it.Key()) != "" {
				t.Fatalf("flush=%v SeekPrefixGE(%q): valid=%v key=%q, want the empty key", flush, seek, it.Valid(), it.Key())
			}
			if it.Next() || it.Error() != nil {
				t.Fatalf("flush=%v Next after SeekPrefixGE(%q): at %q, err %v; want the end of the prefix", flush, seek, it.Key(), it.Error())
			}
			if it.Prev() || !errors.Is(it.Error(), kv.ErrReversePrefixIteration) {
				t.Fatalf("flush=%v Prev in prefix mode: valid=%v err=%v, want ErrReversePrefixIteration", flush, it.Valid(), it.Error())
			}
			it.Close() // returns the Prev's error
		}
	}
}

// prefixModel is what an iterator must show under the slash Split, with
// prefix mode: the sorted keys within bounds, a position, the prefix of
// prefix mode ("" outside it) and the error a misuse left.
type prefixModel struct {
	*iterModel
	lower, upper string // "" when unbounded
	prefixOnly   bool
	prefix       string
	err          error // kv.ErrReversePrefixIteration or kv.ErrInvalidPrefixSeek
}

func slashPrefix(k string) string { return k[:itertest.SlashSplit([]byte(k))] }

// reposition is what every absolute positioning call does first.
func (m *prefixModel) reposition() { m.prefix, m.err = "", nil }

func (m *prefixModel) first() bool { m.reposition(); return m.iterModel.first() }
func (m *prefixModel) last() bool  { m.reposition(); return m.iterModel.last() }

func (m *prefixModel) seekLT(k string) bool { m.reposition(); return m.iterModel.seekLT(k) }

func (m *prefixModel) seekGE(k string) bool {
	if m.prefixOnly {
		return m.seekPrefixGE(k)
	}
	m.reposition()
	return m.iterModel.seekGE(k)
}

// seekPrefixGE clamps k to a bound of its prefix, or fails when the bound
// it crosses has another prefix.
func (m *prefixModel) seekPrefixGE(k string) bool {
	m.reposition()
	p := slashPrefix(k)
	switch {
	case m.lower != "" && k < m.lower:
		k = m.lower
	case m.upper != "" && k > m.upper:
		k = m.upper
	}
	if slashPrefix(k) != p {
		m.err, m.valid = kv.ErrInvalidPrefixSeek, false
		return false
	}
	m.prefix = p
	return m.iterModel.seekGE(k) && m.inPrefix()
}

// inPrefix ends the iteration at a key of another prefix.
func (m *prefixModel) inPrefix() bool {
	if slashPrefix(m.keys[m.pos]) != m.prefix {
		m.valid = false
	}
	return m.valid
}

func (m *prefixModel) next() bool {
	if m.err != nil || !m.iterModel.next() {
		return false
	}
	return m.prefix == "" || m.inPrefix()
}

func (m *prefixModel) prev() bool {
	switch {
	case m.err != nil:
		return false
	case m.prefix != "":
		m.err, m.valid = kv.ErrReversePrefixIteration, false
		return false
	}
	return m.iterModel.prev()
}

// prefixMove is one positioning call on an iterator and its model.
type prefixMove struct {
	name string
	it   func(*kv.Iterator) bool
	m    func(*prefixModel) bool
}

// randomPrefixMove picks any positioning call; seekKey gives seek targets.
func randomPrefixMove(rng *rand.Rand, seekKey func() string) prefixMove {
	switch rng.IntN(9) {
	case 0:
		return prefixMove{"First", (*kv.Iterator).First, (*prefixModel).first}
	case 1:
		return prefixMove{"Last", (*kv.Iterator).Last, (*prefixModel).last}
	case 2:
		k := seekKey()
		return prefixMove{fmt.Sprintf("SeekGE(%s)", k),
			func(it *kv.Iterator) bool { return it.SeekGE([]byte(k)) },
			func(m *prefixModel) bool { return m.seekGE(k) }}
	case 3:
		k := seekKey()
		return prefixMove{fmt.Sprintf("SeekLT(%s)", k),
			func(it *kv.Iterator) bool { return it.SeekLT([]byte(k)) },
			func(m *prefixModel) bool { return m.seekLT(k) }}
	case 4:
		k := seekKey()
		return prefixMove{fmt.Sprintf("SeekPrefixGE(%s)", k),
			func(it *kv.Iterator) bool { return it.SeekPrefixGE([]byte(k)) },
			func(m *prefixModel) bool { return m.seekPrefixGE(k) }}
	case 5, 6:
		return prefixMove{"Next", (*kv.Iterator).Next, (*prefixModel).next}
	default:
		return prefixMove{"Prev", (*kv.Iterator).Prev, (*prefixModel).prev}
	}
}

// comparePrefixStep compares the iterator with the model after a move
// that returned got (the model's want); it returns "" when they agree.
func comparePrefixStep(it *kv.Iterator, m *prefixModel, got, want bool) string {
	err := it.Error()
	switch {
	case m.err == nil && err != nil:
		return fmt.Sprintf("iterator error %v, model none", err)
	case m.err != nil && !errors.Is(err, m.err):
		return fmt.Sprintf("iterator error %v, model %v", err, m.err)
	}
	return comparePosition(it, m.iterModel, got, want)
}

// prefixMovesRun is one seed of TestIterator_PrefixMoves_Model.
type prefixMovesRun struct {
	t     *testing.T
	rng   *rand.Rand
	db    *kv.DB
	model map[string]string
	log   opLog
	moves int // positioning calls checked
	hits  int // of those, the prefix seeks that landed on a key
}

// key returns "p<NN>/<NNN>" of a few dozen prefixes, or now and then a
// bare "p<NN>", its own prefix.
func (r *prefixMovesRun) key() string {
	p := r.rng.IntN(30)
	if r.rng.IntN(10) == 0 {
		return fmt.Sprintf("p%02d", p)
	}
	return fmt.Sprintf("p%02d/%03d", p, r.rng.IntN(20))
}

// seekKey returns a key, a bare prefix, or a key between keys.
func (r *prefixMovesRun) seekKey() string {
	k := r.key()
	switch r.rng.IntN(4) {
	case 0:
		return slashPrefix(k)
	case 1:
		return k + "z"
	}
	return k
}

// bounds returns no bounds, or random ones, or ones around a prefix.
func (r *prefixMovesRun) bounds() (lower, upper string) {
	switch r.rng.IntN(4) {
	case 0:
		return "", ""
	case 1:
		return r.key(), ""
	case 2:
		k := r.key()
		return slashPrefix(k), slashPrefix(k) + "~"
	}
	lower, upper = r.seekKey(), r.seekKey()
	if lower > upper {
		lower, upper = upper, lower
	}
	return lower, upper
}

// TestIterator_PrefixMoves_Model mixes every positioning call (First,
// Last, SeekGE, SeekLT, SeekPrefixGE, Next, Prev) in random order on
// PrefixOnly and plain iterators, with bounds, over the DB and over
// snapshots, through flushes and compactions, and compares each step with
// a sorted model of prefix mode.
func TestIterator_PrefixMoves_Model(t *testing.T) {
	seeds, rounds := 4, 1000
	if testing.Short() {
		seeds, rounds = 2, 300
	}
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		r := &prefixMovesRun{t: t, rng: newRand(seed), model: map[string]string{}}
		db, err := kv.Open("db", &kv.Options{
			FS: vfs.NewMem(), Comparer: itertest.SlashComparer(),
			MemTableSize: 2 << 10, BlockSize: 64 << r.rng.IntN(3), TargetFileSize: 4 << 10,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		r.db = db
		for i := 0; i < rounds; i++ {
			r.round()
		}
		if r.moves < rounds*10 || r.hits < rounds/10 {
			t.Fatalf("only %d moves checked, %d prefix seeks found a key: the model test did not run", r.moves, r.hits)
		}
		t.Logf("%d moves checked, %d prefix seeks found a key", r.moves, r.hits)
	})
}

// round writes a few keys, sometimes flushes, compacts or takes a
// snapshot, then checks one iterator.
func (r *prefixMovesRun) round() {
	for n := r.rng.IntN(8); n > 0; n-- {
		k := r.key()
		if r.rng.IntN(4) == 0 {
			r.log.add("Delete(%s)", k)
			delete(r.model, k)
			r.check(r.db.Delete([]byte(k), kv.NoSync))
			continue
		}
		v := fmt.Sprintf("v%d", r.log.n)
		r.log.add("Set(%s)", k)
		r.model[k] = v
		r.check(r.db.Set([]byte(k), []byte(v), kv.NoSync))
	}
	switch r.rng.IntN(10) {
	case 0:
		r.log.add("Flush")
		r.check(r.db.Flush())
	case 1:
		r.log.add("Compact")
		r.check(r.db.Compact(nil, nil))
	}
	r.checkIterator()
}

func (r *prefixMovesRun) check(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatalf("%v\nrecent steps:\n%s", err, r.log.String())
	}
}

// checkIterator opens an iterator, PrefixOnly or not, on the DB or on a
// snapshot that later writes then change under it, and checks a series
// of random moves.
func (r *prefixMovesRun) checkIterator() {
	lower, upper := r.bounds()
	o := &kv.IterOptions{PrefixOnly: r.rng.IntN(2) == 0}
	if lower != "" {
		o.LowerBound = []byte(lower)
	}
	if upper != "" {
		o.UpperBound = []byte(upper)
	}
	model, newIter := r.model, r.db.NewIter
	if r.rng.IntN(3) == 0 {
		snap := r.db.NewSnapshot()
		defer snap.Close()
		model, newIter = maps.Clone(r.model), snap.NewIter
		k := r.key()
		r.log.add("Snapshot, then Set(%s)", k)
		r.model[k] = "after the snapshot"
		r.check(r.db.Set([]byte(k), []byte(r.model[k]), kv.NoSync))
	}
	it, err := newIter(o)
	r.check(err)
	defer it.Close()
	m := &prefixModel{iterModel: newIterModel(model, o), lower: lower, upper: upper, prefixOnly: o.PrefixOnly}
	var trail []string
	for n := 10 + r.rng.IntN(20); n > 0; n-- {
		mv := randomPrefixMove(r.rng, r.seekKey)
		trail = append(trail, mv.name)
		got, want := mv.it(it), mv.m(m)
		r.moves++
		if got && m.prefix != "" && strings.HasPrefix(mv.name, "Seek") {
			r.hits++
		}
		if msg := comparePrefixStep(it, m, got, want); msg != "" {
			r.t.Fatalf("iterator %s prefixOnly=%v: after %s: %s\nrecent steps:\n%s",
				boundsString(o), o.PrefixOnly, strings.Join(trail, ", "), msg, r.log.String())
		}
	}
}
