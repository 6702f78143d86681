package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestCrash_PowerLoss cuts the power at each of hundreds of points of a
// workload of single writes and multi-key batches, Sync and NoSync,
// flushes, manual compactions, background compactions, MANIFEST rollovers
// and reopens: the filesystem refuses every change from the crash point
// on, and then loses everything that was not synced (vfs.NewStrictMem).
// Open must then succeed and show the state after some prefix of the
// attempted writes, a prefix that includes every write acknowledged before
// a durability point: a Sync write, a Flush, a Compact or a clean Close.
// Batches write all their keys with one value, so a torn batch is named as
// such. The recovered store must then take writes and survive a clean
// restart unchanged.
func TestCrash_PowerLoss(t *testing.T) {
	testPowerLoss(t, nil)
}

// TestCrash_PowerLoss_FilterCap is TestCrash_PowerLoss with filter memory
// capped at 512 bytes (FilterBudget{Bytes}): tables' filters are sized
// under the cap and left out as the store grows; what a crash leaves must
// open and read the same, and every Metrics call along the way shows no
// more filter bytes held than the cap.
func TestCrash_PowerLoss_FilterCap(t *testing.T) {
	testPowerLoss(t, &bloompolicy.Budget{Bytes: 512})
}

func testPowerLoss(t *testing.T, budget *bloompolicy.Budget) {
	points := 400
	if testing.Short() {
		points = 40
	}
	newRun := func(seed uint64, at int) *crashRun {
		r := newCrashRun(t, seed, at)
		r.opts.FilterBudget = budget
		return r
	}
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		total := fewestOfThree(func() int { return newRun(seed, -1).run() })
		t.Logf("the workload makes %d filesystem changes; crashing at %d points", total, min(points, total))
		crashed := 0
		for _, at := range crashPoints(newRand(seed), total, points) {
			r := newRun(seed, at)
			r.run()
			if r.fs.isCrashed() {
				crashed++
			}
			r.verify()
			if t.Failed() {
				return
			}
		}
		requireRan(t, "crash points", crashed, points*9/10)
	})
}

// crashPoints returns up to n operation indexes below total: all of them
// when they are few, otherwise n spread evenly with random offsets.
func crashPoints(rng *rand.Rand, total, n int) []int {
	if total <= n {
		pts := make([]int, total)
		for i := range pts {
			pts[i] = i
		}
		return pts
	}
	pts := make([]int, n)
	for i := range pts {
		lo, hi := i*total/n, (i+1)*total/n
		pts[i] = lo + rng.IntN(hi-lo)
	}
	return pts
}

// crashWrite is one write of the workload: its keys and their new values
// (nil: deleted).
type crashWrite struct {
	desc string
	// delRanges are the batch's range deletions [lo, hi), which come
	// first in the batch: kvs overrides them.
	delRanges [][2]string
	kvs       map[string]*string
}

func (w crashWrite) apply(m map[string]string) {
	for _, r := range w.delRanges {
		for k := range m {
			if r[0] <= k && k < r[1] {
				delete(m, k)
			}
		}
	}
	for k, v := range w.kvs {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = *v
		}
	}
}

// crashRun runs the workload of one seed with the power cut at one point.
type crashRun struct {
	t       *testing.T
	seed    uint64
	crashAt int
	rng     *rand.Rand
	mem     *vfs.MemFS
	fs      *crashFS
	opts    *kv.Options
	db      *kv.DB
	log     opLog

	// history lists the writes attempted, in order; the first acked were
	// acknowledged, and the first durable of those must survive.
	history []crashWrite
	acked   int
	durable int
}

const crashWrites = 300

func newCrashRun(t *testing.T, seed uint64, crashAt int) *crashRun {
	r := &crashRun{t: t, seed: seed, crashAt: crashAt, rng: newRand(seed), mem: vfs.NewStrictMem()}
	r.fs = newCrashFS(r.mem)
	r.fs.arm(crashAt)
	r.opts = &kv.Options{
		FS:                    r.fs,
		MemTableSize:          kv.MinMemTableSize * 2,
		BlockSize:             256,
		TargetFileSize:        2 << 10,
		L0CompactionThreshold: 2,
		LBaseMaxBytes:         4 << 10,
		LevelMultiplier:       2,
		BlockCacheSize:        16 << 10,
		MaxManifestFileSize:   512,
	}
	return r
}

func (r *crashRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d, crash at operation %d: %s\nworkload steps:\n%s\nfilesystem operations:\n%s",
		r.seed, r.crashAt, fmt.Sprintf(format, args...), r.log.String(), r.fs.lastOps())
}

