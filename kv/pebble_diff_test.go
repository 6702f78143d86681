package kv_test

// A differential test of the kv API against Pebble v1.1.5: the same random
// operations on both engines, every observable result compared. Users of
// bloomkv come from Pebble and expect its behaviour under its names; where
// bloomkv documents a difference, the test leaves that case out and says
// where, and so for the few faults of Pebble's that it meets. The
// iterators are in pebble_diff_iter_test.go, Ingest and
// EstimateDiskUsage in pebble_diff_ingest_test.go.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

var diffSteps = flag.Int("diffsteps", 0, "TestPebbleDiff: steps per seed (0: the default)")

// TestPebbleDiff drives a kv.DB and a pebble.DB with the same random
// operations and compares every result: writes, batches and range
// deletions (empty and inverted ones too), Sync and NoSync; Get and
// GetAppend of the DB, of snapshots and of indexed batches; iterators
// over each, with random bounds (equal and inverted ones too), moved at
// random, SetBounds, Clone and Refresh among the moves, some kept open
// across later writes; Reset of an indexed batch; flushes, compactions,
// ingests of tables and reopens; EstimateDiskUsage. Half the seeds give
// both engines a comparer with a Split, and prefix seeks join the moves.
// Where both fail, only that both failed is compared, not the messages.
// Memtables are small, so both engines flush and compact on their own
// too. Each seed is logged and named in every failure; -seed replays
// one, -diffsteps runs it longer.
func TestPebbleDiff(t *testing.T) {
	seeds, steps := 4, 1200
	if testing.Short() {
		seeds, steps = 2, 500
	}
	if *diffSteps > 0 {
		steps = *diffSteps
	}
	var ran diffCounts
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		r := newDiffRun(t, seed)
		defer r.closeAll()
		for range steps {
			r.step()
		}
		r.checkState()
		r.countMetrics()
		t.Logf("%+v", r.ran)
		ran.add(r.ran)
	})
	if t.Failed() {
		return
	}
	requireRan(t, "compared moves", ran.moves, seeds*steps/2)
	requireRan(t, "flushes", ran.flushes, seeds)
	requireRan(t, "compactions", ran.compactions, seeds)
	requireRan(t, "ingests", ran.ingests, seeds)
	if ran.splitSeeds > 0 {
		requireRan(t, "compared prefix seeks", ran.prefixSeeks, ran.splitSeeds*steps/20)
	}
}

// diffCounts counts what a run compared and what bloomkv's DB did, so
// the test can tell that it checked what it should.
type diffCounts struct {
	moves, prefixSeeks   int // positioning calls compared
	flushes, compactions int // bloomkv's, from Metrics
	ingests              int // that both engines took
	splitSeeds           int
}

func (c *diffCounts) add(o diffCounts) {
	c.moves += o.moves
	c.prefixSeeks += o.prefixSeeks
	c.flushes += o.flushes
	c.compactions += o.compactions
	c.splitSeeds += o.splitSeeds
	c.ingests += o.ingests
}

// countMetrics adds bloomkv's flushes and compactions since Open to the
// run's counts, before a Close.
func (r *diffRun) countMetrics() {
	m := r.kdb.Metrics()
	r.ran.flushes += int(m.Flush.Count)
	r.ran.compactions += int(m.Compact.Count)
}

// diffRun is one seed's run: both engines and what is open on them, each
// a pair of one object per engine.
type diffRun struct {
	seededRun
	rng   *rand.Rand
	kopts *kv.Options
	popts *pebble.Options
	kdb   *kv.DB
	pdb   *pebble.DB
	snaps []diffSnap
	iters []*diffIter
	batch *diffBatch // an open indexed batch, or nil
	split bool       // both comparers Split keys (diffSplit): SeekPrefixGE moves too
	ran   diffCounts
}

// diffSnap is a snapshot on both engines.
type diffSnap struct {
	k *kv.Snapshot
	p *pebble.Snapshot
}

// diffBatch is an indexed batch on both engines.
type diffBatch struct {
	k *kv.Batch
	p *pebble.Batch
}

