package kv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestDB_Model drives a DB with random operations and checks every answer
// against a map: sets, deletes and batches with repeated keys; gets; bounded
// iterators moved at random in both directions; snapshots and iterators kept
// open across writes, flushes and compactions (each checked against a copy
// of the map taken when it was opened); flushes, manual compactions, and
// close/reopen, sometimes with the filters switched off or to another
// policy; and the day-two API: indexed batches read between their writes,
// tables ingested (with range deletions at times), and checkpoints opened
// and checked whole. Memtables and tables are tiny, so flushes,
// compactions and MANIFEST rollovers happen all the time. Each seed is
// logged and named in every failure; -seed replays one.
func TestDB_Model(t *testing.T) {
	testModel(t, false)
}

// TestDB_Model_FilterCap runs the model test with filter memory capped
// (FilterBudget{Bytes}, tens to hundreds of bytes: filters are left out at
// times) and, at reopens, the cap changed, removed or set again. Metrics
// must never show more filter bytes held than the cap.
func TestDB_Model_FilterCap(t *testing.T) {
	testModel(t, true)
}

func testModel(t *testing.T, capped bool) {
	seeds, steps := 5, 5000
	if testing.Short() {
		seeds, steps = 2, 1000
		if capped { // enough steps that flushes outgrow the cap
			seeds, steps = 3, 3000
		}
	}
	cut, heldUnderCap := 0, 0
	var done dayTwoCounts
	defer func() {
		if capped && !t.Failed() && (cut == 0 || heldUnderCap == 0) {
			t.Fatalf("Metrics saw filters left out or held smaller by the cap %d times, held under a cap %d times", cut, heldUnderCap)
		}
		if !t.Failed() && testseed.Flag() == 0 && done.short() {
			t.Fatalf("too few day-two operations checked: %+v", done)
		}
		t.Logf("day-two operations checked: %+v", done)
	}()
	bounds, clones, refreshes := reuseMoves.setBounds.Load(), reuseMoves.clones.Load(), reuseMoves.refreshes.Load()
	run := func(t *testing.T, seed uint64) {
		r := newModelRun(t, seed)
		if capped {
			r.capFilters()
		}
		defer r.closeAll()
		for i := 0; i < steps; i++ {
			r.step()
			if capped && i%5 == 0 {
				r.metrics()
			}
		}
		r.checkFull()
		done.add(r.done)
		if capped {
			t.Logf("Metrics calls saw filters held under a cap %d times, filters left out or held smaller %d times", r.heldUnderCapSeen, r.cutSeen)
			cut += r.cutSeen
			heldUnderCap += r.heldUnderCapSeen
		}
	}
	forEachSeed(t, seeds, run)
	// The moves checked since the test began, and whether they fall short
	// of what it requires.
	moves := func() (b, c, r int64, short bool) {
		b, c, r = reuseMoves.setBounds.Load()-bounds, reuseMoves.clones.Load()-clones, reuseMoves.refreshes.Load()-refreshes
		return b, c, r, b < int64(seeds*20) || c < int64(seeds*20) || r < int64(seeds*5)
	}
	// The moves of kept iterators, and the day-two operations, are drawn
	// at random: seeds that drew few of them are followed by more seeds,
	// up to three, until those checked reach what the test requires.
	for extra := 0; extra < 3 && !t.Failed() && testseed.Flag() == 0; extra++ {
		if _, _, _, short := moves(); !short && !done.short() {
			break
		}
		forEachSeed(t, 1, run)
	}
	b, c, r, short := moves()
	if !t.Failed() && short {
		t.Fatalf("only %d SetBounds, %d Clone and %d Refresh moves checked", b, c, r)
	}
	t.Logf("checked %d SetBounds, %d Clone and %d Refresh moves", b, c, r)
}

