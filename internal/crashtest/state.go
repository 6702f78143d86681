package crashtest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/bloomkv/bloomkv/kv"
)

// version names the value a key holds: that of edit j of op n of the
// key's writer, packed as n<<8 | j (an op has fewer than 256 edits), or
// absent.
type version int64

const absent version = -1

func versionOf(n, j int) version { return version(n)<<8 | version(j) }

func (v version) String() string {
	if v == absent {
		return "absent"
	}
	return fmt.Sprintf("op %d's edit %d", v>>8, v&0xff)
}

// contents is what a store holds: per writer, the version of each key.
type contents [][]version

// readStore reads the whole store through an iterator and checks every
// entry: a key no writer owns, or a value that is not byte for byte one
// a Set of its key wrote, is an error. Then a Get of every key of every
// writer must find what the iterator found.
func readStore(db *kv.DB, r *Round) (contents, error) {
	got := make(contents, r.Writers)
	for w := range got {
		got[w] = make([]version, r.Keys)
		for i := range got[w] {
			got[w][i] = absent
		}
	}
	it, err := db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err = got.add(r, it.Key(), it.Value()); err != nil {
			break
		}
	}
	if ierr := it.Error(); err == nil {
		err = ierr
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = got.checkGets(db, r)
	}
	if err != nil {
		return nil, err
	}
	return got, nil
}

// add records the entry k, v that the iterator found.
func (c contents) add(r *Round, k, v []byte) error {
	w, i, ok := parseKey(k)
	if !ok || w < 0 || w >= r.Writers || i < 0 || i >= r.Keys {
		return fmt.Errorf("crashtest: the store holds key %q, which no writer writes", k)
	}
	vw, n, j, ok := parseValueHeader(v)
	if !ok || vw != w || n < 0 || j < 0 {
		return fmt.Errorf("crashtest: key %s holds %q (%d bytes), which no Set of it wrote", k, clip(v), len(v))
	}
	o := r.op(w, n)
	if j >= len(o.edits) || o.edits[j].kind != editSet || o.edits[j].key != i {
		return fmt.Errorf("crashtest: key %s holds the value of %s, which does not set it", k, versionOf(n, j))
	}
	if !bytes.Equal(v, r.value(w, n, j, o.edits[j].valueLen)) {
		return fmt.Errorf("crashtest: key %s holds a damaged value of %s (%d bytes)", k, versionOf(n, j), len(v))
	}
	c[w][i] = versionOf(n, j)
	return nil
}

// checkGets gets every key of every writer and compares the answer with
// what the iterator found.
func (c contents) checkGets(db *kv.DB, r *Round) error {
	for w := range c {
		for i, want := range c[w] {
			v, err := db.Get(key(w, i))
			switch {
			case want == absent && errors.Is(err, kv.ErrNotFound):
			case want == absent:
				return fmt.Errorf("crashtest: Get %s = %q, %v; the iterator found no such key", key(w, i), clip(v), err)
			case err != nil:
				return fmt.Errorf("crashtest: Get %s: %w; the iterator found %s", key(w, i), err, want)
			case !bytes.Equal(v, r.versionValue(w, want)):
				return fmt.Errorf("crashtest: Get %s = %q, not %s that the iterator found", key(w, i), clip(v), want)
			}
		}
	}
	return nil
}

// versionValue returns the value of version v of a key of writer w.
func (r *Round) versionValue(w int, v version) []byte {
	n, j := int(v>>8), int(v&0xff)
	return r.value(w, n, j, r.op(w, n).edits[j].valueLen)
}

// clip shortens a value for an error message.
func clip(v []byte) []byte { return v[:min(len(v), 24)] }

// model is writer w's keys as its ops leave them, op after op, beside
// what the store holds: it counts the keys where the two differ, so that
// each op costs only its edits.
type model struct {
	r      *Round
	w      int
	keys   []version
	got    []version
	differ int
	last   int // the last op applied; -1 before the first
}

func newModel(r *Round, w int, got []version) *model {
	m := &model{r: r, w: w, keys: make([]version, r.Keys), got: got, last: -1}
	for i := range m.keys {
		m.keys[i] = absent
		if got[i] != absent {
			m.differ++
		}
	}
	return m
}

func (m *model) set(i int, v version) {
	if m.keys[i] != m.got[i] {
		m.differ--
	}
	m.keys[i] = v
	if v != m.got[i] {
		m.differ++
	}
}

// next applies the next op.
func (m *model) next() {
	m.last++
	for j, e := range m.r.op(m.w, m.last).edits {
		switch e.kind {
		case editSet:
			m.set(e.key, versionOf(m.last, j))
		case editDelete:
			m.set(e.key, absent)
		case editDeleteRange:
			for i := e.key; i < e.end; i++ {
				m.set(i, absent)
			}
		}
	}
}

// statesIn returns, in order, every m in [lo, hi] such that the store
// holds writer w's keys as its ops 0 to m leave them (m = -1: none).
// Several m qualify where the ops between leave the keys as they were
// (a Flush, a Delete of an absent key): which one the store saw is not
// to be told from its contents.
func statesIn(r *Round, got contents, w, lo, hi int) []int {
	m := newModel(r, w, got[w])
	for m.last < lo {
		m.next()
	}
	var found []int
	for {
		if m.differ == 0 {
			found = append(found, m.last)
		}
		if m.last >= hi {
			return found
		}
		m.next()
	}
}

// nearest explains a store that holds no state of writer w in [-1, hi]:
// the state it comes nearest to, and a few keys that differ from it.
func nearest(r *Round, got contents, w, hi int) string {
	m := newModel(r, w, got[w])
	best, fewest := m.last, m.differ
	for m.last < hi {
		m.next()
		if m.differ < fewest {
			best, fewest = m.last, m.differ
		}
	}
	m = newModel(r, w, got[w])
	for m.last < best {
		m.next()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "nearest is the state after op %d, %d keys apart", best, fewest)
	shown := 0
	for i := range m.keys {
		if m.keys[i] != m.got[i] && shown < 3 {
			fmt.Fprintf(&b, "; %s holds %s, not %s", key(w, i), m.got[i], m.keys[i])
			shown++
		}
	}
	return b.String()
}