// fmtKey quotes a key for messages, telling nil (no key: unbounded) from
// the empty key.
func fmtKey(k []byte) string {
	if k == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", k)
}

// diffReader is a read view on both engines: the DB, a snapshot or an
// indexed batch.
type diffReader struct {
	name  string
	kget  func([]byte) ([]byte, error)
	pget  func([]byte) ([]byte, io.Closer, error)
	kiter func(*kv.IterOptions) (*kv.Iterator, error)
	piter func(*pebble.IterOptions) (*pebble.Iterator, error)
	batch bool
	// kgetAppend is bloomkv's GetAppend, which Pebble's Get with its
	// Closer stands for; nil for a batch, which has none.
	kgetAppend func(dst, key []byte) ([]byte, error)
	snap       *kv.Snapshot // the snapshot read, or nil
}

func newDiffRun(t *testing.T, seed uint64) *diffRun {
	r := &diffRun{seededRun: seededRun{t: t, seed: seed}, rng: newRand(seed)}
	memTable := 64<<10 + r.rng.IntN(192<<10)
	r.kopts = &kv.Options{
		FS:                    vfs.NewMem(),
		MemTableSize:          int64(memTable),
		BlockSize:             256 << r.rng.IntN(3),
		TargetFileSize:        int64(16<<10 + r.rng.IntN(32<<10)),
		L0CompactionThreshold: 2 + r.rng.IntN(3),
		LBaseMaxBytes:         int64(64<<10 + r.rng.IntN(128<<10)),
	}
	r.popts = &pebble.Options{
		FS:                    vfs.NewMem(),
		MemTableSize:          uint64(memTable),
		L0CompactionThreshold: r.kopts.L0CompactionThreshold,
		LBaseMaxBytes:         r.kopts.LBaseMaxBytes,
		Logger:                pebbleadapter.QuietLogger{},
	}
	r.split = r.rng.IntN(2) == 0
	r.popts.Levels = make([]pebble.LevelOptions, 7)
	for i := range r.popts.Levels {
		r.popts.Levels[i] = pebble.LevelOptions{BlockSize: r.kopts.BlockSize, TargetFileSize: r.kopts.TargetFileSize}
		if r.split { // so that Pebble's prefix seeks ask filters, as bloomkv's do
			r.popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		}
	}
	if r.split {
		r.ran.splitSeeds = 1
		kc := *sstable.DefaultComparer
		kc.Split, kc.SplitName = diffSplit, "difftest.first-byte"
		pc := *pebble.DefaultComparer
		pc.Split, pc.Name = diffSplit, "difftest.first-byte"
		r.kopts.Comparer, r.popts.Comparer = &kc, &pc
	}
	t.Logf("memtables of %d B, blocks of %d B, tables of %d B, split %v",
		memTable, r.kopts.BlockSize, r.kopts.TargetFileSize, r.split)
	r.open()
	return r
}

// diffSplit is the Split of the runs with prefixes: a key's first byte.
func diffSplit(key []byte) int { return min(len(key), 1) }

func (r *diffRun) open() {
	var err error
	r.kdb, err = kv.Open("db", r.kopts)
	r.check(err, "kv.Open")
	r.pdb, err = pebble.Open("db", r.popts)
	r.check(err, "pebble.Open")
}

// sameErr fails the run when one engine's call failed and the other's did
// not; it reports whether both succeeded.
func (r *diffRun) sameErr(what string, kerr, perr error) bool {
	r.t.Helper()
	if (kerr == nil) != (perr == nil) {
		r.fatalf("%s: bloomkv error %v, Pebble error %v", what, kerr, perr)
	}
	return kerr == nil
}

// diffAlphabet and diffMaxKeyLen make the key space: every key of one to
// three of these letters (84 keys), and the empty key.
const (
	diffAlphabet  = "abcd"
	diffMaxKeyLen = 3
)