// TestDB_Model_Disk runs the model test on the disk (vfs.Default), whose
// WAL the default mode memory-maps (wal_mmap.go): a page or two at a time
// here, with memtables of 16 to 64 KiB, so that records, the Sync ones
// the sink writes with pwrite(2) among them, cross mapped chunks all the
// time. One seed in two writes the WAL in the background; the others
// check a copy of the open store, every 300 steps, to hold every write
// acknowledged (see crashCopy).
func TestDB_Model_Disk(t *testing.T) {
	seeds, steps := 3, 3000
	if testing.Short() {
		seeds, steps = 2, 1000
	}
	mapped, crossed, copies, wantCopies := 0, 0, 0, 0
	run := func(t *testing.T, seed uint64) {
		r := newModelRunOn(t, seed, vfs.Default, filepath.Join(t.TempDir(), "db"), func(r *modelRun) {
			r.opts.BackgroundWALWrites = r.rng.IntN(2) == 0
			r.opts.MemTableSize = int64(16<<10 + r.rng.IntN(48<<10))
			kv.SmallWALMmapChunks(r.opts, int64(1+r.rng.IntN(2))*4096)
		})
		defer r.closeAll()
		if !kv.WALMapped(r.db) {
			t.Skip("no mapped WAL on this file system")
		}
		mapped++
		if !r.opts.BackgroundWALWrites {
			wantCopies += steps / 300
		}
		for i := range steps {
			r.step()
			if kv.WALPastFirstMappedChunk(r.db) {
				crossed++
			}
			if i%300 == 299 && !r.opts.BackgroundWALWrites {
				r.crashCopy()
				copies++
			}
		}
		r.checkFull()
	}
	forEachSeed(t, seeds, run)
	// A seed's memtable and chunk sizes, its WAL mode and how often its
	// steps switch WALs (flushes, ingestions) are drawn at random: seeds
	// whose WALs seldom got past their first chunk, or that all wrote
	// the WAL in the background (no crash copy), are followed by more,
	// up to three.
	for extra := 0; extra < 3 && !t.Failed() && mapped > 0 && testseed.Flag() == 0; extra++ {
		if crossed >= mapped*steps/10 && copies > 0 {
			break
		}
		forEachSeed(t, 1, run)
	}
	t.Logf("the WAL was past its first mapped chunk after %d steps of %d; %d crash copies checked", crossed, mapped*steps, copies)
	if t.Failed() || mapped == 0 {
		return // no seed ran on a mapped WAL: each skipped, saying why
	}
	if crossed < mapped*steps/10 {
		t.Fatalf("the WAL's records were past its first mapped chunk after %d steps of %d: want a tenth", crossed, mapped*steps)
	}
	if copies != wantCopies {
		t.Fatalf("%d crash copies checked, want %d", copies, wantCopies)
	}
}

// modelRun is one seed's run: the DB, its model, and what is open on it.
type modelRun struct {
	seededRun
	rng   *rand.Rand
	fs    vfs.FS
	dir   string // the store's directory on fs
	opts  *kv.Options
	db    *kv.DB
	model map[string]string
	snaps []*modelSnap
	iters []*modelIter
	// capped runs reopen with filter memory caps (see capFilters);
	// cutSeen counts the Metrics calls that saw the cap bind: a table
	// whose filter it left out, or holds smaller than its own (a filter
	// built in memory at the bits the allocation gives it).
	capped  bool
	cutSeen int
	// heldUnderCapSeen counts those that saw filters held under a cap.
	heldUnderCapSeen int
	// done counts the day-two operations checked.
	done dayTwoCounts
}

// dayTwoCounts counts the checks of the operations beyond reads and
// writes: a test that requires them fails when too few ran.
type dayTwoCounts struct {
	indexedReads, indexedApplied int // reads through indexed batches; batches applied
	ingested, ingestedRangeDels  int // tables ingested; those with a range deletion
	checkpoints                  int // checkpoints opened and checked
}

func (c *dayTwoCounts) add(o dayTwoCounts) {
	c.indexedReads += o.indexedReads
	c.indexedApplied += o.indexedApplied
	c.ingested += o.ingested
	c.ingestedRangeDels += o.ingestedRangeDels
	c.checkpoints += o.checkpoints
}

// short reports whether any count is 0.
func (c dayTwoCounts) short() bool {
	return min(c.indexedReads, c.indexedApplied, c.ingested, c.ingestedRangeDels, c.checkpoints) == 0
}

// modelSnap is an open snapshot and the model as it was when taken;
// closed is set once it is closed while iterators over it stay open.
type modelSnap struct {
	s      *kv.Snapshot
	model  map[string]string
	closed bool
}

// modelIter is an iterator kept open across other operations, with the
// model as it was when it was opened or last refreshed; snap is the
// snapshot it reads, nil for the DB.
type modelIter struct {
	it   *kv.Iterator
	im   *iterModel
	snap *modelSnap
}

// Key space: families of three keys that are prefixes of one another
// ("k012", "k012\x00", "k012/<long suffix>"), plus the empty key.
const modelKeys = 240

func modelKey(i int) []byte {
	if i == 0 {
		return []byte{}
	}
	base := fmt.Sprintf("k%03d", i/3)
	switch i % 3 {
	case 1:
		return []byte(base + "\x00")
	case 2:
		return []byte(base + "/" + strings.Repeat("s", 40))
	}
	return []byte(base)
}

func newModelRun(t *testing.T, seed uint64) *modelRun {
	return newModelRunOn(t, seed, vfs.NewMem(), "db", nil)
}

// newModelRunOn starts the run of seed on the store in dir on fs, with
// random options, which adjust, if not nil, changes before the first
// Open.
func newModelRunOn(t *testing.T, seed uint64, fs vfs.FS, dir string, adjust func(*modelRun)) *modelRun {
	r := &modelRun{seededRun: seededRun{t: t, seed: seed}, rng: newRand(seed), fs: fs, dir: dir, model: map[string]string{}}
	r.opts = &kv.Options{
		FS:                    r.fs,
		MemTableSize:          int64(2<<10 + r.rng.IntN(14<<10)),
		BlockSize:             64 << r.rng.IntN(5),
		TargetFileSize:        int64(2<<10 + r.rng.IntN(8<<10)),
		L0CompactionThreshold: 2 + r.rng.IntN(3),
		LBaseMaxBytes:         int64(8<<10 + r.rng.IntN(32<<10)),
		LevelMultiplier:       2 + r.rng.IntN(3),
		BlockCacheSize:        int64(1 + r.rng.IntN(64<<10)),
		MaxOpenFiles:          kv.MinMaxOpenFiles + r.rng.IntN(16),
		MaxManifestFileSize:   int64(1 + r.rng.IntN(4<<10)),
		// Several compactions at once, at times: they must not pick
		// overlapping inputs, nor race flushes and ingests.
		MaxConcurrentCompactions: 1 + r.rng.IntN(3),
	}
	if adjust != nil {
		adjust(r)
	}
	shown := *r.opts
	shown.FS = nil
	r.t.Logf("options: %+v", shown)
	r.open()
	return r
}

