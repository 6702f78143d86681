package kv_test

// A store written under one set of options and reopened under another,
// after a clean Close or a crash of the machine, shows every write it
// acknowledged before its last Sync; and the first options read it again
// after the second wrote to it.

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// reopenProfile is one set of options a store may be opened under.
type reopenProfile struct {
	name string
	opts func(t testing.TB) *kv.Options
}

// twoByteSplit and slashSplit are the Splits the profiles use; every key
// of the test ("p07/012") fits both.
func twoByteSplit(k []byte) int { return min(len(k), 2) }

func slashSplit(k []byte) int {
	if i := bytes.IndexByte(k, '/'); i >= 0 {
		return i + 1
	}
	return len(k)
}

func splitComparer(name string, split func([]byte) int) *sstable.Comparer {
	c := *sstable.DefaultComparer
	c.Split, c.SplitName = split, name
	return &c
}

var reopenProfiles = []reopenProfile{
	{"tiny", func(testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: kv.MinMemTableSize, BlockSize: 64, TargetFileSize: 1 << 10,
			L0CompactionThreshold: 1, MaxOpenFiles: kv.MinMaxOpenFiles, BlockCacheSize: 1,
			LBaseMaxBytes: 4 << 10, MaxManifestFileSize: 1}
	}},
	{"large-nocompact", func(testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: 64 << 20, BlockSize: 32 << 10, DisableAutomaticCompactions: true,
			L0CompactionThreshold: 8, L0StopWritesThreshold: 100, L0SlowdownWritesThreshold: 90}
	}},
	{"split2-bgwal", func(t testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: 2 << 10, BlockSize: 128, BackgroundWALWrites: true,
			FilterPolicy: metaBloom(t, 4), Comparer: splitComparer("test.two-bytes", twoByteSplit),
			L0CompactionThreshold: 2, TargetFileSize: 2 << 10}
	}},
	{"slash-nofilters", func(testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: 4 << 10, BlockSize: 256, DisableFilters: true,
			Comparer: splitComparer("test.slash", slashSplit), StaticLevels: true}
	}},
	{"slash-budget", func(testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: 3 << 10, BlockSize: 128, TargetFileSize: 1 << 10,
			Comparer:     splitComparer("test.slash", slashSplit),
			FilterBudget: &bloompolicy.Budget{Bytes: 64}, MaxOpenFiles: kv.MinMaxOpenFiles, BlockCacheSize: 1}
	}},
	{"levels", func(t testing.TB) *kv.Options {
		levels := make([]kv.LevelOptions, 7)
		for i := range levels {
			levels[i].FilterPolicy = metaBloom(t, float64(1+2*i))
		}
		return &kv.Options{MemTableSize: 2 << 10, BlockSize: 512, Levels: levels, L0CompactionThreshold: 2,
			FlushSplitBytes: -1}
	}},
	{"pebble-bloom-bgwal", func(testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: 8 << 10, BlockSize: 1 << 10, BackgroundWALWrites: true,
			FilterPolicy: pebbleadapter.FromPebble(bloom.FilterPolicy(10)), DisableL0Settling: true}
	}},
	{"split2-bitsbudget", func(testing.TB) *kv.Options {
		return &kv.Options{MemTableSize: 16 << 10, BlockSize: 4 << 10,
			Comparer:     splitComparer("test.two-bytes", twoByteSplit),
			FilterBudget: &bloompolicy.Budget{BitsPerKey: 6}, MemTableStopWritesThreshold: 4}
	}},
}

// reopenRun is one store going through the profiles, with the model of
// what it holds.
type reopenRun struct {
	t     *testing.T
	rng   *rand.Rand
	fs    vfs.FS
	mem   *vfs.MemFS // fs, where it can crash; nil on disk
	dir   string
	db    *kv.DB
	prof  reopenProfile
	model map[string]string
	n     int // ingests made, for their file names
	log   []string
}

func (r *reopenRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\nsteps:\n%s", fmt.Sprintf(format, args...), joinLast(r.log, 30))
}