func (r *diffRun) key() []byte {
	switch r.rng.IntN(100) {
	case 0:
		return []byte{}
	case 1:
		return nil // the empty key too
	}
	k := make([]byte, 1+r.rng.IntN(diffMaxKeyLen))
	for i := range k {
		k[i] = diffAlphabet[r.rng.IntN(len(diffAlphabet))]
	}
	return k
}

// seekKey returns a key of the key space, or a key between two of them,
// or one past them all, or now and then nil.
func (r *diffRun) seekKey() []byte {
	switch r.rng.IntN(12) {
	case 0:
		return append(r.key(), 0)
	case 1:
		return []byte("e")
	case 2:
		return nil
	}
	return r.key()
}

// value returns a value naming the step, mostly short, sometimes empty,
// sometimes a few kilobytes, so that memtables fill.
func (r *diffRun) value() []byte {
	n := r.rng.IntN(200)
	switch r.rng.IntN(20) {
	case 0:
		return []byte{}
	case 1:
		n = 1<<10 + r.rng.IntN(4<<10)
	}
	v := fmt.Appendf(nil, "v%d.", r.log.n)
	for len(v) < n {
		v = append(v, byte('a'+r.rng.IntN(26)))
	}
	return v
}

func (r *diffRun) writeOpts() (*kv.WriteOptions, *pebble.WriteOptions, string) {
	if r.rng.IntN(8) == 0 {
		return kv.Sync, pebble.Sync, "Sync"
	}
	return kv.NoSync, pebble.NoSync, "NoSync"
}

// step performs one random operation on both engines and compares.
func (r *diffRun) step() {
	switch p := r.rng.IntN(1000); {
	case p < 220:
		r.set()
	case p < 300:
		r.del()
	case p < 340:
		r.delRange()
	case p < 420:
		r.applyBatch()
	case p < 520:
		r.get(r.reader())
	case p < 620:
		r.iterate(r.reader())
	case p < 660:
		r.keepIter()
	case p < 740:
		r.moveKeptIter()
	case p < 770:
		r.newSnapshot()
	case p < 790:
		r.closeSnapshot()
	case p < 880:
		r.batchStep()
	case p < 910:
		r.log.add("Flush")
		r.sameErr("Flush", r.kdb.Flush(), r.pdb.Flush())
	case p < 935:
		r.compact()
	case p < 945:
		r.unindexedBatchReads()
	case p < 955:
		r.reopen()
	case p < 970:
		r.ingest()
	case p < 980:
		r.estimate()
	default:
		r.checkState()
	}
}

func (r *diffRun) set() {
	k, v := r.key(), r.value()
	ko, po, o := r.writeOpts()
	r.log.add("Set(%s, %s, %s)", fmtKey(k), short(v), o)
	r.sameErr("Set", r.kdb.Set(k, v, ko), r.pdb.Set(k, v, po))
}

func (r *diffRun) del() {
	k := r.key()
	ko, po, o := r.writeOpts()
	r.log.add("Delete(%s, %s)", fmtKey(k), o)
	r.sameErr("Delete", r.kdb.Delete(k, ko), r.pdb.Delete(k, po))
}

// rangeKeys returns the ends of a range deletion: in order, or equal, or
// inverted.
func (r *diffRun) rangeKeys() (start, end []byte) {
	start, end = r.key(), r.key()
	switch r.rng.IntN(8) {
	case 0:
		end = start
	case 1, 2:
		// as drawn: inverted about half the time
	default:
		if bytes.Compare(start, end) > 0 {
			start, end = end, start
		}
	}
	return start, end
}

func (r *diffRun) delRange() {
	start, end := r.rangeKeys()
	ko, po, o := r.writeOpts()
	r.log.add("DeleteRange(%s, %s, %s)", fmtKey(start), fmtKey(end), o)
	r.sameErr("DeleteRange", r.kdb.DeleteRange(start, end, ko), r.pdb.DeleteRange(start, end, po))
}