// checkLeaks checks the error of a DB.Close with iters iterators and snaps
// snapshots open: nil when none are, else ErrLeaked counting both.
func (r *modelRun) checkLeaks(err error, iters, snaps int) {
	r.t.Helper()
	if iters+snaps == 0 {
		r.check(err, "Close")
		return
	}
	want := fmt.Sprintf("(iterators: %d, snapshots: %d)", iters, snaps)
	if !errors.Is(err, kv.ErrLeaked) || !strings.Contains(err.Error(), want) {
		r.fatalf("Close with iterators and snapshots open: %v, want ErrLeaked %s", err, want)
	}
}

func (r *modelRun) open() {
	db, err := kv.Open(r.dir, r.opts)
	r.check(err, "Open")
	r.db = db
}

func (r *modelRun) randKey() []byte {
	return modelKey(r.rng.IntN(modelKeys))
}

// seekKey returns a key, or a key just after or before one, or a prefix.
func (r *modelRun) seekKey() []byte {
	k := r.randKey()
	switch r.rng.IntN(4) {
	case 0:
		return append(k, 0x01)
	case 1:
		if len(k) > 0 {
			return k[:r.rng.IntN(len(k))]
		}
	case 2:
		return append(k, 0xff)
	}
	return k
}

// randValue returns a value naming the step, mostly short, sometimes
// empty, sometimes larger than a block.
func (r *modelRun) randValue() []byte {
	var n int
	switch p := r.rng.IntN(100); {
	case p < 5:
		return []byte{}
	case p < 70:
		n = r.rng.IntN(32)
	case p < 96:
		n = 32 + r.rng.IntN(480)
	default:
		n = 2<<10 + r.rng.IntN(6<<10)
	}
	v := fmt.Appendf(nil, "v%d.", r.log.n)
	for len(v) < n {
		v = append(v, byte('a'+r.rng.IntN(26)))
	}
	return v
}

func (r *modelRun) writeOpts() *kv.WriteOptions {
	if r.rng.IntN(10) == 0 {
		return kv.Sync
	}
	return kv.NoSync
}

// step performs one random operation and checks its result.
func (r *modelRun) step() {
	switch p := r.rng.IntN(1000); {
	case p < 260:
		r.set()
	case p < 370:
		r.del()
	case p < 390:
		r.delRange()
	case p < 490:
		r.batch()
	case p < 510:
		r.indexedBatch()
	case p < 660:
		r.get()
	case p < 760:
		r.iterate()
	case p < 790:
		r.openIter()
	case p < 840:
		r.checkIters()
	case p < 865:
		r.newSnapshot()
	case p < 885:
		r.closeSnapshot()
	case p < 935:
		r.checkSnapshot()
	case p < 955:
		r.log.add("Flush")
		r.check(r.db.Flush(), "Flush")
	case p < 965:
		r.compact()
	case p < 975:
		r.ingest()
	case p < 980:
		r.checkpoint()
	case p < 987:
		r.reopen()
	default:
		r.metrics()
	}
}

func (r *modelRun) set() {
	k, v, o := r.randKey(), r.randValue(), r.writeOpts()
	r.log.add("Set(%q, %s, sync=%v)", k, short(v), o.Sync)
	r.check(r.db.Set(k, v, o), "Set")
	r.model[string(k)] = string(v)
}

func (r *modelRun) del() {
	k, o := r.randKey(), r.writeOpts()
	r.log.add("Delete(%q, sync=%v)", k, o.Sync)
	r.check(r.db.Delete(k, o), "Delete")
	delete(r.model, string(k))
}

// randRange returns two random keys, in order but for one time in ten, when
// the range is empty (a no-op).
func (r *modelRun) randRange() (lo, hi []byte) {
	lo, hi = r.randKey(), r.randKey()
	if bytes.Compare(lo, hi) > 0 && r.rng.IntN(10) != 0 {
		lo, hi = hi, lo
	}
	return lo, hi
}

func (r *modelRun) delRange() {
	lo, hi := r.randRange()
	o := r.writeOpts()
	r.log.add("DeleteRange(%q, %q, sync=%v)", lo, hi, o.Sync)
	r.check(r.db.DeleteRange(lo, hi, o), "DeleteRange")
	crashWrite{delRanges: [][2]string{{string(lo), string(hi)}}}.apply(r.model)
}

