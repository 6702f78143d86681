package kv_test

// The stores of TestMetamorphic: their options, and how each runs an
// operation and writes down what it read.

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// metaConfig is one store's options and the restart it makes of a
// Restart operation.
type metaConfig struct {
	name    string
	split   bool // a Comparer with metaSplit
	opts    func(t testing.TB) *kv.Options
	restart string // "none", "reopen", "readonly", "checkpoint" or "random"
}

func metaBloom(t testing.TB, bitsPerKey float64) bloompolicy.FilterPolicy {
	p, err := bloompolicy.NewBitsPerKey(bitsPerKey)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// metaConfigs are the stores every seed runs on. The first, all defaults,
// is the one the others are compared with.
var metaConfigs = []metaConfig{
	{name: "defaults", restart: "none", opts: func(testing.TB) *kv.Options { return &kv.Options{} }},
	{name: "tiny-nosplit", restart: "reopen", opts: func(testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: kv.MinMemTableSize, BlockSize: 64, TargetFileSize: 1 << 10,
			L0CompactionThreshold: 1, MaxConcurrentCompactions: 3, MaxOpenFiles: kv.MinMaxOpenFiles,
			LBaseMaxBytes: 4 << 10, BlockCacheSize: 1, MaxManifestFileSize: 1}
	}},
	{name: "tiny-split-bgwal", split: true, restart: "readonly", opts: func(testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: 2 << 10, BlockSize: 64, TargetFileSize: 2 << 10,
			L0CompactionThreshold: 2, MaxConcurrentCompactions: 2, BackgroundWALWrites: true,
			LBaseMaxBytes: 8 << 10, LevelMultiplier: 2}
	}},
	{name: "nocompact-nofilters", split: true, restart: "checkpoint", opts: func(testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: 4 << 10, BlockSize: 32 << 10,
			DisableAutomaticCompactions: true, DisableFilters: true, L0CompactionThreshold: 4}
	}},
	{name: "filtercap", split: true, restart: "random", opts: func(testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: 3 << 10, BlockSize: 128, TargetFileSize: 1 << 10,
			FilterBudget: &bloompolicy.Budget{Bytes: 64}, L0CompactionThreshold: 3,
			MaxConcurrentCompactions: 3, MaxOpenFiles: kv.MinMaxOpenFiles, StaticLevels: true,
			LBaseMaxBytes: 4 << 10}
	}},
	{name: "levels-nosplit", restart: "checkpoint", opts: func(t testing.TB) *kv.Options {
		levels := make([]kv.LevelOptions, 7)
		for i := range levels {
			levels[i].FilterPolicy = metaBloom(t, float64(1+2*i))
		}
		return &kv.Options{MemTableSize: 2 << 10, BlockSize: 256, TargetFileSize: 4 << 10,
			Levels: levels, L0CompactionThreshold: 2, BackgroundWALWrites: true,
			DisableL0Settling: true, FlushSplitBytes: -1, LBaseMaxBytes: 16 << 10}
	}},
	{name: "bloom1-split", split: true, restart: "reopen", opts: func(t testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: 8 << 10, BlockSize: 1 << 10, FilterPolicy: metaBloom(t, 1),
			L0CompactionThreshold: 1, MaxConcurrentCompactions: 1}
	}},
}

// metaStore is one store running the operations.
type metaStore struct {
	t     testing.TB
	cfg   metaConfig
	rng   *rand.Rand // the "random" restart's choices
	fs    vfs.FS
	dir   string
	opts  *kv.Options
	db    *kv.DB
	snaps map[int]*kv.Snapshot
	iters map[int]*kv.Iterator
	n     int // operations run
	// flushes and compactions counts those of the store's DBs closed.
	flushes, compactions int64
}

func newMetaStore(t testing.TB, cfg metaConfig, seed uint64) *metaStore {
	s := &metaStore{t: t, cfg: cfg, rng: newRand(seed ^ 0x7e57), fs: vfs.NewMem(), dir: "db",
		snaps: map[int]*kv.Snapshot{}, iters: map[int]*kv.Iterator{}}
	s.opts = cfg.opts(t)
	s.opts.FS = s.fs
	if cfg.split {
		c := *sstable.DefaultComparer
		c.Split, c.SplitName = metaSplit, "metamorphic.two-bytes"
		s.opts.Comparer = &c
	}
	s.open(false)
	return s
}

func (s *metaStore) open(readOnly bool) {
	o := *s.opts
	o.ReadOnly = readOnly
	db, err := kv.Open(s.dir, &o)
	if err != nil {
		s.t.Fatalf("%s: Open(read-only %v): %v", s.cfg.name, readOnly, err)
	}
	s.db = db
}

// closeReads closes every snapshot and iterator.
func (s *metaStore) closeReads() {
	for id, it := range s.iters {
		if err := it.Close(); err != nil {
			s.t.Fatalf("%s: i%d.Close: %v", s.cfg.name, id, err)
		}
	}
	for id, snap := range s.snaps {
		if err := snap.Close(); err != nil {
			s.t.Fatalf("%s: s%d.Close: %v", s.cfg.name, id, err)
		}
	}
	clear(s.iters)
	clear(s.snaps)
}

// close closes every snapshot and iterator, then the DB.
func (s *metaStore) close() {
	s.closeReads()
	if s.db != nil {
		m := s.db.Metrics()
		s.flushes += m.Flush.Count
		s.compactions += m.Compact.Count
		if err := s.db.Close(); err != nil {
			s.t.Fatalf("%s: Close: %v", s.cfg.name, err)
		}
		s.db = nil
	}
}

