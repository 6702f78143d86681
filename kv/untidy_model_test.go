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
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// untidyLens are key lengths at the edges of the varint widths (127/128,
// 16383/16384) and of a byte (255/256), up to MaxKeySize.
var untidyLens = []int{0, 1, 2, 127, 128, 129, 255, 256, 257, 16383, 16384, 16385, kv.MaxKeySize - 1, kv.MaxKeySize}

// untidyRun is a model run over untidy data: keys of edge lengths made of
// 0x00 and 0xff bytes and prefixes of one another, values from empty to
// larger than a table, many versions of a key held by snapshots.
type untidyRun struct {
	seededRun
	rng   *rand.Rand
	fs    vfs.FS
	mem   *vfs.MemFS // fs, when it is a strict MemFS; nil on the disk
	dir   string
	opts  *kv.Options
	db    *kv.DB
	keys  [][]byte
	model map[string]string
	snaps []untidySnap
}

type untidySnap struct {
	s     *kv.Snapshot
	model map[string]string
}

// untidySplits are Splits that keep the contract on any bytes: nothing,
// a fixed length, and everything up to the first 0x00.
var untidySplits = []*sstable.Comparer{
	nil,
	sstable.NewSplitComparer("empty", func([]byte) int { return 0 }),
	sstable.NewSplitComparer("first200", func(k []byte) int { return min(len(k), 200) }),
	sstable.NewSplitComparer("to-nul", func(k []byte) int {
		if i := bytes.IndexByte(k, 0); i >= 0 {
			return i + 1
		}
		return len(k)
	}),
}

// TestDB_UntidyKeys_Model checks Get, bounded iteration both ways,
// SeekPrefixGE (within bounds) and snapshots against a map, across
// flushes, compactions, ingestions, checkpoints, reopens and power cuts
// after a Sync write (vfs.NewStrictMem), with keys of edge lengths (up to MaxKeySize) made of 0x00
// and 0xff bytes and prefixes of one another, values from empty to larger
// than a table, range deletions bounded by such keys, and random block
// sizes (64 B to 64 KiB) and Splits.
func TestDB_UntidyKeys_Model(t *testing.T) {
	seeds, steps := 3, 250
	if testing.Short() {
		seeds, steps = 1, 120
	}
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		mem := vfs.NewStrictMem()
		r := newUntidyRun(t, seed, mem, mem, "db", nil)
		r.run(steps)
	})
}

// TestDB_UntidyKeys_Disk runs the untidy model on the disk, whose WAL is
// memory-mapped in chunks of a page or two, far smaller than most of the
// records: a crash there is a copy of the files of the open store.
func TestDB_UntidyKeys_Disk(t *testing.T) {
	seeds, steps := 2, 200
	if testing.Short() {
		seeds, steps = 1, 100
	}
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		r := newUntidyRun(t, seed, vfs.Default, nil, filepath.Join(t.TempDir(), "db"), func(o *kv.Options) {
			kv.SmallWALMmapChunks(o, 4096)
		})
		if !kv.WALMapped(r.db) {
			r.check(r.db.Close(), "Close")
			t.Skip("no mapped WAL on this file system")
		}
		r.run(steps)
	})
}

func (r *untidyRun) run(steps int) {
	for range steps {
		r.step()
	}
	r.checkAll(r.db, "end")
	for _, s := range r.snaps {
		r.check(s.s.Close(), "Snapshot.Close")
	}
	r.check(r.db.Close(), "Close")
}

func newUntidyRun(t *testing.T, seed uint64, fs vfs.FS, mem *vfs.MemFS, dir string, adjust func(*kv.Options)) *untidyRun {
	r := &untidyRun{seededRun: seededRun{t: t, seed: seed}, rng: newRand(seed), fs: fs, mem: mem, dir: dir, model: map[string]string{}}
	r.opts = &kv.Options{
		FS:             r.fs,
		Comparer:       untidySplits[r.rng.IntN(len(untidySplits))],
		MemTableSize:   int64(16<<10 + r.rng.IntN(256<<10)),
		BlockSize:      64 << r.rng.IntN(11),
		TargetFileSize: int64(4<<10 + r.rng.IntN(64<<10)),
		LBaseMaxBytes:  int64(64<<10 + r.rng.IntN(256<<10)),
		// Edits naming 64 KiB keys roll the MANIFEST over often.
		MaxManifestFileSize: int64(1 + r.rng.IntN(256<<10)),
	}
	if adjust != nil {
		adjust(r.opts)
	}
	split := "none"
	if r.opts.Comparer != nil {
		split = r.opts.Comparer.SplitName
	}
	t.Logf("options: memtable %d, block %d, target file %d, LBase %d, split %s",
		r.opts.MemTableSize, r.opts.BlockSize, r.opts.TargetFileSize, r.opts.LBaseMaxBytes, split)
	r.keys = untidyKeys(r.rng, 40)
	r.open()
	return r
}