// batch applies a batch of sets and deletes, with repeated keys (the last
// write of a key in a batch wins), sometimes after a range deletion.
func (r *modelRun) batch() {
	b := r.db.NewBatch()
	pending := map[string]*string{}
	var desc []string
	var ranges [][2]string
	if r.rng.IntN(4) == 0 {
		lo, hi := r.randRange()
		r.check(b.DeleteRange(lo, hi), "Batch.DeleteRange")
		ranges = append(ranges, [2]string{string(lo), string(hi)})
		desc = append(desc, fmt.Sprintf("del-range %q-%q", lo, hi))
	}
	for n := 1 + r.rng.IntN(12); n > 0; n-- {
		k := r.randKey()
		if r.rng.IntN(3) == 0 {
			r.check(b.Delete(k), "Batch.Delete")
			pending[string(k)] = nil
			desc = append(desc, fmt.Sprintf("del %q", k))
			continue
		}
		v := r.randValue()
		r.check(b.Set(k, v), "Batch.Set")
		s := string(v)
		pending[string(k)] = &s
		desc = append(desc, fmt.Sprintf("set %q=%s", k, short(v)))
	}
	o := r.writeOpts()
	r.log.add("Apply(sync=%v) [%s]", o.Sync, strings.Join(desc, ", "))
	r.check(r.db.Apply(b, o), "Apply")
	crashWrite{delRanges: ranges, kvs: pending}.apply(r.model)
}

// indexedBatch writes into an indexed batch, and reads it between its
// writes: its Get and iterators must show the DB with the batch's writes
// over it, in the order they were made, and an iterator kept open across
// later writes only those made before it opened. The batch is then
// applied, or closed unapplied.
func (r *modelRun) indexedBatch() {
	b := r.db.NewIndexedBatch()
	defer b.Close()
	over := maps.Clone(r.model) // the DB's state read through the batch
	var kept *kv.Iterator
	var keptModel *iterModel
	var desc []string
	for n := 1 + r.rng.IntN(10); n > 0; n-- {
		switch p := r.rng.IntN(12); {
		case p < 5:
			k, v := r.randKey(), r.randValue()
			r.check(b.Set(k, v), "IndexedBatch.Set")
			over[string(k)] = string(v)
			desc = append(desc, fmt.Sprintf("set %q=%s", k, short(v)))
		case p < 7:
			k := r.randKey()
			r.check(b.Delete(k), "IndexedBatch.Delete")
			delete(over, string(k))
			desc = append(desc, fmt.Sprintf("del %q", k))
		case p < 8:
			lo, hi := r.randRange()
			r.check(b.DeleteRange(lo, hi), "IndexedBatch.DeleteRange")
			crashWrite{delRanges: [][2]string{{string(lo), string(hi)}}}.apply(over)
			desc = append(desc, fmt.Sprintf("del-range %q-%q", lo, hi))
		case p < 10:
			k := r.randKey()
			desc = append(desc, fmt.Sprintf("get %q", k))
			r.checkGet("IndexedBatch.Get", b.Get, over, k)
			r.done.indexedReads++
		case p < 11:
			o := r.randBounds()
			desc = append(desc, "iterate "+boundsString(o))
			it, err := b.NewIter(o)
			r.check(err, "IndexedBatch.NewIter")
			if msg := checkIterReuse(r.rng, it, newIterModel(over, o), 5+r.rng.IntN(20), r.seekKey); msg != "" {
				r.fatalf("indexed batch [%s]: iterator %s: %s", strings.Join(desc, ", "), boundsString(o), msg)
			}
			r.done.indexedReads++
			r.check(it.Close(), "Iterator.Close")
		default:
			if kept != nil {
				break
			}
			o := r.randBounds()
			desc = append(desc, "keep an iterator "+boundsString(o))
			var err error
			kept, err = b.NewIter(o)
			r.check(err, "IndexedBatch.NewIter")
			keptModel = newIterModel(maps.Clone(over), o)
		}
	}
	if kept != nil {
		if msg := scanBoth(kept, keptModel); msg != "" {
			r.fatalf("indexed batch [%s]: kept iterator: %s", strings.Join(desc, ", "), msg)
		}
		r.check(kept.Close(), "Iterator.Close")
	}
	if r.rng.IntN(4) == 0 {
		r.log.add("IndexedBatch, closed unapplied [%s]", strings.Join(desc, ", "))
		return
	}
	o := r.writeOpts()
	r.log.add("IndexedBatch Apply(sync=%v) [%s]", o.Sync, strings.Join(desc, ", "))
	r.check(r.db.Apply(b, o), "Apply of an indexed batch")
	r.model = over
	r.done.indexedApplied++
}