// run plays the workload until its end or the first failure, which must
// come from the crash, and returns the number of filesystem changes made.
func (r *crashRun) run() int {
	if !r.do("Open", r.open) {
		return r.fs.count()
	}
	for i := 0; i < crashWrites; i++ {
		if !r.step() {
			return r.fs.count()
		}
	}
	if r.crashAt < 0 {
		m := r.db.Metrics()
		r.t.Logf("since the last reopen: %d flushes, %d compactions, %d moves into L1, tables per level %v; filters %+v",
			m.Flush.Count, m.Compact.Count, m.Levels[1].Moves, levelFiles(m), m.Filters)
		var filterBytes int64
		for _, l := range m.Levels {
			filterBytes += l.FilterBytes
		}
		if b := r.opts.FilterBudget; b != nil && (m.Filters.CapBytes != b.Bytes || filterBytes == 0 || m.Filters.HeldBytes > b.Bytes) {
			r.fatalf("filters under a cap of %d: tables' filters %d bytes, %+v", b.Bytes, filterBytes, m.Filters)
		}
	}
	if r.do("Close", r.db.Close) {
		r.db = nil
		r.durable = r.acked
	}
	return r.fs.count()
}

// do runs one step and reports whether the workload goes on. An error
// before the crash fails the test.
func (r *crashRun) do(what string, fn func() error) bool {
	r.t.Helper()
	r.log.add("%s", what)
	err := fn()
	if err != nil && !r.fs.isCrashed() {
		r.fatalf("%s failed with the power on: %v", what, err)
	}
	return err == nil && !r.fs.isCrashed()
}

func (r *crashRun) open() error {
	db, err := kv.Open("db", r.opts)
	r.db = db
	return err
}

// step makes one random step of the workload.
func (r *crashRun) step() bool {
	switch p := r.rng.IntN(1000); {
	case p < 40:
		return r.durablePoint("Flush", r.db.Flush)
	case p < 55:
		lo, hi := crashKey(r.rng.IntN(60)), crashKey(r.rng.IntN(60))
		if bytes.Compare(lo, hi) > 0 { // Compact refuses an inverted range
			lo, hi = hi, lo
		}
		if r.rng.IntN(2) == 0 {
			lo, hi = nil, nil
		}
		return r.durablePoint(fmt.Sprintf("Compact(%q, %q)", lo, hi), func() error { return r.db.Compact(lo, hi) })
	case p < 70:
		if !r.durablePoint("Close", r.db.Close) {
			return false
		}
		r.db = nil
		return r.do("Open", r.open)
	}
	return r.write()
}

// durablePoint runs a step after which every acknowledged write must
// survive.
func (r *crashRun) durablePoint(what string, fn func() error) bool {
	ok := r.do(what, fn)
	if ok {
		r.durable = r.acked
	}
	return ok
}

func crashKey(i int) []byte { return fmt.Appendf(nil, "s%03d", i) }

func groupKey(g, i int) string { return fmt.Sprintf("g%02d/%d", g, i) }

const crashGroupKeys = 4

// write makes one Set, Delete, DeleteRange or batch, Sync or NoSync.
func (r *crashRun) write() bool {
	idx := len(r.history)
	w := crashWrite{kvs: map[string]*string{}}
	b := r.db.NewBatch()
	switch p := r.rng.IntN(100); {
	case p < 8:
		lo := r.rng.IntN(60)
		k0, k1 := string(crashKey(lo)), string(crashKey(lo+1+r.rng.IntN(10)))
		must(r.t, b.DeleteRange([]byte(k0), []byte(k1)))
		w.delRanges = append(w.delRanges, [2]string{k0, k1})
		w.desc = fmt.Sprintf("DeleteRange(%q, %q)", k0, k1)
	case p < 55:
		k := crashKey(r.rng.IntN(60))
		v := fmt.Sprintf("w%d.%s", idx, strings.Repeat("x", r.rng.IntN(300)))
		must(r.t, b.Set(k, []byte(v)))
		w.kvs[string(k)] = &v
		w.desc = fmt.Sprintf("Set(%q, w%d)", k, idx)
	case p < 70:
		k := crashKey(r.rng.IntN(60))
		must(r.t, b.Delete(k))
		w.kvs[string(k)] = nil
		w.desc = fmt.Sprintf("Delete(%q)", k)
	default:
		g, del := r.rng.IntN(16), r.rng.IntN(8) == 0
		v := fmt.Sprintf("b%d.%s", idx, strings.Repeat("y", r.rng.IntN(100)))
		if r.rng.IntN(4) == 0 {
			// The group's keys deleted by range, then some set again.
			lo, hi := groupKey(g, 0), groupKey(g, crashGroupKeys)
			must(r.t, b.DeleteRange([]byte(lo), []byte(hi)))
			w.delRanges = append(w.delRanges, [2]string{lo, hi})
			del = false
		}
		for i := 0; i < crashGroupKeys; i++ {
			if len(w.delRanges) > 0 && i%2 == 1 {
				continue
			}
			if del {
				must(r.t, b.Delete([]byte(groupKey(g, i))))
				w.kvs[groupKey(g, i)] = nil
			} else {
				must(r.t, b.Set([]byte(groupKey(g, i)), []byte(v)))
				w.kvs[groupKey(g, i)] = &v
			}
		}
		w.desc = fmt.Sprintf("batch group %d (delete=%v, b%d)", g, del, idx)
	}
	sync := r.rng.IntN(10) < 3
	w.desc += fmt.Sprintf(" sync=%v", sync)
	r.history = append(r.history, w)
	opts := kv.NoSync
	if sync {
		opts = kv.Sync
	}
	if !r.do(fmt.Sprintf("write %d: %s", idx, w.desc), func() error { return r.db.Apply(b, opts) }) {
		return false
	}
	r.acked++
	if sync {
		r.durable = r.acked
	}
	return true
}

