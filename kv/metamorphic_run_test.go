package kv_test

// How a store of TestMetamorphic runs each operation.

import (
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
)

// metaWriter is what a write goes to: the DB or a batch.
type metaWriter interface {
	Set(key, value []byte) error
	Delete(key []byte) error
	DeleteRange(start, end []byte) error
}

// metaDBWriter writes to the DB, with the write options of each operation.
type metaDBWriter struct {
	db   *kv.DB
	opts *kv.WriteOptions
}

func (w metaDBWriter) Set(k, v []byte) error           { return w.db.Set(k, v, w.opts) }
func (w metaDBWriter) Delete(k []byte) error           { return w.db.Delete(k, w.opts) }
func (w metaDBWriter) DeleteRange(lo, hi []byte) error { return w.db.DeleteRange(lo, hi, w.opts) }

func metaWriteTo(w metaWriter, op metaOp) error {
	switch op.kind {
	case metaSet:
		return w.Set(op.key, op.value)
	case metaDelete:
		return w.Delete(op.key)
	}
	return w.DeleteRange(op.key, op.end)
}

// run runs op and returns what it read and the errors it met.
func (s *metaStore) run(op metaOp) string {
	s.n++
	var out metaOut
	switch op.kind {
	case metaSet, metaDelete, metaDeleteRange:
		out.err(metaWriteTo(metaDBWriter{s.db, &kv.WriteOptions{Sync: op.sync}}, op))
	case metaBatch:
		b := s.db.NewBatch()
		for _, w := range op.writes {
			out.err(metaWriteTo(b, w))
		}
		out.err(s.db.Apply(b, nil))
		b.Close()
	case metaIndexed:
		s.indexed(op, &out)
	case metaGet, metaIter, metaPrefix:
		if r, ok := s.reader(op.snap); ok {
			s.read(r, op, &out)
		}
	case metaNewSnap:
		s.snaps[op.id] = s.db.NewSnapshot()
	case metaCloseSnap:
		if sn, ok := s.snaps[op.id]; ok {
			out.err(sn.Close())
			delete(s.snaps, op.id)
		}
	case metaOpenIter, metaMoveIter, metaSetBounds, metaRefresh, metaCloseIter:
		s.iterOp(op, &out)
	case metaFlush:
		out.err(s.db.Flush())
	case metaCompact:
		out.err(s.db.Compact(op.lo, op.hi))
	case metaIngest:
		s.ingest(op, &out)
	case metaRestart:
		s.restart(&out)
	}
	return out.String()
}

func (s *metaStore) indexed(op metaOp, out *metaOut) {
	b := s.db.NewIndexedBatch()
	r := metaReader{b.Get, b.NewIter}
	for _, w := range op.writes {
		switch w.kind {
		case metaSet, metaDelete, metaDeleteRange:
			out.err(metaWriteTo(b, w))
		default:
			s.read(r, w, out)
		}
	}
	if op.apply {
		out.err(s.db.Apply(b, nil))
	}
	b.Close()
}

func (s *metaStore) iterOp(op metaOp, out *metaOut) {
	if op.kind == metaOpenIter {
		r, ok := s.reader(op.snap)
		if !ok {
			return
		}
		it, err := r.newIter(metaIterOpts(op.lo, op.hi))
		out.err(err)
		if err == nil {
			s.iters[op.id] = it
		}
		return
	}
	it, ok := s.iters[op.id]
	if !ok {
		return
	}
	switch op.kind {
	case metaMoveIter:
		out.moves(it, op.moves)
	case metaSetBounds:
		it.SetBounds(op.lo, op.hi)
	case metaRefresh:
		out.err(it.Refresh())
	case metaCloseIter:
		out.err(it.Close())
		delete(s.iters, op.id)
	}
}

// ingest writes op's tables with the store's block size and comparer,
// half of them with filters, and ingests them.
func (s *metaStore) ingest(op metaOp, out *metaOut) {
	dir := "ingest"
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	defer func() {
		if err := s.fs.RemoveAll(dir); err != nil {
			s.t.Fatal(err)
		}
	}()
	var paths []string
	for i, entries := range op.tables {
		path := s.fs.PathJoin(dir, fmt.Sprintf("%d-%d.sst", s.n, i))
		s.writeTable(path, entries, (s.n+i)%2 == 0)
		paths = append(paths, path)
	}
	out.err(s.db.Ingest(paths))
}

func (s *metaStore) writeTable(path string, entries []metaOp, filter bool) {
	f, err := s.fs.Create(path)
	if err != nil {
		s.t.Fatal(err)
	}
	o := sstable.WriterOptions{BlockSize: s.opts.BlockSize, Comparer: s.opts.Comparer}
	if filter {
		o.FilterPolicy = metaBloom(s.t, 10)
	}
	w := sstable.NewWriter(f, o)
	for _, e := range entries {
		kind, v := sstable.KindSet, e.value
		if e.kind == metaDelete {
			kind, v = sstable.KindDelete, nil
		}
		if err := w.Add(sstable.MakeInternalKey(e.key, 0, kind), v); err != nil {
			s.t.Fatalf("%s: Writer.Add: %v", s.cfg.name, err)
		}
	}
	if err := w.Close(); err != nil {
		s.t.Fatalf("%s: Writer.Close: %v", s.cfg.name, err)
	}
}

// scan writes every key and value the DB shows.
func (s *metaStore) scan() string {
	var out metaOut
	it, err := s.db.NewIter(nil)
	if err != nil {
		return "err(" + metaErrName(err) + ")"
	}
	for ok := it.First(); ok; ok = it.Next() {
		out.pos(it, ok)
	}
	out.err(it.Error())
	out.err(it.Close())
	return out.String()
}

// restart closes every snapshot and iterator (every store does), then
// makes the store's restart, and writes down a scan of the store.
func (s *metaStore) restart(out *metaOut) {
	before := s.scan()
	kind := s.cfg.restart
	if kind == "random" {
		kind = []string{"none", "reopen", "readonly", "checkpoint"}[s.rng.IntN(4)]
	}
	switch kind {
	case "none":
		s.closeReads()
	case "reopen":
		s.close()
		s.open(false)
	case "readonly":
		s.close()
		s.open(true)
		if got := s.scan(); got != before {
			out.WriteString(fmt.Sprintf("read-only scan differs: before %s after %s ", before, got))
		}
		if err := s.db.Set([]byte("a"), nil, nil); !errors.Is(err, kv.ErrReadOnly) {
			out.WriteString(fmt.Sprintf("read-only Set: %v ", err))
		}
		s.close()
		s.open(false)
	case "checkpoint":
		dst := fmt.Sprintf("checkpoint-%d", s.n)
		out.err(s.db.Checkpoint(dst))
		s.close()
		if err := s.fs.RemoveAll(s.dir); err != nil {
			s.t.Fatal(err)
		}
		s.dir = dst
		s.open(false)
	}
	out.WriteString("scan: " + s.scan())
}