// ingest writes one or two tables outside the store, at sequence number
// 0, of random sets and deletes and sometimes a range deletion, in key
// ranges apart, and ingests them: their writes shadow every older one, a
// range deletion every older version in its span but not its own table's.
func (r *modelRun) ingest() {
	picked := map[string]bool{}
	for range 1 + r.rng.IntN(16) {
		picked[string(r.randKey())] = true
	}
	keys := slices.Sorted(maps.Keys(picked))
	cuts := []int{0, len(keys)}
	if len(keys) > 1 && r.rng.IntN(2) == 0 {
		cuts = []int{0, 1 + r.rng.IntN(len(keys)-1), len(keys)}
	}
	dir := r.fs.PathJoin(r.fs.PathDir(r.dir), "ingest")
	r.check(r.fs.MkdirAll(dir, 0o755), "MkdirAll")
	defer func() { r.check(r.fs.RemoveAll(dir), "RemoveAll") }()
	var paths, desc []string
	var writes []crashWrite
	prevEnd := "" // the end of the last table's span; tables must not overlap
	for i := range len(cuts) - 1 {
		w := crashWrite{kvs: map[string]*string{}}
		last := keys[cuts[i+1]-1]
		if r.rng.IntN(3) == 0 {
			// A range deletion past the table's keys is kept within the
			// gap to the next table's first key.
			dlo, dhi := r.randRange()
			ok := string(dlo) < string(dhi) && (i == 0 || string(dlo) >= prevEnd) &&
				(i+1 == len(cuts)-1 || string(dhi) <= keys[cuts[i+1]])
			if ok {
				w.delRanges = [][2]string{{string(dlo), string(dhi)}}
				desc = append(desc, fmt.Sprintf("t%d del-range %q-%q", i, dlo, dhi))
			}
		}
		path := r.fs.PathJoin(dir, fmt.Sprintf("%d-%d.sst", r.log.n, i))
		paths = append(paths, path)
		r.writeExternalTable(path, keys[cuts[i]:cuts[i+1]], &w, &desc)
		prevEnd = last + "\x00"
		if len(w.delRanges) > 0 && w.delRanges[0][1] > prevEnd {
			prevEnd = w.delRanges[0][1]
		}
		writes = append(writes, w)
	}
	r.log.add("Ingest %d tables [%s]", len(paths), strings.Join(desc, ", "))
	r.check(r.db.Ingest(paths), "Ingest")
	for _, w := range writes {
		w.apply(r.model)
		r.done.ingested++
		if len(w.delRanges) > 0 {
			r.done.ingestedRangeDels++
		}
	}
}

// writeExternalTable writes keys, in order, into a table at path, each a
// set of a random value or, one in four, a delete, with w's range
// deletion, all at sequence number 0, and records them in w.
func (r *modelRun) writeExternalTable(path string, keys []string, w *crashWrite, desc *[]string) {
	f, err := r.fs.Create(path)
	r.check(err, "Create")
	o := sstable.WriterOptions{BlockSize: r.opts.BlockSize}
	if r.rng.IntN(2) == 0 {
		p, err := bloompolicy.NewBitsPerKey(10)
		r.check(err, "NewBitsPerKey")
		o.FilterPolicy = p
	}
	tw := sstable.NewWriter(f, o)
	for _, d := range w.delRanges {
		r.check(tw.AddRangeDel(sstable.RangeTombstone{Start: []byte(d[0]), End: []byte(d[1])}), "AddRangeDel")
	}
	for _, k := range keys {
		if r.rng.IntN(4) == 0 {
			r.check(tw.Add(sstable.MakeInternalKey([]byte(k), 0, sstable.KindDelete), nil), "Writer.Add")
			w.kvs[k] = nil
			*desc = append(*desc, fmt.Sprintf("del %q", k))
			continue
		}
		v := string(r.randValue())
		r.check(tw.Add(sstable.MakeInternalKey([]byte(k), 0, sstable.KindSet), []byte(v)), "Writer.Add")
		w.kvs[k] = &v
		*desc = append(*desc, fmt.Sprintf("set %q=%s", k, short([]byte(v))))
	}
	r.check(tw.Close(), "Writer.Close")
}

// checkpoint checkpoints the store into a new directory, and opens the
// copy: it must hold the model, as the store does.
func (r *modelRun) checkpoint() {
	dst := r.fs.PathJoin(r.fs.PathDir(r.dir), fmt.Sprintf("checkpoint-%d", r.log.n))
	r.log.add("Checkpoint")
	r.check(r.db.Checkpoint(dst), "Checkpoint")
	r.checkCopy(dst, "checkpoint")
	r.check(r.fs.RemoveAll(dst), "RemoveAll")
	r.done.checkpoints++
}

// checkGet compares one Get (of the DB or a snapshot) with a model.
func (r *modelRun) checkGet(what string, get func([]byte) ([]byte, error), model map[string]string, k []byte) {
	r.t.Helper()
	got, err := get(k)
	want, ok := model[string(k)]
	switch {
	case !ok && !errors.Is(err, kv.ErrNotFound):
		r.fatalf("%s(%q) = %s, %v; want ErrNotFound", what, k, short(got), err)
	case ok && err != nil:
		r.fatalf("%s(%q): %v; want %s", what, k, err, short([]byte(want)))
	case ok && !bytes.Equal(got, []byte(want)):
		r.fatalf("%s(%q) = %s; want %s", what, k, short(got), short([]byte(want)))
	}
}

func (r *modelRun) get() {
	k := r.randKey()
	r.log.add("Get(%q)", k)
	r.checkGet("Get", r.db.Get, r.model, k)
}