// verify completes the crash, reopens the store and checks what it holds.
func (r *crashRun) verify() {
	r.t.Helper()
	if r.db != nil {
		_ = r.db.Close() // fails, with the power off; it must not hang
		r.db = nil
	}
	r.mem.ResetToSyncedState()
	r.opts.FS = r.mem
	got := r.reopenAndRead("first reopen")
	r.matchPrefix(got)

	// The recovered store takes writes and keeps its state over a clean
	// restart.
	db, err := kv.Open("db", r.opts)
	if err != nil {
		r.fatalf("Open after recovery: %v", err)
	}
	if err := db.Set([]byte("zz-after"), []byte("1"), kv.NoSync); err != nil {
		r.fatalf("Set after recovery: %v", err)
	}
	if err := db.Close(); err != nil {
		r.fatalf("Close after recovery: %v", err)
	}
	again := r.reopenAndRead("second reopen")
	got["zz-after"] = "1"
	if d := diffMaps(again, got); d != "" {
		r.fatalf("state changed over a clean restart after recovery: %s", d)
	}
}

// reopenAndRead opens the store without faults, reads it all (by iterator,
// and by Get for every key) and closes it.
func (r *crashRun) reopenAndRead(what string) map[string]string {
	r.t.Helper()
	db, err := kv.Open("db", r.opts)
	if err != nil {
		r.fatalf("%s: Open: %v", what, err)
	}
	defer mustClose(r.t, db)
	got, err := readAll(db.NewIter)
	if err != nil {
		r.fatalf("%s: reading: %v", what, err)
	}
	for _, k := range r.keyUniverse() {
		v, err := db.Get([]byte(k))
		want, ok := got[k]
		if (err == nil) != ok || (ok && string(v) != want) || (err != nil && !errors.Is(err, kv.ErrNotFound)) {
			r.fatalf("%s: Get(%q) = %q, %v but the iterator shows %q (present %v)", what, k, v, err, want, ok)
		}
	}
	if f := db.Metrics().Filters; f.CapBytes > 0 && f.HeldBytes > f.CapBytes {
		r.fatalf("%s: %d filter bytes held over a cap of %d", what, f.HeldBytes, f.CapBytes)
	}
	return got
}

func (r *crashRun) keyUniverse() []string {
	var keys []string
	for i := 0; i < 60; i++ {
		keys = append(keys, string(crashKey(i)))
	}
	for g := 0; g < 16; g++ {
		for i := 0; i < crashGroupKeys; i++ {
			keys = append(keys, groupKey(g, i))
		}
	}
	return keys
}

// matchPrefix checks that got is the state after some prefix of the
// history at least r.durable long.
func (r *crashRun) matchPrefix(got map[string]string) {
	r.t.Helper()
	want := map[string]string{}
	for _, w := range r.history[:r.durable] {
		w.apply(want)
	}
	first := maps.Clone(want)
	for n := r.durable; ; n++ {
		if diffMaps(got, want) == "" {
			return
		}
		if n == len(r.history) {
			break
		}
		r.history[n].apply(want)
	}
	r.fatalf("recovered state is no prefix of the history between %d (durable) and %d (attempted) writes "+
		"(%d acknowledged)%s\ndiff from the durable prefix: %s\ndiff from all attempted: %s",
		r.durable, len(r.history), r.acked, tornBatches(got), diffMaps(got, first), diffMaps(got, want))
}

// tornBatches names the batch groups whose keys disagree.
func tornBatches(got map[string]string) string {
	var torn []string
	for g := 0; g < 16; g++ {
		v0, ok0 := got[groupKey(g, 0)]
		for i := 1; i < crashGroupKeys; i++ {
			if v, ok := got[groupKey(g, i)]; ok != ok0 || v != v0 {
				torn = append(torn, fmt.Sprintf("group %d", g))
				break
			}
		}
	}
	if len(torn) == 0 {
		return ""
	}
	return "; TORN BATCHES: " + strings.Join(torn, ", ")
}

