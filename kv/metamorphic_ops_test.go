package kv_test

// The operations of TestMetamorphic and their generator. An operation is
// plain data: each store of the test runs the same list, and the shrinker
// drops operations from it, so an operation naming a snapshot or an
// iterator that a dropped one would have made does nothing.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

type metaKind int

const (
	metaSet metaKind = iota
	metaDelete
	metaDeleteRange
	metaBatch   // a plain batch of writes, applied
	metaIndexed // an indexed batch: writes and reads of it, then applied or dropped
	metaGet
	metaNewSnap
	metaCloseSnap
	metaIter     // a fresh iterator moved at random, then closed
	metaPrefix   // a fresh iterator: one prefix seek, then Next
	metaOpenIter // an iterator kept open across later operations
	metaMoveIter
	metaSetBounds
	metaRefresh
	metaCloseIter
	metaFlush
	metaCompact
	metaIngest
	metaRestart // close every snapshot and iterator, then the store's restart
)

// metaOp is one operation. Fields not used by its kind are zero.
type metaOp struct {
	kind   metaKind
	key    []byte // Set, Delete, Get, Prefix: the key; DeleteRange: start
	end    []byte // DeleteRange: end
	value  []byte
	sync   bool
	id     int        // snapshot or kept iterator made or used
	snap   int        // Get, Iter, Prefix, OpenIter: the snapshot read, 0 for the DB
	lo, hi []byte     // bounds, or Compact's range
	moves  []metaMove // Iter, MoveIter
	nexts  int        // Prefix: Next calls after the seek
	writes []metaOp   // Batch: writes; Indexed: writes and reads
	apply  bool       // Indexed: applied (else dropped)
	tables [][]metaOp // Ingest: each table's sets and deletes, in key order
}

// metaMove is one positioning call of an iterator.
type metaMove struct {
	call byte // 'f' First, 'l' Last, 'g' SeekGE, 't' SeekLT, 'n' Next, 'p' Prev
	key  []byte
}

func (m metaMove) String() string {
	switch m.call {
	case 'g':
		return "SeekGE(" + fmtKey(m.key) + ")"
	case 't':
		return "SeekLT(" + fmtKey(m.key) + ")"
	}
	return map[byte]string{'f': "First", 'l': "Last", 'n': "Next", 'p': "Prev"}[m.call]
}

func (o metaOp) String() string {
	b := fmt.Sprintf
	switch o.kind {
	case metaSet:
		return b("Set(%s, %s, sync=%v)", fmtKey(o.key), short(o.value), o.sync)
	case metaDelete:
		return b("Delete(%s)", fmtKey(o.key))
	case metaDeleteRange:
		return b("DeleteRange(%s, %s)", fmtKey(o.key), fmtKey(o.end))
	case metaBatch, metaIndexed:
		parts := make([]string, len(o.writes))
		for i, w := range o.writes {
			parts[i] = w.String()
		}
		name := "Batch"
		if o.kind == metaIndexed {
			name = b("IndexedBatch(apply=%v)", o.apply)
		}
		return b("%s[%s]", name, strings.Join(parts, "; "))
	case metaGet:
		return b("Get(%s) on %s", fmtKey(o.key), metaReaderName(o.snap))
	case metaNewSnap:
		return b("s%d = NewSnapshot", o.id)
	case metaCloseSnap:
		return b("s%d.Close", o.id)
	case metaIter:
		return b("Iter(%s, [%s, %s)) %v", metaReaderName(o.snap), fmtKey(o.lo), fmtKey(o.hi), o.moves)
	case metaPrefix:
		return b("Iter(%s, [%s, %s)) SeekPrefixGE(%s) Next×%d", metaReaderName(o.snap), fmtKey(o.lo), fmtKey(o.hi), fmtKey(o.key), o.nexts)
	case metaOpenIter:
		return b("i%d = NewIter(%s, [%s, %s))", o.id, metaReaderName(o.snap), fmtKey(o.lo), fmtKey(o.hi))
	case metaMoveIter:
		return b("i%d %v", o.id, o.moves)
	case metaSetBounds:
		return b("i%d.SetBounds(%s, %s)", o.id, fmtKey(o.lo), fmtKey(o.hi))
	case metaRefresh:
		return b("i%d.Refresh", o.id)
	case metaCloseIter:
		return b("i%d.Close", o.id)
	case metaFlush:
		return "Flush"
	case metaCompact:
		return b("Compact(%s, %s)", fmtKey(o.lo), fmtKey(o.hi))
	case metaIngest:
		parts := make([]string, len(o.tables))
		for i, t := range o.tables {
			parts[i] = fmt.Sprint(t)
		}
		return b("Ingest%v", parts)
	case metaRestart:
		return "Restart"
	}
	return b("op kind %d", o.kind)
}