// randBounds returns random iterator bounds: none, one, both, an empty
// range, and now and then a lower bound above the upper one (an empty
// range too).
func (r *modelRun) randBounds() *kv.IterOptions {
	switch r.rng.IntN(8) {
	case 0:
		return nil
	case 1:
		return &kv.IterOptions{}
	}
	o := &kv.IterOptions{}
	if r.rng.IntN(3) != 0 {
		o.LowerBound = r.seekKey()
	}
	if r.rng.IntN(3) != 0 {
		o.UpperBound = r.seekKey()
	}
	if o.LowerBound != nil && o.UpperBound != nil && bytes.Compare(o.LowerBound, o.UpperBound) > 0 &&
		r.rng.IntN(4) != 0 {
		o.LowerBound, o.UpperBound = o.UpperBound, o.LowerBound
	}
	return o
}

func boundsString(o *kv.IterOptions) string {
	if o == nil {
		return "nil"
	}
	return fmt.Sprintf("[%q, %q)", o.LowerBound, o.UpperBound)
}

// iterate opens an iterator with random bounds, moves it at random, and
// sometimes scans it fully both ways.
func (r *modelRun) iterate() {
	o := r.randBounds()
	r.log.add("NewIter(%s)", boundsString(o))
	it, err := r.db.NewIter(o)
	r.check(err, "NewIter")
	im := newIterModel(r.model, o)
	if msg := checkIterReuse(r.rng, it, im, 5+r.rng.IntN(30), r.seekKey); msg != "" {
		r.fatalf("iterator %s: %s", boundsString(o), msg)
	}
	if r.rng.IntN(4) == 0 {
		if msg := scanBoth(it, im); msg != "" {
			r.fatalf("iterator %s: %s", boundsString(o), msg)
		}
	}
	r.check(it.Close(), "Iterator.Close")
}

// openIter opens an iterator that stays open over later steps.
func (r *modelRun) openIter() {
	if len(r.iters) >= 3 {
		r.checkIters()
		return
	}
	o := r.randBounds()
	if len(r.snaps) > 0 && r.rng.IntN(3) == 0 {
		j := r.rng.IntN(len(r.snaps))
		ms := r.snaps[j]
		r.log.add("Snapshot[%d].NewIter(%s), kept open", j, boundsString(o))
		it, err := ms.s.NewIter(o)
		r.check(err, "Snapshot.NewIter")
		r.iters = append(r.iters, &modelIter{it: it, im: newIterModel(ms.model, o), snap: ms})
		return
	}
	r.log.add("NewIter(%s), kept open", boundsString(o))
	it, err := r.db.NewIter(o)
	r.check(err, "NewIter")
	r.iters = append(r.iters, &modelIter{it: it, im: newIterModel(maps.Clone(r.model), o)})
}

// checkIters moves one kept iterator and sometimes refreshes or closes
// it: it must show the state of the moment it was opened, or refreshed
// (its snapshot's state, for one over a snapshot).
func (r *modelRun) checkIters() {
	if len(r.iters) == 0 {
		return
	}
	i := r.rng.IntN(len(r.iters))
	mi := r.iters[i]
	r.log.add("check kept iterator %d", i)
	if r.rng.IntN(3) == 0 {
		r.log.add("kept iterator %d: Refresh", i)
		r.refreshIter(i, mi)
	}
	if msg := checkIterReuse(r.rng, mi.it, mi.im, 5+r.rng.IntN(20), r.seekKey); msg != "" {
		r.fatalf("kept iterator %d: %s", i, msg)
	}
	if r.rng.IntN(3) == 0 {
		r.check(mi.it.Close(), "Iterator.Close")
		r.iters = append(r.iters[:i], r.iters[i+1:]...)
	}
}

// refreshIter refreshes kept iterator i: one over the DB must then show
// the model as it is now, one over a snapshot its snapshot's model, or
// fail with ErrClosed and keep its view and position once the snapshot
// is closed.
func (r *modelRun) refreshIter(i int, mi *modelIter) {
	switch {
	case mi.snap == nil:
		if msg := refreshIter(mi.it, mi.im, maps.Clone(r.model)); msg != "" {
			r.fatalf("kept iterator %d: %s", i, msg)
		}
	case !mi.snap.closed:
		if msg := refreshIter(mi.it, mi.im, mi.snap.model); msg != "" {
			r.fatalf("kept iterator %d over a snapshot: %s", i, msg)
		}
	default:
		valid, key := mi.it.Valid(), string(mi.it.Key())
		if err := mi.it.Refresh(); !errors.Is(err, kv.ErrClosed) {
			r.fatalf("kept iterator %d: Refresh after its snapshot closed: %v, want ErrClosed", i, err)
		}
		if mi.it.Valid() != valid || string(mi.it.Key()) != key {
			r.fatalf("kept iterator %d: a failed Refresh moved it from %q (valid %v) to %q (valid %v)",
				i, key, valid, mi.it.Key(), mi.it.Valid())
		}
	}
}

func (r *modelRun) newSnapshot() {
	if len(r.snaps) >= 4 {
		r.closeSnapshot()
	}
	r.log.add("NewSnapshot")
	r.snaps = append(r.snaps, &modelSnap{s: r.db.NewSnapshot(), model: maps.Clone(r.model)})
}