func levelFiles(m kv.Metrics) []int {
	var n []int
	for _, l := range m.Levels {
		n = append(n, l.NumFiles)
	}
	return n
}

// TestCrash_DuringCompaction cuts the power at every filesystem change of a
// manual compaction that merges L0 tables into L1 and L1 into L2 while the
// MANIFEST rolls over, over a store whose contents were all made durable
// by Flush. Whatever the point, the reopened store holds exactly those
// contents, and compacting it again succeeds and changes nothing.
func TestCrash_DuringCompaction(t *testing.T) {
	maxPoints := 1000
	if testing.Short() {
		maxPoints = 12
	}
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		fs, db, base, want := compactionFixture(t, seed)
		if err := db.Compact(nil, nil); err != nil {
			t.Fatalf("seed %d: Compact: %v", seed, err)
		}
		total := fs.count() - base
		t.Logf("the compaction makes %d filesystem changes; the store holds\n%s", total, db.Metrics())
		if err := db.Close(); err != nil {
			t.Fatalf("seed %d: Close: %v", seed, err)
		}
		for _, k := range crashPoints(newRand(seed), total, maxPoints) {
			fs, db, base, _ := compactionFixture(t, seed)
			fs.arm(base + k)
			// Only the removal of obsolete files may fail unreported: they
			// are garbage either way, and the next Open removes them.
			if err := db.Compact(nil, nil); err == nil && fs.isCrashed() && fs.firstRefused() != "remove" {
				t.Fatalf("seed %d, crash %d operations into the compaction: Compact succeeded though %q failed\n%s",
					seed, k, fs.firstRefused(), fs.lastOps())
			}
			_ = db.Close() // fails when the power went during the compaction
			checkAfterCompactionCrash(t, fs, want, fmt.Sprintf("seed %d, crash %d operations into the compaction", seed, k))
			if t.Failed() {
				return
			}
		}
	})
}

// compactionFixture builds a store whose L1 holds tables and whose L0 holds
// several more, all flushed, with automatic compactions off and a MANIFEST
// that rolls over at every edit. It
// returns the filesystem, the open DB, the number of filesystem changes
// made so far, and the contents.
func compactionFixture(t *testing.T, seed uint64) (*crashFS, *kv.DB, int, map[string]string) {
	t.Helper()
	rng := newRand(seed)
	fs := newCrashFS(vfs.NewStrictMem())
	opts := &kv.Options{FS: fs, DisableAutomaticCompactions: true, BlockSize: 256,
		TargetFileSize: 4 << 10, MaxManifestFileSize: 1, MemTableSize: 64 << 10}
	db, err := kv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for round := 0; round < 6; round++ {
		for i := 0; i < 150; i++ {
			k := fmt.Sprintf("c%03d", rng.IntN(600))
			if rng.IntN(5) == 0 {
				delete(want, k)
				must(t, db.Delete([]byte(k), kv.NoSync))
				continue
			}
			v := fmt.Sprintf("r%d.%s", round, randomLetters(rng, rng.IntN(200)))
			want[k] = v
			must(t, db.Set([]byte(k), []byte(v), kv.NoSync))
		}
		var err error
		if round == 2 {
			err = db.Compact(nil, nil)
		} else {
			err = db.Flush()
		}
		if err != nil {
			t.Fatalf("seed %d: building the fixture: %v", seed, err)
		}
	}
	return fs, db, fs.count(), want
}

// checkAfterCompactionCrash completes the crash and checks the store holds
// want, before and after another compaction.
func checkAfterCompactionCrash(t *testing.T, fs *crashFS, want map[string]string, what string) {
	t.Helper()
	mem := fs.FS.(*vfs.MemFS)
	mem.ResetToSyncedState()
	opts := &kv.Options{FS: mem, DisableAutomaticCompactions: true, BlockSize: 256, TargetFileSize: 4 << 10}
	for pass := 0; pass < 2; pass++ {
		db, err := kv.Open("db", opts)
		if err != nil {
			t.Fatalf("%s: Open (pass %d): %v\nfilesystem operations:\n%s", what, pass, err, fs.lastOps())
		}
		got, err := readAll(db.NewIter)
		if err == nil && pass == 0 {
			err = db.Compact(nil, nil)
		}
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("%s: pass %d: %v\nfilesystem operations:\n%s", what, pass, err, fs.lastOps())
		}
		if d := diffMaps(got, want); d != "" {
			t.Fatalf("%s: pass %d: contents differ: %s\nfilesystem operations:\n%s", what, pass, d, fs.lastOps())
		}
	}
}

// randomLetters returns n random lowercase letters: values that do not
// compress away.
func randomLetters(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}