// writeBatch adds up to 8 random writes (now and then none) to a batch
// on both engines and returns their description.
func (r *diffRun) writeBatch(kb *kv.Batch, pb *pebble.Batch) string {
	desc := []byte{}
	n := 1 + r.rng.IntN(8)
	if r.rng.IntN(20) == 0 {
		n = 0
	}
	defer func() {
		if kb.Count() != int(pb.Count()) || kb.Empty() != pb.Empty() {
			r.fatalf("batch [%s]: bloomkv's Count %d, Empty %v; Pebble's Count %d, Empty %v",
				desc, kb.Count(), kb.Empty(), pb.Count(), pb.Empty())
		}
	}()
	for ; n > 0; n-- {
		switch p := r.rng.IntN(10); {
		case p < 6:
			k, v := r.key(), r.value()
			desc = fmt.Appendf(desc, "set %s=%s; ", fmtKey(k), short(v))
			r.sameErr("Batch.Set", kb.Set(k, v), pb.Set(k, v, nil))
		case p < 9:
			k := r.key()
			desc = fmt.Appendf(desc, "del %s; ", fmtKey(k))
			r.sameErr("Batch.Delete", kb.Delete(k), pb.Delete(k, nil))
		default:
			start, end := r.rangeKeys()
			desc = fmt.Appendf(desc, "del-range %s-%s; ", fmtKey(start), fmtKey(end))
			r.sameErr("Batch.DeleteRange", kb.DeleteRange(start, end), pb.DeleteRange(start, end, nil))
		}
	}
	return string(desc)
}

// applyBatch applies a plain batch, through Apply, or Pebble's Commit.
func (r *diffRun) applyBatch() {
	kb, pb := r.kdb.NewBatch(), r.pdb.NewBatch()
	desc := r.writeBatch(kb, pb)
	ko, po, o := r.writeOpts()
	var perr error
	if r.rng.IntN(2) == 0 {
		r.log.add("Apply(%s) [%s]", o, desc)
		perr = r.pdb.Apply(pb, po)
	} else {
		r.log.add("Apply(%s) [%s] (Pebble: Batch.Commit)", o, desc)
		perr = pb.Commit(po)
	}
	r.sameErr("Apply", r.kdb.Apply(kb, ko), perr)
	kb.Close()
	r.check(pb.Close(), "pebble Batch.Close")
}

// reader picks the DB, an open snapshot or the open indexed batch.
func (r *diffRun) reader() diffReader {
	switch n := r.rng.IntN(4); {
	case n == 1 && len(r.snaps) > 0:
		i := r.rng.IntN(len(r.snaps))
		s := r.snaps[i]
		return diffReader{fmt.Sprintf("snapshot %d", i), s.k.Get, s.p.Get, s.k.NewIter, s.p.NewIter, false, s.k.GetAppend, s.k}
	case n == 2 && r.batch != nil:
		return r.batch.reader()
	}
	return diffReader{"DB", r.kdb.Get, r.pdb.Get, r.kdb.NewIter, r.pdb.NewIter, false, r.kdb.GetAppend, nil}
}

func (b *diffBatch) reader() diffReader {
	return diffReader{"indexed batch", b.k.Get, b.p.Get, b.k.NewIter, b.p.NewIter, true, nil, nil}
}

// get compares a Get of a random key, and GetAppend where the reader has
// one.
func (r *diffRun) get(rd diffReader) {
	k := r.key()
	r.log.add("%s: Get(%s)", rd.name, fmtKey(k))
	r.sameGetOf(rd, k)
}

// sameGetOf compares the Get, and GetAppend, of key through rd.
func (r *diffRun) sameGetOf(rd diffReader, k []byte) {
	r.t.Helper()
	kv1, kerr := rd.kget(k)
	pv, closer, perr := rd.pget(k)
	if perr == nil {
		pv = bytes.Clone(pv)
		r.check(closer.Close(), "pebble Get's Closer.Close")
	}
	r.sameGet(rd.name+": Get", k, kv1, kerr, pv, perr)
	if rd.kgetAppend == nil {
		return
	}
	dst := []byte("dst")
	got, err := rd.kgetAppend(dst, k)
	if !bytes.HasPrefix(got, dst) {
		r.fatalf("%s: GetAppend(%s) = %q, lost its dst %q", rd.name, fmtKey(k), got, dst)
	}
	r.sameGet(rd.name+": GetAppend", k, got[len(dst):], err, pv, perr)
}