func (r *modelRun) closeSnapshot() {
	if len(r.snaps) == 0 {
		return
	}
	i := r.rng.IntN(len(r.snaps))
	r.log.add("Snapshot[%d].Close", i)
	r.check(r.snaps[i].s.Close(), "Snapshot.Close")
	r.snaps[i].closed = true
	r.snaps = append(r.snaps[:i], r.snaps[i+1:]...)
}

// checkSnapshot reads a few keys of a snapshot and iterates it.
func (r *modelRun) checkSnapshot() {
	if len(r.snaps) == 0 {
		return
	}
	i := r.rng.IntN(len(r.snaps))
	ms := r.snaps[i]
	r.log.add("check snapshot %d", i)
	for n := 0; n < 5; n++ {
		r.checkGet(fmt.Sprintf("Snapshot[%d].Get", i), ms.s.Get, ms.model, r.randKey())
	}
	o := r.randBounds()
	it, err := ms.s.NewIter(o)
	r.check(err, "Snapshot.NewIter")
	im := newIterModel(ms.model, o)
	msg := checkIterReuse(r.rng, it, im, 5+r.rng.IntN(20), r.seekKey)
	if msg == "" && r.rng.IntN(5) == 0 {
		msg = scanBoth(it, im)
	}
	if msg != "" {
		r.fatalf("snapshot %d iterator %s: %s", i, boundsString(o), msg)
	}
	r.check(it.Close(), "Iterator.Close")
}

// compact compacts a random range, sometimes everything.
func (r *modelRun) compact() {
	var lo, hi []byte
	if r.rng.IntN(4) != 0 {
		lo, hi = r.seekKey(), r.seekKey()
		if bytes.Compare(lo, hi) > 0 {
			lo, hi = hi, lo
		}
	}
	r.log.add("Compact(%q, %q)", lo, hi)
	r.check(r.db.Compact(lo, hi), "Compact")
}

// reopen closes the DB, checking that what was still open on it reports
// ErrClosed, and opens it again, sometimes under other filter options.
func (r *modelRun) reopen() {
	r.log.add("Close and reopen")
	r.checkLeaks(r.db.Close(), len(r.iters), len(r.snaps))
	for i, ms := range r.snaps {
		if _, err := ms.s.Get([]byte("k")); !errors.Is(err, kv.ErrClosed) {
			r.fatalf("snapshot %d Get after DB.Close: %v, want ErrClosed", i, err)
		}
		if err := ms.s.Close(); !errors.Is(err, kv.ErrClosed) {
			r.fatalf("snapshot %d Close after DB.Close: %v, want ErrClosed", i, err)
		}
	}
	for i, mi := range r.iters {
		if mi.it.First() || !errors.Is(mi.it.Error(), kv.ErrClosed) {
			r.fatalf("kept iterator %d after DB.Close: valid=%v err=%v, want ErrClosed",
				i, mi.it.Valid(), mi.it.Error())
		}
		if err := mi.it.Close(); !errors.Is(err, kv.ErrClosed) {
			r.fatalf("kept iterator %d Close after DB.Close: %v, want ErrClosed", i, err)
		}
	}
	r.snaps, r.iters = nil, nil
	r.switchFilters()
	r.open()
	if r.rng.IntN(2) == 0 {
		r.checkFull()
	}
}

// capFilters reopens the DB with its filter memory capped, and makes
// later reopens change the cap.
func (r *modelRun) capFilters() {
	r.capped = true
	r.check(r.db.Close(), "Close")
	r.opts.FilterBudget = &bloompolicy.Budget{Bytes: int64(96 + r.rng.IntN(160))}
	r.log.add("FilterBudget %+v", r.opts.FilterBudget)
	r.open()
}

// setCap sets a cap of 16 to 400 bytes (the filters of the key space at
// about 10 bits per key take 300), or none.
func (r *modelRun) setCap() {
	r.opts.FilterBudget = nil
	if r.rng.IntN(10) > 0 {
		r.opts.FilterBudget = &bloompolicy.Budget{Bytes: int64(16 + r.rng.IntN(384))}
	}
	r.log.add("FilterBudget %+v", r.opts.FilterBudget)
}

// switchFilters changes the filter options a reopened DB runs with: tables
// written under another policy, or none, must read the same.
func (r *modelRun) switchFilters() {
	if r.capped && r.rng.IntN(2) == 0 {
		r.setCap()
		return
	}
	switch r.rng.IntN(4) {
	case 0:
		r.opts.DisableFilters = !r.opts.DisableFilters
		r.log.add("DisableFilters=%v", r.opts.DisableFilters)
	case 1:
		p, err := bloompolicy.NewBitsPerKey(float64(1 + r.rng.IntN(16)))
		r.check(err, "NewBitsPerKey")
		r.opts.FilterPolicy = p
		r.log.add("FilterPolicy bits/key=%v", p.BitsPerKey())
	}
}