func metaReaderName(snap int) string {
	if snap == 0 {
		return "db"
	}
	return fmt.Sprintf("s%d", snap)
}

// metaSplit is the Split of the stores that have one: a key's first two
// bytes, so that each prefix holds a few dozen keys of the key space.
func metaSplit(key []byte) int { return min(len(key), 2) }

// metaAlphabet and metaMaxKeyLen make the key space: every key of one to
// four of these letters (120 keys), and the empty key.
const (
	metaAlphabet  = "abcd"
	metaMaxKeyLen = 4
)

// metaGen generates the operations of one seed.
type metaGen struct {
	rng          *rand.Rand
	n            int   // operations generated
	nextSnap     int   // ids of snapshots made
	nextIter     int   // ids of kept iterators made
	snaps, iters []int // open ones
}

func (g *metaGen) key() []byte {
	if g.rng.IntN(60) == 0 {
		return []byte{}
	}
	k := make([]byte, 1+g.rng.IntN(metaMaxKeyLen))
	for i := range k {
		k[i] = metaAlphabet[g.rng.IntN(len(metaAlphabet))]
	}
	return k
}

// seekKey returns a key of the key space, one between two of them, or one
// past them all.
func (g *metaGen) seekKey() []byte {
	switch g.rng.IntN(10) {
	case 0:
		return append(g.key(), 0)
	case 1:
		return []byte("e")
	}
	return g.key()
}

// bound returns nil (unbounded) half the time, else a seek key.
func (g *metaGen) bound() []byte {
	if g.rng.IntN(2) == 0 {
		return nil
	}
	return g.seekKey()
}

func (g *metaGen) value() []byte {
	n := 1 + g.rng.IntN(16)
	if g.rng.IntN(4) == 0 {
		n = 100 + g.rng.IntN(400)
	}
	v := []byte(fmt.Sprintf("v%d.", g.n))
	for len(v) < n {
		v = append(v, byte('a'+g.rng.IntN(26)))
	}
	return v
}

func (g *metaGen) write() metaOp {
	switch r := g.rng.IntN(20); {
	case r < 13:
		return metaOp{kind: metaSet, key: g.key(), value: g.value(), sync: g.rng.IntN(8) == 0}
	case r < 18:
		return metaOp{kind: metaDelete, key: g.key()}
	default:
		lo, hi := g.key(), g.key()
		if g.rng.IntN(8) != 0 && string(lo) > string(hi) {
			lo, hi = hi, lo
		}
		return metaOp{kind: metaDeleteRange, key: lo, end: hi}
	}
}

func (g *metaGen) moves() []metaMove {
	ms := make([]metaMove, 1+g.rng.IntN(12))
	for i := range ms {
		switch r := g.rng.IntN(10); {
		case r == 0:
			ms[i] = metaMove{call: 'f'}
		case r == 1:
			ms[i] = metaMove{call: 'l'}
		case r == 2:
			ms[i] = metaMove{call: 'g', key: g.seekKey()}
		case r == 3:
			ms[i] = metaMove{call: 't', key: g.seekKey()}
		case r < 7:
			ms[i] = metaMove{call: 'n'}
		default:
			ms[i] = metaMove{call: 'p'}
		}
	}
	return ms
}

// reader picks the DB or, a third of the time, an open snapshot.
func (g *metaGen) reader() int {
	if len(g.snaps) == 0 || g.rng.IntN(3) != 0 {
		return 0
	}
	return g.snaps[g.rng.IntN(len(g.snaps))]
}

func (g *metaGen) read() metaOp {
	switch r := g.rng.IntN(10); {
	case r < 4:
		return metaOp{kind: metaGet, key: g.seekKey(), snap: g.reader()}
	case r < 7:
		return metaOp{kind: metaIter, snap: g.reader(), lo: g.bound(), hi: g.bound(), moves: g.moves()}
	default:
		return metaOp{kind: metaPrefix, snap: g.reader(), lo: g.bound(), hi: g.bound(),
			key: g.seekKey(), nexts: g.rng.IntN(6)}
	}
}