// sameGet compares the results of a Get: found or not, and the value.
func (r *diffRun) sameGet(what string, key, kval []byte, kerr error, pval []byte, perr error) {
	r.t.Helper()
	kmiss, pmiss := errors.Is(kerr, kv.ErrNotFound), errors.Is(perr, pebble.ErrNotFound)
	if kmiss != pmiss {
		r.fatalf("%s(%s): bloomkv %s, %v; Pebble %s, %v", what, fmtKey(key), short(kval), kerr, short(pval), perr)
	}
	if kmiss || !r.sameErr(fmt.Sprintf("%s(%s)", what, fmtKey(key)), kerr, perr) {
		return
	}
	if !bytes.Equal(kval, pval) {
		r.fatalf("%s(%s): bloomkv %s, Pebble %s", what, fmtKey(key), short(kval), short(pval))
	}
}

func (r *diffRun) newSnapshot() {
	if len(r.snaps) >= 3 {
		r.closeSnapshot()
	}
	r.log.add("NewSnapshot (%d)", len(r.snaps))
	r.snaps = append(r.snaps, diffSnap{r.kdb.NewSnapshot(), r.pdb.NewSnapshot()})
}

// closeSnapshot closes a snapshot; iterators kept over it stay open, and
// must still show its state.
func (r *diffRun) closeSnapshot() {
	if len(r.snaps) == 0 {
		return
	}
	i := r.rng.IntN(len(r.snaps))
	r.log.add("snapshot %d: Close", i)
	r.sameErr("Snapshot.Close", r.snaps[i].k.Close(), r.snaps[i].p.Close())
	r.snaps = append(r.snaps[:i], r.snaps[i+1:]...)
}

// batchStep opens an indexed batch, or writes to the open one, or reads
// it (Get and NewIter are also drawn by reader), or resets it, or applies
// and closes it.
func (r *diffRun) batchStep() {
	if r.batch == nil {
		r.log.add("NewIndexedBatch")
		r.batch = &diffBatch{r.kdb.NewIndexedBatch(), r.pdb.NewIndexedBatch()}
		return
	}
	switch r.rng.IntN(6) {
	case 0, 1:
		r.log.add("indexed batch: [%s]", r.writeBatch(r.batch.k, r.batch.p))
	case 2:
		rd := r.batch.reader()
		r.get(rd)
		r.iterate(rd)
	case 3:
		// Reset empties the batch, which stays indexed; the iterators
		// over it go first.
		r.closeIters(func(it *diffIter) bool { return it.overBatch })
		r.log.add("indexed batch: Reset")
		r.batch.k.Reset()
		r.batch.p.Reset()
	default:
		r.applyIndexedBatch()
	}
}

// applyIndexedBatch applies the open indexed batch, after closing the
// iterators over it, and closes it.
func (r *diffRun) applyIndexedBatch() {
	r.closeIters(func(it *diffIter) bool { return it.overBatch })
	ko, po, o := r.writeOpts()
	r.log.add("indexed batch: Apply(%s)", o)
	r.sameErr("indexed batch: Apply", r.kdb.Apply(r.batch.k, ko), r.pdb.Apply(r.batch.p, po))
	r.batch.k.Close()
	r.check(r.batch.p.Close(), "pebble Batch.Close")
	r.batch = nil
}

// unindexedBatchReads reads a plain batch: both engines refuse. bloomkv's
// Batch.NewIter returns ErrNotIndexed, as it documents
// (kv/indexed_batch.go), where Pebble's returns an iterator whose Error
// is ErrNotIndexed; both count as refusing.
func (r *diffRun) unindexedBatchReads() {
	r.log.add("plain batch: Get, NewIter")
	kb, pb := r.kdb.NewBatch(), r.pdb.NewBatch()
	defer kb.Close()
	defer pb.Close()
	_, kerr := kb.Get([]byte("a"))
	_, _, perr := pb.Get([]byte("a"))
	r.sameErr("plain batch: Get", kerr, perr)
	kit, kerr := kb.NewIter(nil)
	pit, perr := pb.NewIter(nil)
	if perr == nil {
		perr = pit.Error()
		pit.Close()
	}
	if kerr == nil {
		kit.Close()
	}
	r.sameErr("plain batch: NewIter", kerr, perr)
}