// metrics checks that the metrics agree with themselves and with the
// lookups made.
func (r *modelRun) metrics() {
	m := r.db.Metrics()
	r.log.add("Metrics")
	if len(m.Levels) == 0 {
		r.fatalf("Metrics has no levels")
	}
	if f := m.Filters; f.HeldBytes < 0 || (f.CapBytes > 0 && f.HeldBytes > f.CapBytes) {
		r.fatalf("filter bytes held %d, cap %d", f.HeldBytes, f.CapBytes)
	}
	if m.Filters.TablesNotHeld > 0 || m.Filters.TablesBuilt > 0 {
		r.cutSeen++
	}
	if m.Filters.CapBytes > 0 && m.Filters.HeldBytes > 0 {
		r.heldUnderCapSeen++
	}
	var sum kv.LookupMetrics
	for i, l := range m.Levels {
		if l.Lookups.Gets != 0 {
			r.fatalf("L%d Lookups.Gets = %d, want 0", i, l.Lookups.Gets)
		}
		if l.NumFiles < 0 || l.Size < 0 || (l.NumFiles == 0) != (l.Size == 0) {
			r.fatalf("L%d: %d files of %d bytes", i, l.NumFiles, l.Size)
		}
		sum.TablesConsidered += l.Lookups.TablesConsidered
		sum.FilterNegatives += l.Lookups.FilterNegatives
		sum.BlockReads += l.Lookups.BlockReads
		if l.Lookups.BlockCacheMisses > l.Lookups.BlockReads {
			r.fatalf("L%d: %d block cache misses of %d reads", i, l.Lookups.BlockCacheMisses, l.Lookups.BlockReads)
		}
	}
	t := m.Lookups
	if t.TablesConsidered != sum.TablesConsidered || t.FilterNegatives != sum.FilterNegatives ||
		t.BlockReads != sum.BlockReads {
		r.fatalf("total lookups %+v are not the sum of the levels' %+v", t, sum)
	}
}

// checkFull compares the whole DB with the model: a full scan both ways and
// a Get of every key of the key space.
func (r *modelRun) checkFull() {
	r.log.add("full check")
	r.checkStore(r.db, "")
}

// checkStore checks that db holds the model, through a full scan and a
// Get of every key; what names it in failures, "" for the run's DB.
func (r *modelRun) checkStore(db *kv.DB, what string) {
	it, err := db.NewIter(nil)
	r.check(err, what+"NewIter")
	if msg := scanBoth(it, newIterModel(r.model, nil)); msg != "" {
		r.fatalf("%sfull scan: %s", what, msg)
	}
	r.check(it.Close(), what+"Iterator.Close")
	for i := 0; i < modelKeys; i++ {
		r.checkGet(what+"Get", db.Get, r.model, modelKey(i))
	}
}

// crashCopy copies the files of the open DB, once its background work is
// done, into a new directory on the disk: what a crash of the process
// leaves, the NoSync writes of the mapped WAL's pages included. The copy
// opens to hold every write acknowledged (the default mode's promise),
// then is closed.
func (r *modelRun) crashCopy() {
	r.log.add("crash copy")
	r.check(r.db.WaitIdle(context.Background()), "WaitIdle")
	dst := r.t.TempDir()
	names, err := r.fs.List(r.dir)
	r.check(err, "List")
	for _, name := range names {
		r.check(vfs.Copy(r.fs, r.fs.PathJoin(r.dir, name), r.fs.PathJoin(dst, name)), "copying "+name)
	}
	r.checkCopy(dst, "crash copy")
}

// checkCopy opens the copy of the store in dir, which what names, checks
// that it holds the model, and closes it.
func (r *modelRun) checkCopy(dir, what string) {
	db, err := kv.Open(dir, r.opts)
	r.check(err, "Open of the "+what)
	r.checkStore(db, what+": ")
	r.check(db.Close(), "Close of the "+what)
}

// closeAll releases what the run holds, checking that the DB closes
// cleanly.
func (r *modelRun) closeAll() {
	for _, mi := range r.iters {
		must(r.t, mi.it.Close())
	}
	for _, ms := range r.snaps {
		must(r.t, ms.s.Close())
	}
	if err := r.db.Close(); err != nil && !r.t.Failed() {
		r.fatalf("Close: %v", err)
	}
}

// TestDB_EmptyKeyCompaction compacts two L0 tables, the older holding only
// the empty key, into an L1 that holds "a" and "b". The compaction's key
// range must start at the empty key, so the L1 table is among its inputs;
// otherwise its output overlaps that table and the MANIFEST edit is refused.
func TestDB_EmptyKeyCompaction(t *testing.T) {
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db)
	steps := []func() error{
		func() error { return db.Set([]byte("a"), []byte("1"), kv.NoSync) },
		func() error { return db.Set([]byte("b"), []byte("2"), kv.NoSync) },
		func() error { return db.Compact(nil, nil) }, // L1: [a, b]
		func() error { return db.Set([]byte{}, []byte("empty"), kv.NoSync) },
		db.Flush, // L0: [""]
		func() error { return db.Set([]byte("c"), []byte("3"), kv.NoSync) },
		db.Flush, // L0: [c]
		func() error { return db.Compact(nil, nil) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := map[string]string{"": "empty", "a": "1", "b": "2", "c": "3"}
	got, err := readAll(db.NewIter)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffMaps(got, want); d != "" {
		t.Fatal(d)
	}
}