func joinLast(s []string, n int) string {
	if len(s) > n {
		s = s[len(s)-n:]
	}
	var b bytes.Buffer
	for _, l := range s {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

func (r *reopenRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

func (r *reopenRun) options(p reopenProfile, readOnly bool) *kv.Options {
	o := p.opts(r.t)
	o.FS, o.ReadOnly = r.fs, readOnly
	return o
}

func (r *reopenRun) open(p reopenProfile, readOnly bool) {
	r.t.Helper()
	r.logf("open %s (read-only %v)", p.name, readOnly)
	db, err := kv.Open(r.dir, r.options(p, readOnly))
	if err != nil {
		r.fatalf("Open under %s (read-only %v): %v", p.name, readOnly, err)
	}
	r.db, r.prof = db, p
}

// shut closes the DB, cleanly or as in a crash of the machine: what was
// not synced is lost.
func (r *reopenRun) shut(crash bool) {
	r.t.Helper()
	r.logf("close (crash %v)", crash)
	crash = crash && r.mem != nil
	if crash {
		r.mem.SetIgnoreSyncs(true)
	}
	err := r.db.Close()
	if crash {
		r.mem.ResetToSyncedState()
		r.mem.SetIgnoreSyncs(false)
	}
	if err != nil {
		r.fatalf("Close under %s: %v", r.prof.name, err)
	}
	r.db = nil
}

func reopenKey(rng *rand.Rand) []byte {
	return fmt.Appendf(nil, "p%02d/%03d", rng.IntN(12), rng.IntN(40))
}

func (r *reopenRun) value() []byte {
	n := r.rng.IntN(60)
	if r.rng.IntN(20) == 0 {
		n = 1500 + r.rng.IntN(1500)
	}
	return fmt.Appendf(nil, "%d-%s", r.rng.Uint32(), bytes.Repeat([]byte{'v'}, n))
}

// write makes n random writes, then a Sync write, after which every
// write before is durable.
func (r *reopenRun) write(n int) {
	r.t.Helper()
	for range n {
		r.step()
	}
	k := []byte("p99/sync")
	v := r.value()
	r.check("Set sync", r.db.Set(k, v, kv.Sync))
	r.model[string(k)] = string(v)
}

func (r *reopenRun) check(what string, err error) {
	r.t.Helper()
	if err != nil {
		r.fatalf("%s under %s: %v", what, r.prof.name, err)
	}
}

func (r *reopenRun) step() {
	r.t.Helper()
	switch x := r.rng.IntN(100); {
	case x < 55:
		k, v := reopenKey(r.rng), r.value()
		r.logf("set %s", k)
		r.check("Set", r.db.Set(k, v, kv.NoSync))
		r.model[string(k)] = string(v)
	case x < 70:
		k := reopenKey(r.rng)
		r.logf("delete %s", k)
		r.check("Delete", r.db.Delete(k, kv.NoSync))
		delete(r.model, string(k))
	case x < 75:
		lo, hi := reopenKey(r.rng), reopenKey(r.rng)
		if bytes.Compare(lo, hi) > 0 {
			lo, hi = hi, lo
		}
		r.logf("delete-range %s %s", lo, hi)
		r.check("DeleteRange", r.db.DeleteRange(lo, hi, kv.NoSync))
		r.deleteRange(lo, hi)
	case x < 85:
		r.batch()
	case x < 88:
		r.ingest()
	case x < 93:
		r.snapshot()
	case x < 96:
		r.logf("flush")
		r.check("Flush", r.db.Flush())
	default:
		r.logf("compact")
		r.check("Compact", r.db.Compact([]byte("p"), []byte("q")))
	}
}

func (r *reopenRun) deleteRange(lo, hi []byte) {
	for k := range r.model {
		if k >= string(lo) && k < string(hi) {
			delete(r.model, k)
		}
	}
}

func (r *reopenRun) batch() {
	b := r.db.NewBatch()
	next := maps.Clone(r.model)
	for range 1 + r.rng.IntN(20) {
		k := reopenKey(r.rng)
		switch r.rng.IntN(4) {
		case 0:
			r.check("Batch.Delete", b.Delete(k))
			delete(next, string(k))
		default:
			v := r.value()
			r.check("Batch.Set", b.Set(k, v))
			next[string(k)] = string(v)
		}
	}
	r.logf("batch of %d", b.Count())
	r.check("Apply", r.db.Apply(b, kv.NoSync))
	r.model = next
}

// ingest writes a table of a few keys of one prefix, with the store's
// comparer and, half the time, a filter, and ingests it.
func (r *reopenRun) ingest() {
	r.n++
	path := r.fs.PathJoin(r.fs.PathDir(r.dir), fmt.Sprintf("ingest-%d.sst", r.n))
	f, err := r.fs.Create(path)
	r.check("Create", err)
	o := r.options(r.prof, false)
	wo := sstable.WriterOptions{BlockSize: 128, Comparer: o.Comparer}
	if r.rng.IntN(2) == 0 {
		wo.FilterPolicy = metaBloom(r.t, 10)
	}
	w := sstable.NewWriter(f, wo)
	prefix := r.rng.IntN(12)
	var keys []string
	for i := 0; i < 40; i += 1 + r.rng.IntN(6) {
		keys = append(keys, fmt.Sprintf("p%02d/%03d", prefix, i))
	}
	for _, k := range keys {
		r.check("Writer.Add", w.Add(sstable.MakeInternalKey([]byte(k), 0, sstable.KindSet), []byte("ingested-"+k)))
	}
	r.check("Writer.Close", w.Close())
	r.logf("ingest %s: %d keys of p%02d", path, len(keys), prefix)
	r.check("Ingest", r.db.Ingest([]string{path}))
	for _, k := range keys {
		r.model[k] = "ingested-" + k
	}
}

// snapshot takes a snapshot, writes a little, reads the snapshot and
// releases it.
func (r *reopenRun) snapshot() {
	r.t.Helper()
	s := r.db.NewSnapshot()
	at := maps.Clone(r.model)
	r.logf("snapshot")
	for range 5 {
		k, v := reopenKey(r.rng), r.value()
		r.check("Set", r.db.Set(k, v, kv.NoSync))
		r.model[string(k)] = string(v)
	}
	got, err := readAll(s.NewIter)
	r.check("snapshot scan", err)
	if d := diffMaps(got, at); d != "" {
		r.fatalf("snapshot under %s: %s", r.prof.name, d)
	}
	r.check("Snapshot.Close", s.Close())
}

// verify checks every key of the universe with Get (and, under a Split,
// SeekPrefixGE) and a full scan against the model.
func (r *reopenRun) verify(what string) {
	r.t.Helper()
	if len(r.model) == 0 {
		r.fatalf("%s: the model holds no key: nothing to check", what)
	}
	got, err := readAll(r.db.NewIter)
	r.check(what+": scan", err)
	if d := diffMaps(got, r.model); d != "" {
		r.fatalf("%s: scan under %s: %s", what, r.prof.name, d)
	}
	keys := slices.Sorted(maps.Keys(r.model))
	for p := range 13 {
		for i := range 41 {
			k := fmt.Sprintf("p%02d/%03d", p, i)
			if p == 12 {
				k = "p99/sync"
			}
			r.verifyGet(what, k)
			r.verifyPrefix(what, keys, k)
		}
	}
}

func (r *reopenRun) verifyGet(what, k string) {
	r.t.Helper()
	v, err := r.db.Get([]byte(k))
	want, ok := r.model[k]
	switch {
	case ok && err != nil:
		r.fatalf("%s: Get(%s) under %s: %v, want %q", what, k, r.prof.name, err, short([]byte(want)))
	case ok && string(v) != want:
		r.fatalf("%s: Get(%s) under %s = %q, want %q", what, k, r.prof.name, short(v), short([]byte(want)))
	case !ok && !errors.Is(err, kv.ErrNotFound):
		r.fatalf("%s: Get(%s) under %s = %q, %v; want not found", what, k, r.prof.name, short(v), err)
	}
}

func (r *reopenRun) verifyPrefix(what string, keys []string, k string) {
	r.t.Helper()
	c := r.options(r.prof, false).Comparer
	if c == nil || c.Split == nil {
		return
	}
	prefix := k[:c.Split([]byte(k))]
	want := ""
	if i, _ := slices.BinarySearch(keys, k); i < len(keys) && keys[i][:c.Split([]byte(keys[i]))] == prefix {
		want = keys[i]
	}
	it, err := r.db.NewIter(nil)
	r.check("NewIter", err)
	got := ""
	if it.SeekPrefixGE([]byte(k)) {
		got = string(it.Key())
	}
	r.check("iter", errors.Join(it.Error(), it.Close()))
	if got != want {
		r.fatalf("%s: SeekPrefixGE(%s) under %s at %q, want %q", what, k, r.prof.name, got, want)
	}
}

// refuseOtherComparer opens the store under p with a comparer of another
// name, which Open must refuse, naming both comparers and changing no
// file.
func (r *reopenRun) refuseOtherComparer(p reopenProfile) {
	r.t.Helper()
	before := storeFiles(r.t, r.fs, r.dir)
	o := r.options(p, false)
	c := *sstable.DefaultComparer
	if o.Comparer != nil {
		c = *o.Comparer
	}
	c.Name = "test.reversed-name"
	o.Comparer = &c
	db, err := kv.Open(r.dir, o)
	if err == nil {
		mustClose(r.t, db)
		r.fatalf("Open under comparer %q of a store of %q succeeded", c.Name, sstable.DefaultComparer.Name)
	}
	if !strings.Contains(err.Error(), "Options.Comparer") || !strings.Contains(err.Error(), c.Name) ||
		!strings.Contains(err.Error(), sstable.DefaultComparer.Name) {
		r.fatalf("Open under another comparer: %v, want the option and both names", err)
	}
	after := storeFiles(r.t, r.fs, r.dir)
	if !maps.Equal(before, after) {
		r.fatalf("the refused Open changed the store's files: %d before, %d after", len(before), len(after))
	}
}

// TestReopen_OtherOptions writes a store under one profile, closes it
// cleanly or crashes, reopens it read-only under another, then for
// writes, checks it against the model each time, writes more, closes or
// crashes again, and reads it again under the first. Before the first
// reopen, a comparer of another name must be refused.
func TestReopen_OtherOptions(t *testing.T) {
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		rng := newRand(seed)
		for i := range 10 {
			mem := vfs.NewStrictMem()
			r := &reopenRun{t: t, rng: rng, fs: mem, mem: mem, dir: "db", model: map[string]string{}}
			r.pair(fmt.Sprintf("pair %d", i))
		}
	})
}

// TestReopen_OtherOptions_Disk is TestReopen_OtherOptions on the
// operating system's files, where WALs are mapped (the default mode) or
// written by a goroutine (BackgroundWALWrites), and a WAL written by one
// mode is continued by the other. Closes are clean.
func TestReopen_OtherOptions_Disk(t *testing.T) {
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		rng := newRand(seed)
		for i := range 4 {
			dir := t.TempDir()
			r := &reopenRun{t: t, rng: rng, fs: vfs.Default, dir: filepath.Join(dir, "db"), model: map[string]string{}}
			r.pair(fmt.Sprintf("pair %d", i))
		}
	})
}

// pair runs a store through two random profiles.
func (r *reopenRun) pair(name string) {
	a := reopenProfiles[r.rng.IntN(len(reopenProfiles))]
	b := reopenProfiles[r.rng.IntN(len(reopenProfiles))]
	r.logf("%s: %s then %s", name, a.name, b.name)
	r.open(a, false)
	r.write(400)
	r.shut(r.rng.IntN(2) == 0)
	r.refuseOtherComparer(b)
	r.open(b, true)
	r.verify("read-only")
	r.shut(false)
	r.open(b, false)
	r.verify("first reopen")
	r.write(400)
	r.shut(r.rng.IntN(2) == 0)
	r.open(a, false)
	r.verify("second reopen")
	r.write(30)
	r.shut(true)
	r.open(a, false)
	r.verify("third reopen")
	r.shut(false)
}