// compact compacts a random range on both engines: in order, equal, or
// inverted (both refuse that). bloomkv's DB.Compact documents nil as
// unbounded and both ends as inclusive (kv/compact.go), so a nil end, or
// start = end, is a range to compact, where Pebble's refuses any start
// not below end (nil sorting first): for those bloomkv alone is called,
// and must succeed.
func (r *diffRun) compact() {
	start, end := r.seekKey(), r.seekKey()
	if r.rng.IntN(4) != 0 && bytes.Compare(start, end) > 0 {
		start, end = end, start
	}
	r.log.add("Compact(%s, %s)", fmtKey(start), fmtKey(end))
	kerr := r.kdb.Compact(start, end)
	if end == nil || bytes.Equal(start, end) {
		r.check(kerr, "Compact")
		return
	}
	r.sameErr("Compact", kerr, r.pdb.Compact(start, end, false))
}

// reopen closes what is open on both engines, closes both and opens them
// again on the same files, and compares their whole state.
func (r *diffRun) reopen() {
	r.log.add("Close and reopen")
	r.closeOpen()
	r.countMetrics()
	r.check(r.kdb.Close(), "kv.DB.Close")
	r.check(r.pdb.Close(), "pebble.DB.Close")
	r.open()
	r.checkState()
}

// closeOpen closes the iterators, snapshots and indexed batch open on
// both engines (the batch unapplied).
func (r *diffRun) closeOpen() {
	r.closeIters(func(*diffIter) bool { return true })
	for _, s := range r.snaps {
		r.sameErr("Snapshot.Close", s.k.Close(), s.p.Close())
	}
	r.snaps = nil
	if r.batch != nil {
		r.batch.k.Close()
		r.check(r.batch.p.Close(), "pebble Batch.Close")
		r.batch = nil
	}
}

// checkState compares a full scan of both DBs, both ways, and a Get of
// every key of the key space.
func (r *diffRun) checkState() {
	r.log.add("check the whole state")
	it := &diffIter{src: "full scan"}
	var kerr, perr error
	it.k, kerr = r.kdb.NewIter(nil)
	it.p, perr = r.pdb.NewIter(nil)
	r.sameErr("NewIter", kerr, perr)
	for kok, pok := it.k.First(), it.p.First(); ; kok, pok = it.k.Next(), it.p.Next() {
		if r.samePosition(it, "forward scan", kok, pok); !kok {
			break
		}
	}
	for kok, pok := it.k.Last(), it.p.Last(); ; kok, pok = it.k.Prev(), it.p.Prev() {
		if r.samePosition(it, "backward scan", kok, pok); !kok {
			break
		}
	}
	r.closeIter(it)
	rd := diffReader{name: "DB", kget: r.kdb.Get, pget: r.pdb.Get, kgetAppend: r.kdb.GetAppend}
	for _, k := range diffKeySpace() {
		r.sameGetOf(rd, k)
	}
}

// diffKeySpace returns every key that key draws.
func diffKeySpace() [][]byte {
	keys := [][]byte{{}}
	for n, last := 0, keys; n < diffMaxKeyLen; n++ {
		var next [][]byte
		for _, k := range last {
			for _, c := range []byte(diffAlphabet) {
				next = append(next, append(bytes.Clone(k), c))
			}
		}
		keys, last = append(keys, next...), next
	}
	return keys
}

// closeAll releases what the run holds and closes both engines.
func (r *diffRun) closeAll() {
	if r.t.Failed() {
		return // what is open may be half made; the test's memory goes anyway
	}
	r.closeOpen()
	r.check(r.kdb.Close(), "kv.DB.Close")
	r.check(r.pdb.Close(), "pebble.DB.Close")
}