// errName names an error by the sentinel it wraps, so that messages that
// name files do not differ between stores.
func metaErrName(err error) string {
	for _, e := range []error{kv.ErrNotFound, kv.ErrInvalidPrefixSeek, kv.ErrReversePrefixIteration,
		kv.ErrIngestOverlap, kv.ErrReadOnly, kv.ErrClosed} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return err.Error()
}

// fmtValue shows a value in full when short, else its length and hash.
func metaValue(v []byte) string {
	if len(v) <= 20 {
		return fmt.Sprintf("%q", v)
	}
	h := fnv.New64a()
	h.Write(v)
	return fmt.Sprintf("%q…(%d B %x)", v[:12], len(v), h.Sum64())
}

// metaOut collects what one operation read.
type metaOut struct{ strings.Builder }

func (o *metaOut) err(err error) {
	if err != nil {
		o.WriteString("err(" + metaErrName(err) + ") ")
	}
}

func (o *metaOut) get(v []byte, err error) {
	if err != nil {
		o.err(err)
		return
	}
	o.WriteString(metaValue(v) + " ")
}

// pos writes where an iterator stands after a move.
func (o *metaOut) pos(it *kv.Iterator, ok bool) {
	switch {
	case ok != it.Valid():
		o.WriteString("(move returned " + fmt.Sprint(ok) + " but Valid is not) ")
	case ok:
		o.WriteString(fmtKey(it.Key()) + "=" + metaValue(it.Value()) + " ")
	default:
		o.WriteString(". ")
	}
	o.err(it.Error())
}

// metaReader is what an operation reads: the DB, a snapshot or an
// indexed batch.
type metaReader struct {
	get     func([]byte) ([]byte, error)
	newIter func(*kv.IterOptions) (*kv.Iterator, error)
}

func (s *metaStore) reader(snap int) (metaReader, bool) {
	if snap == 0 {
		return metaReader{s.db.Get, s.db.NewIter}, true
	}
	sn, ok := s.snaps[snap]
	if !ok {
		return metaReader{}, false
	}
	return metaReader{sn.Get, sn.NewIter}, true
}

func metaIterOpts(lo, hi []byte) *kv.IterOptions {
	if lo == nil && hi == nil {
		return nil
	}
	return &kv.IterOptions{LowerBound: lo, UpperBound: hi}
}

func metaMoveTo(it *kv.Iterator, m metaMove) bool {
	switch m.call {
	case 'f':
		return it.First()
	case 'l':
		return it.Last()
	case 'g':
		return it.SeekGE(m.key)
	case 't':
		return it.SeekLT(m.key)
	case 'n':
		return it.Next()
	}
	return it.Prev()
}

func (o *metaOut) moves(it *kv.Iterator, ms []metaMove) {
	for _, m := range ms {
		o.pos(it, metaMoveTo(it, m))
	}
}

// read runs a read operation on r.
func (s *metaStore) read(r metaReader, op metaOp, out *metaOut) {
	switch op.kind {
	case metaGet:
		out.get(r.get(op.key))
	case metaIter, metaPrefix:
		it, err := r.newIter(metaIterOpts(op.lo, op.hi))
		if err != nil {
			out.err(err)
			return
		}
		if op.kind == metaIter {
			out.moves(it, op.moves)
		} else {
			s.prefixTrace(it, op, out)
		}
		// Close returns the error that stopped the iterator, which its
		// trace shows already; a store without a Split has none.
		if last, err := it.Error(), it.Close(); err != nil && (last == nil || err.Error() != last.Error()) {
			out.err(err)
		}
	}
}

// prefixTrace runs SeekPrefixGE and Next calls on it. A store without a
// Split has no prefix seek (it fails with ErrInvalidPrefixSeek): there
// the seek is SeekGE, the bounds rules of SeekPrefixGE and a check of
// each key's prefix, which must show what the prefix seek shows.
func (s *metaStore) prefixTrace(it *kv.Iterator, op metaOp, out *metaOut) {
	if s.cfg.split {
		ok := it.SeekPrefixGE(op.key)
		out.pos(it, ok)
		for i := 0; i < op.nexts && ok; i++ {
			ok = it.Next()
			out.pos(it, ok)
		}
		return
	}
	prefix := op.key[:metaSplit(op.key)]
	hasPrefix := func(k []byte) bool { return bytes.HasPrefix(k, prefix) && metaSplit(k) == len(prefix) }
	key := op.key
	switch {
	case op.lo != nil && bytes.Compare(key, op.lo) < 0:
		if !hasPrefix(op.lo) {
			out.WriteString(". err(" + kv.ErrInvalidPrefixSeek.Error() + ") ")
			return
		}
		key = op.lo
	case op.hi != nil && bytes.Compare(key, op.hi) > 0:
		if !hasPrefix(op.hi) {
			out.WriteString(". err(" + kv.ErrInvalidPrefixSeek.Error() + ") ")
			return
		}
		key = op.hi
	}
	emit := func(ok bool) {
		if ok {
			out.pos(it, true)
			return
		}
		out.WriteString(". ")
		out.err(it.Error())
	}
	ok := it.SeekGE(key) && hasPrefix(it.Key())
	emit(ok)
	for i := 0; i < op.nexts && ok; i++ {
		ok = it.Next() && hasPrefix(it.Key())
		emit(ok)
	}
}