// untidyKeys returns about n distinct keys drawn from a few bases of
// 0x00, 0xff and random bytes: prefixes of them at the lengths above and
// at random ones, some followed by 0x00 or 0xff.
func untidyKeys(rng *rand.Rand, n int) [][]byte {
	var bases [][]byte
	for range 3 {
		b := make([]byte, kv.MaxKeySize)
		for i := range b {
			switch rng.IntN(4) {
			case 0:
				b[i] = 0x00
			case 1:
				b[i] = 0xff
			default:
				b[i] = byte(rng.IntN(256))
			}
		}
		bases = append(bases, b)
	}
	set := map[string]bool{}
	for len(set) < n {
		b := bases[rng.IntN(len(bases))]
		l := untidyLens[rng.IntN(len(untidyLens))]
		if rng.IntN(3) == 0 {
			l = rng.IntN(300)
		}
		k := slices.Clone(b[:l])
		if len(k) < kv.MaxKeySize {
			switch rng.IntN(4) {
			case 0:
				k = append(k, 0x00)
			case 1:
				k = append(k, 0xff)
			}
		}
		set[string(k)] = true
	}
	keys := make([][]byte, 0, n)
	for k := range set {
		keys = append(keys, []byte(k))
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

func (r *untidyRun) open() {
	db, err := kv.Open(r.dir, r.opts)
	r.check(err, "Open")
	r.db = db
}

func (r *untidyRun) key() []byte { return r.keys[r.rng.IntN(len(r.keys))] }

// seekKey returns a key, a key with a byte appended, or a prefix of one.
func (r *untidyRun) seekKey() []byte {
	k := r.key()
	switch r.rng.IntN(4) {
	case 0:
		if len(k) < kv.MaxKeySize {
			return append(slices.Clone(k), byte(r.rng.IntN(256)))
		}
	case 1:
		return k[:r.rng.IntN(len(k)+1)]
	}
	return k
}

// value returns a value of 0 bytes, a few, about a block, or larger than a
// table, random (incompressible) or repetitive.
func (r *untidyRun) value() []byte {
	var n int
	switch r.rng.IntN(10) {
	case 0:
		return []byte{}
	case 1, 2, 3, 4:
		n = r.rng.IntN(20)
	case 5, 6:
		n = max(0, r.opts.BlockSize-16+r.rng.IntN(32))
	case 7, 8:
		n = r.rng.IntN(8 << 10)
	default:
		n = int(r.opts.TargetFileSize) + r.rng.IntN(64<<10)
	}
	v := fmt.Appendf(nil, "v%d.", r.log.n)
	random := r.rng.IntN(2) == 0
	for len(v) < n {
		if random {
			v = append(v, byte(r.rng.IntN(256)))
		} else {
			v = append(v, 'a'+byte(len(v)%3))
		}
	}
	return v
}

func (r *untidyRun) step() {
	switch p := r.rng.IntN(100); {
	case p < 25:
		k, v := r.key(), r.value()
		r.log.add("Set(%d-byte key %.20q, %d bytes)", len(k), k, len(v))
		r.check(r.db.Set(k, v, kv.NoSync), "Set")
		r.model[string(k)] = string(v)
	case p < 32:
		k := r.key()
		r.log.add("Delete(%d-byte key %.20q)", len(k), k)
		r.check(r.db.Delete(k, kv.NoSync), "Delete")
		delete(r.model, string(k))
	case p < 35:
		lo, hi := r.seekKey(), r.seekKey()
		if bytes.Compare(lo, hi) > 0 {
			lo, hi = hi, lo
		}
		r.log.add("DeleteRange(%d-byte %.20q, %d-byte %.20q)", len(lo), lo, len(hi), hi)
		r.check(r.db.DeleteRange(lo, hi, kv.NoSync), "DeleteRange")
		crashWrite{delRanges: [][2]string{{string(lo), string(hi)}}}.apply(r.model)
	case p < 45:
		r.batch()
	case p < 60:
		k := r.seekKey()
		r.log.add("Get(%d-byte %.20q)", len(k), k)
		r.checkGet("Get", r.db.Get, r.model, k)
	case p < 70:
		r.iterate(r.db.NewIter, r.model, "iter")
	case p < 74:
		r.prefixSeeks(r.db.NewIter, r.model, "db")
	case p < 78:
		r.log.add("NewSnapshot")
		r.snaps = append(r.snaps, untidySnap{r.db.NewSnapshot(), maps.Clone(r.model)})
	case p < 84:
		r.checkSnapshot()
	case p < 90:
		r.log.add("Flush")
		r.check(r.db.Flush(), "Flush")
	case p < 95:
		lo, hi := r.seekKey(), r.seekKey()
		if bytes.Compare(lo, hi) > 0 {
			lo, hi = hi, lo
		}
		if r.rng.IntN(2) == 0 {
			lo, hi = nil, nil
		}
		r.log.add("Compact(%d-byte, %d-byte)", len(lo), len(hi))
		r.check(r.db.Compact(lo, hi), "Compact")
	case p < 96:
		r.ingest()
	case p < 97:
		r.checkpoint()
	case p < 98:
		r.crash()
	default:
		r.reopen()
	}
}

func (r *untidyRun) batch() {
	b := r.db.NewBatch()
	pending := crashWrite{kvs: map[string]*string{}}
	if r.rng.IntN(4) == 0 {
		lo, hi := r.seekKey(), r.seekKey()
		if bytes.Compare(lo, hi) > 0 {
			lo, hi = hi, lo
		}
		r.check(b.DeleteRange(lo, hi), "Batch.DeleteRange")
		pending.delRanges = append(pending.delRanges, [2]string{string(lo), string(hi)})
	}
	n := 1 + r.rng.IntN(20)
	for range n {
		k := r.key()
		if r.rng.IntN(4) == 0 {
			r.check(b.Delete(k), "Batch.Delete")
			pending.kvs[string(k)] = nil
			continue
		}
		v := r.value()
		r.check(b.Set(k, v), "Batch.Set")
		s := string(v)
		pending.kvs[string(k)] = &s
	}
	r.log.add("Apply(%d ops, %d bytes)", n, b.Len())
	r.check(r.db.Apply(b, kv.NoSync), "Apply")
	pending.apply(r.model)
}

func (r *untidyRun) checkGet(what string, get func([]byte) ([]byte, error), model map[string]string, k []byte) {
	r.t.Helper()
	got, err := get(k)
	want, ok := model[string(k)]
	switch {
	case !ok && !errors.Is(err, kv.ErrNotFound):
		r.fatalf("%s(%d-byte %.20q) = %s, %v; want ErrNotFound", what, len(k), k, short(got), err)
	case ok && err != nil:
		r.fatalf("%s(%d-byte %.20q): %v; want %s", what, len(k), k, err, short([]byte(want)))
	case ok && !bytes.Equal(got, []byte(want)):
		r.fatalf("%s(%d-byte %.20q) = %s; want %s", what, len(k), k, short(got), short([]byte(want)))
	}
}

func (r *untidyRun) bounds() *kv.IterOptions {
	o := &kv.IterOptions{}
	if r.rng.IntN(2) == 0 {
		o.LowerBound = r.seekKey()
	}
	if r.rng.IntN(2) == 0 {
		o.UpperBound = r.seekKey()
	}
	if o.LowerBound != nil && o.UpperBound != nil && bytes.Compare(o.LowerBound, o.UpperBound) > 0 {
		o.LowerBound, o.UpperBound = o.UpperBound, o.LowerBound
	}
	return o
}

func (r *untidyRun) iterate(newIter func(*kv.IterOptions) (*kv.Iterator, error), model map[string]string, what string) {
	r.t.Helper()
	o := r.bounds()
	r.log.add("%s: NewIter([%d-byte, %d-byte))", what, len(o.LowerBound), len(o.UpperBound))
	it, err := newIter(o)
	r.check(err, "NewIter")
	im := newIterModel(model, o)
	if msg := checkIter(r.rng, it, im, 20, r.seekKey); msg != "" {
		r.fatalf("%s: %.2000s", what, msg)
	}
	if r.rng.IntN(4) == 0 {
		if msg := scanBoth(it, im); msg != "" {
			r.fatalf("%s: %.2000s", what, msg)
		}
	}
	r.check(it.Close(), "Iterator.Close")
}

// prefixSeeks checks SeekPrefixGE and the Nexts after it against model,
// under a comparer with a Split, within random bounds.
func (r *untidyRun) prefixSeeks(newIter func(*kv.IterOptions) (*kv.Iterator, error), model map[string]string, what string) {
	r.t.Helper()
	cmp := r.opts.Comparer
	if cmp == nil {
		return
	}
	o := r.bounds()
	it, err := newIter(o)
	r.check(err, "NewIter")
	im := newIterModel(model, o)
	for range 10 {
		k := r.seekKey()
		prefix, err := cmp.Prefix(k)
		r.check(err, "Prefix")
		from, invalid := string(k), false
		switch {
		case o.LowerBound != nil && bytes.Compare(k, o.LowerBound) < 0:
			from, invalid = string(o.LowerBound), !cmp.HasPrefix(o.LowerBound, prefix)
		case o.UpperBound != nil && bytes.Compare(k, o.UpperBound) > 0:
			from, invalid = string(o.UpperBound), !cmp.HasPrefix(o.UpperBound, prefix)
		}
		var want []string
		for _, mk := range im.keys {
			if !invalid && mk >= from && cmp.HasPrefix([]byte(mk), prefix) {
				want = append(want, mk)
			}
		}
		var got []string
		for ok := it.SeekPrefixGE(k); ok; ok = it.Next() {
			if !bytes.Equal(it.Value(), []byte(model[string(it.Key())])) {
				r.fatalf("%s: SeekPrefixGE(%d-byte key): wrong value at a %d-byte key", what, len(k), len(it.Key()))
			}
			got = append(got, string(it.Key()))
		}
		if invalid != errors.Is(it.Error(), kv.ErrInvalidPrefixSeek) || !invalid && it.Error() != nil || !slices.Equal(got, want) {
			r.fatalf("%s: [%d-byte, %d-byte) SeekPrefixGE(%d-byte key %.20q, %d-byte prefix): %v, %d keys, want %d (invalid %v)",
				what, len(o.LowerBound), len(o.UpperBound), len(k), k, len(prefix), it.Error(), len(got), len(want), invalid)
		}
	}
	it.First() // clears the error of an invalid prefix seek
	r.check(it.Close(), "Iterator.Close")
}

func (r *untidyRun) checkSnapshot() {
	if len(r.snaps) == 0 {
		return
	}
	i := r.rng.IntN(len(r.snaps))
	s := r.snaps[i]
	what := fmt.Sprintf("snapshot %d", i)
	r.log.add("check %s", what)
	for range 5 {
		r.checkGet(what+" Get", s.s.Get, s.model, r.seekKey())
	}
	r.iterate(s.s.NewIter, s.model, what)
	r.prefixSeeks(s.s.NewIter, s.model, what)
	if r.rng.IntN(3) == 0 {
		r.check(s.s.Close(), "Snapshot.Close")
		r.snaps = slices.Delete(r.snaps, i, i+1)
	}
}

// checkAll reads db whole and every key of the pool with Get.
func (r *untidyRun) checkAll(db *kv.DB, what string) {
	r.t.Helper()
	got, err := readAll(db.NewIter)
	r.check(err, what+": read all")
	if d := diffMaps(got, r.model); d != "" {
		r.fatalf("%s: store differs from the model: %.2000s", what, d)
	}
	for _, k := range r.keys {
		r.checkGet(what+" Get", db.Get, r.model, k)
	}
}

func (r *untidyRun) reopen() {
	r.log.add("Close and reopen")
	for _, s := range r.snaps {
		r.check(s.s.Close(), "Snapshot.Close")
	}
	r.snaps = nil
	r.check(r.db.Close(), "Close")
	r.open()
	r.checkAll(r.db, "after reopen")
}

// ingest ingests one table of random keys of the pool, sets and deletes
// at sequence number 0, written under the DB's comparer.
func (r *untidyRun) ingest() {
	picked := map[string]bool{}
	for range 1 + r.rng.IntN(8) {
		picked[string(r.key())] = true
	}
	cmp := r.opts.Comparer
	if cmp == nil {
		cmp = sstable.DefaultComparer
	}
	ext := r.fs.PathJoin(r.fs.PathDir(r.dir), "ext.sst")
	f, err := r.fs.Create(ext)
	r.check(err, "Create")
	tw := sstable.NewWriter(f, sstable.WriterOptions{BlockSize: r.opts.BlockSize, Comparer: cmp, FilterPolicy: untidyFilter})
	w := crashWrite{kvs: map[string]*string{}}
	for _, k := range slices.Sorted(maps.Keys(picked)) {
		if r.rng.IntN(4) == 0 {
			r.check(tw.Add(sstable.MakeInternalKey([]byte(k), 0, sstable.KindDelete), nil), "Writer.Add")
			w.kvs[k] = nil
			continue
		}
		v := string(r.value())
		r.check(tw.Add(sstable.MakeInternalKey([]byte(k), 0, sstable.KindSet), []byte(v)), "Writer.Add")
		w.kvs[k] = &v
	}
	r.check(tw.Close(), "Writer.Close")
	r.log.add("Ingest(%d keys)", len(picked))
	r.check(r.db.Ingest([]string{ext}), "Ingest")
	w.apply(r.model)
}

var untidyFilter = func() bloompolicy.FilterPolicy {
	p, err := bloompolicy.NewBitsPerKey(10)
	if err != nil {
		panic(err)
	}
	return p
}()

// checkpoint checkpoints the store and checks the copy whole.
func (r *untidyRun) checkpoint() {
	dst := r.fs.PathJoin(r.fs.PathDir(r.dir), fmt.Sprintf("checkpoint-%d", r.log.n))
	r.log.add("Checkpoint")
	r.check(r.db.Checkpoint(dst), "Checkpoint")
	db, err := kv.Open(dst, r.opts)
	r.check(err, "Open of the checkpoint")
	r.checkAll(db, "checkpoint")
	r.check(db.Close(), "Close of the checkpoint")
	r.check(r.fs.RemoveAll(dst), "RemoveAll")
}

// crash cuts the power after a Sync write, which makes every write
// before it durable: what was not synced is lost. On the disk it kills
// the process instead: a copy of the files of the open store (once its
// background work is done) must hold every write.
func (r *untidyRun) crash() {
	k, v := r.key(), r.value()
	r.log.add("Set(%d-byte key, %d bytes, Sync), then crash", len(k), len(v))
	r.check(r.db.Set(k, v, kv.Sync), "Set")
	r.model[string(k)] = string(v)
	if r.mem == nil {
		r.check(r.db.WaitIdle(context.Background()), "WaitIdle")
		dst := r.fs.PathJoin(r.fs.PathDir(r.dir), fmt.Sprintf("crash-%d", r.log.n))
		r.check(r.fs.MkdirAll(dst, 0o755), "MkdirAll")
		names, err := r.fs.List(r.dir)
		r.check(err, "List")
		for _, name := range names {
			r.check(vfs.Copy(r.fs, r.fs.PathJoin(r.dir, name), r.fs.PathJoin(dst, name)), "copying "+name)
		}
		db, err := kv.Open(dst, r.opts)
		r.check(err, "Open of the crash copy")
		r.checkAll(db, "crash copy")
		r.check(db.Close(), "Close of the crash copy")
		r.check(r.fs.RemoveAll(dst), "RemoveAll")
		return
	}
	r.mem.SetIgnoreSyncs(true)
	for _, s := range r.snaps {
		_ = s.s.Close()
	}
	r.snaps = nil
	_ = r.db.Close()
	r.mem.ResetToSyncedState()
	r.mem.SetIgnoreSyncs(false)
	r.open()
	r.checkAll(r.db, "after crash")
}