// next returns the next operation.
func (g *metaGen) next() metaOp {
	g.n++
	switch r := g.rng.IntN(200); {
	case r < 70:
		return g.write()
	case r < 80:
		return g.batch(metaBatch)
	case r < 88:
		return g.batch(metaIndexed)
	case r < 140:
		return g.read()
	case r < 146:
		return g.snapOp()
	case r < 170:
		return g.iterOp()
	case r < 178:
		return metaOp{kind: metaFlush}
	case r < 184:
		lo, hi := g.bound(), g.bound()
		if lo != nil && hi != nil && string(lo) > string(hi) {
			lo, hi = hi, lo
		}
		return metaOp{kind: metaCompact, lo: lo, hi: hi}
	case r < 194:
		return g.ingest()
	default:
		g.snaps, g.iters = nil, nil
		return metaOp{kind: metaRestart}
	}
}

func (g *metaGen) batch(kind metaKind) metaOp {
	op := metaOp{kind: kind, apply: g.rng.IntN(5) != 0}
	for range 1 + g.rng.IntN(10) {
		if kind == metaIndexed && g.rng.IntN(3) == 0 {
			r := g.read()
			r.snap = 0 // the batch's reads read the batch
			op.writes = append(op.writes, r)
			continue
		}
		op.writes = append(op.writes, g.write())
	}
	return op
}

func (g *metaGen) snapOp() metaOp {
	if len(g.snaps) > 0 && g.rng.IntN(2) == 0 {
		i := g.rng.IntN(len(g.snaps))
		id := g.snaps[i]
		g.snaps = slices.Delete(g.snaps, i, i+1)
		return metaOp{kind: metaCloseSnap, id: id}
	}
	g.nextSnap++
	g.snaps = append(g.snaps, g.nextSnap)
	return metaOp{kind: metaNewSnap, id: g.nextSnap}
}

func (g *metaGen) iterOp() metaOp {
	if len(g.iters) == 0 || g.rng.IntN(6) == 0 {
		g.nextIter++
		g.iters = append(g.iters, g.nextIter)
		return metaOp{kind: metaOpenIter, id: g.nextIter, snap: g.reader(), lo: g.bound(), hi: g.bound()}
	}
	i := g.rng.IntN(len(g.iters))
	id := g.iters[i]
	switch r := g.rng.IntN(12); {
	case r == 0:
		g.iters = slices.Delete(g.iters, i, i+1)
		return metaOp{kind: metaCloseIter, id: id}
	case r == 1:
		return metaOp{kind: metaSetBounds, id: id, lo: g.bound(), hi: g.bound()}
	case r == 2:
		return metaOp{kind: metaRefresh, id: id}
	}
	return metaOp{kind: metaMoveIter, id: id, moves: g.moves()}
}

// ingest makes one or two tables of distinct keys in order; one time in
// ten the second table overlaps the first, which every store refuses.
func (g *metaGen) ingest() metaOp {
	picked := map[string]bool{}
	for range 1 + g.rng.IntN(10) {
		picked[string(g.key())] = true
	}
	var keys []string
	for k := range picked {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	entry := func(k string) metaOp {
		if g.rng.IntN(4) == 0 {
			return metaOp{kind: metaDelete, key: []byte(k)}
		}
		return metaOp{kind: metaSet, key: []byte(k), value: g.value()}
	}
	table := func(keys []string) []metaOp {
		t := make([]metaOp, len(keys))
		for i, k := range keys {
			t[i] = entry(k)
		}
		return t
	}
	op := metaOp{kind: metaIngest}
	switch {
	case g.rng.IntN(10) == 0:
		op.tables = [][]metaOp{table(keys), table(keys)}
	case len(keys) > 1 && g.rng.IntN(2) == 0:
		cut := 1 + g.rng.IntN(len(keys)-1)
		op.tables = [][]metaOp{table(keys[:cut]), table(keys[cut:])}
	default:
		op.tables = [][]metaOp{table(keys)}
	}
	return op
}

// metaOps generates n operations from seed.
func metaOps(seed uint64, n int) []metaOp {
	g := &metaGen{rng: newRand(seed)}
	ops := make([]metaOp, n)
	for i := range ops {
		ops[i] = g.next()
	}
	return ops
}
