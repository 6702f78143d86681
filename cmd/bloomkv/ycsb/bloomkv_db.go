//go:build bloomkvycsb

// This file is not part of any bloomkv package: run.sh copies it into a
// copy of Pebble v1.1.5's cmd/pebble (package main), where it implements
// that command's DB, iterator and batch interfaces (cmd/pebble/db.go) over
// bloomkv's kv package, and adds the ycsb command's --engine flag (and
// --bloomkv-comparer, --settle-at-open, --point-reads). The
// bloomkvycsb build tag keeps it out of bloomkv's own builds.

package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// engine is the store the ycsb command runs on: "pebble" (newPebbleDB,
// cmd/pebble's own options) or "bloomkv" (newBloomkvDB).
var engine = "pebble"

// settleAtOpen makes newEngineDB flush the store once it is open and wait
// for its compactions (see newEngineDB).
var settleAtOpen bool

// bloomkvOrder is the comparer bloomkv runs with: "mvcc" (Pebble's) or
// "bytewise" (see bloomkvComparer).
var bloomkvOrder = "mvcc"

// pointReads is how both engines serve a read's SeekGE: "seek" (an
// iterator, as cmd/pebble does) or "get" (see pointReadDB).
var pointReads = "seek"

// memTableSize is both engines' memtable size: newPebbleDB's 64 MiB by
// default. run.sh makes newPebbleDB read it.
var memTableSize int64 = 64 << 20

func init() {
	ycsbCmd.Flags().StringVar(&engine, "engine", engine, "store to run on: pebble or bloomkv")
	ycsbCmd.Flags().StringVar(&bloomkvOrder, "bloomkv-comparer", bloomkvOrder,
		"bloomkv's comparer: mvcc (Pebble's) or bytewise (the same order for YCSB's keys)")
	ycsbCmd.Flags().BoolVar(&settleAtOpen, "settle-at-open", false,
		"flush the store once open and wait until no compaction is due or running")
	ycsbCmd.Flags().StringVar(&pointReads, "point-reads", pointReads,
		"how both engines answer a read: seek (an iterator's SeekGE, as cmd/pebble does) or get "+
			"(an allocation-free point lookup when the key is present, the iterator otherwise)")
	ycsbCmd.Flags().Int64Var(&memTableSize, "memtable-size", memTableSize,
		"both engines' memtable size in bytes")
}

// newEngineDB opens the store the --engine flag names. run.sh makes
// runTest call it in place of newPebbleDB.
//
// With --settle-at-open it then flushes the memtable and waits for the
// compactions that follows. Reopening a store, Pebble flushes the writes
// it replays from the WAL to L0 tables before Open returns; bloomkv keeps
// them as its memtable (see kv's doc). run.sh settles each loaded store
// once, so that every run of both engines starts with all data in tables
// and no compaction due.
func newEngineDB(dir string) DB {
	var db DB
	switch engine {
	case "pebble":
		db = newPebbleDB(dir)
	case "bloomkv":
		db = newBloomkvDB(dir)
	default:
		log.Fatalf("unknown --engine %q: want pebble or bloomkv", engine)
	}
	switch pointReads {
	case "seek":
	case "get":
		db = newPointReadDB(db)
	default:
		log.Fatalf("unknown --point-reads %q: want seek or get", pointReads)
	}
	if settleAtOpen {
		if err := db.Flush(); err != nil {
			log.Fatal(err)
		}
		waitSettled(db)
	}
	return db
}

// settleTimeout bounds the wait of --settle-at-open.
const settleTimeout = 30 * time.Minute

// waitSettled waits until no compaction is running or due, by each
// engine's idle rule, the one bloomkv's benchmark harness uses too:
// kv.DB.WaitIdle for bloomkv, pebbleadapter.WaitIdle for Pebble.
// cmd/pebble's --wait-compactions stops at scores above 1, which would
// leave an L0 of score 1 due.
func waitSettled(db DB) {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := settle(ctx, db); err != nil {
		log.Fatalf("waiting for compactions: %v\n%s", err, db.Metrics())
	}
}

// settle is waitSettled's wait, by the rule of the engine under db, also
// when --point-reads get wraps it in a pointReadDB.
func settle(ctx context.Context, db DB) error {
	if p, ok := db.(pointReadDB); ok {
		db = p.DB
	}
	if b, ok := db.(bloomkvDB); ok {
		return b.d.WaitIdle(ctx)
	}
	return pebbleadapter.WaitIdle(ctx, db)
}

// bloomkvBitsPerKey is the Bloom filter density, newPebbleDB's
// bloom.FilterPolicy(10).
const bloomkvBitsPerKey = 10

// bloomkvL0Threshold is newPebbleDB's L0CompactionThreshold (2) in
// bloomkv's terms. Pebble scores L0 as 2 × its sublevels / the threshold,
// so 2 compacts L0 as soon as it holds one sublevel (one flush); bloomkv
// scores the number of L0 tables over its threshold, and 1 compacts as
// soon as it holds one table.
const bloomkvL0Threshold = 1

// bloomkvComparer returns the comparer --bloomkv-comparer names. "mvcc"
// is cmd/pebble's mvccComparer: the same functions, so both engines order,
// split and abbreviate YCSB's MVCC-encoded keys with the same code.
// "bytewise" is bloomkv's default comparer, whose order is the same for
// these keys (they all end in the same 10-byte timestamp, after a 0 byte
// that sorts a key before any longer one it prefixes), and whose tables
// bloomkv searches faster. Both split off the timestamp, so filters hold
// the keys' prefixes, as Pebble's do.
func bloomkvComparer() (*sstable.Comparer, error) {
	var split func(key []byte) int = mvccComparer.Split
	switch bloomkvOrder {
	case "mvcc":
		var (
			sep    func(dst, a, b []byte) []byte = mvccComparer.Separator
			succ   func(dst, a []byte) []byte    = mvccComparer.Successor
			abbrev func(key []byte) uint64       = mvccComparer.AbbreviatedKey
		)
		return &sstable.Comparer{Compare: mvccCompare, Separator: sep, Successor: succ,
			Split: split, SplitName: "cockroach_mvcc_split", AbbreviatedKey: abbrev, Name: mvccComparer.Name}, nil
	case "bytewise":
		c := *sstable.DefaultComparer
		c.Split, c.SplitName = split, "cockroach_mvcc_split"
		return &c, nil
	default:
		return nil, fmt.Errorf("unknown --bloomkv-comparer %q: want mvcc or bytewise", bloomkvOrder)
	}
}

// bloomkvOptions are newPebbleDB's options as far as bloomkv has them:
// the same comparer, memtable size and stall, block size, block cache
// (--cache), open files, L0 trigger and stall, base level size, flush
// split, concurrent compactions and 10 bits/key Bloom filters. bloomkv has no L0 slowdown in Pebble v1, so it is set to
// the stop threshold (no slowdown either). What bloomkv lacks or does its
// own way is listed in docs/ycsb-method.md.
func bloomkvOptions() (*kv.Options, error) {
	if disableWAL {
		return nil, errors.New("bloomkv has no option to disable the WAL (--disable-wal)")
	}
	if pathToLocalSharedStorage != "" {
		return nil, errors.New("bloomkv has no shared storage (--shared-storage)")
	}
	cmp, err := bloomkvComparer()
	if err != nil {
		return nil, err
	}
	filter, err := bloompolicy.NewBitsPerKey(bloomkvBitsPerKey)
	if err != nil {
		return nil, err
	}
	return &kv.Options{
		FS:                          vfs.Default,
		Comparer:                    cmp,
		FilterPolicy:                filter,
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: 4,
		BlockSize:                   32 << 10,
		BlockCacheSize:              cacheSize,
		MaxOpenFiles:                16384,
		L0CompactionThreshold:       bloomkvL0Threshold,
		L0SlowdownWritesThreshold:   1000,
		L0StopWritesThreshold:       1000,
		LBaseMaxBytes:               64 << 20,
		TargetFileSize:              2 << 20, // Pebble's L0 target; it doubles per level
		FlushSplitBytes:             2 << 20, // newPebbleDB's Levels[0].TargetFileSize
		MaxConcurrentCompactions:    3,
	}, nil
}

// bloomkvDB adapts a kv.DB to cmd/pebble's DB interface.
type bloomkvDB struct {
	d *kv.DB
	// iters keeps the iterators the driver closed, for its next reads.
	iters *iterPool
	// ballast is newPebbleDB's: 1 GiB of heap that is never touched, so
	// the garbage collector runs as rarely under both engines.
	ballast []byte
}

func newBloomkvDB(dir string) DB {
	opts, err := bloomkvOptions()
	if err != nil {
		log.Fatal(err)
	}
	d, err := kv.Open(dir, opts)
	if err != nil {
		log.Fatal(err)
	}
	return bloomkvDB{d: d, iters: newIterPool(), ballast: make([]byte, 1<<30)}
}

// Close closes the pooled iterators and the store. The driver never
// closes its store (the process ends); tests do.
func (b bloomkvDB) Close() error {
	b.iters.close()
	return b.d.Close()
}

func (b bloomkvDB) Flush() error { return b.d.Flush() }

// NewIter returns a kv.Iterator, which has the iterator interface's
// methods as they are, over the store's current state: one the driver
// closed before, refreshed (see iterPool), or a new one. Only bounds carry
// over from Pebble's IterOptions; options that would change what the
// iterator shows are refused.
func (b bloomkvDB) NewIter(opts *pebble.IterOptions) iterator {
	var lower, upper []byte
	if opts != nil {
		if opts.KeyTypes != pebble.IterKeyTypePointsOnly || opts.TableFilter != nil ||
			opts.PointKeyFilters != nil || opts.SkipPoint != nil {
			log.Fatal("bloomkv binding: only the bounds of pebble.IterOptions are supported")
		}
		lower, upper = opts.LowerBound, opts.UpperBound
	}
	return b.iters.get(b.d, lower, upper)
}

// iterPool keeps the iterators the driver closed and hands them out again,
// as Pebble pools its own iterators' memory: the driver opens an iterator
// for every read and scan, and a reused kv.Iterator allocates nothing.
// A reused iterator is moved to the store's current state with
// Iterator.Refresh, so each read sees every write acknowledged before it,
// the driver's own included, and given the bounds asked for with
// SetBounds (skipped when it has none and none are asked for, as with all
// of YCSB's reads). An iterator waiting in the pool holds the read state
// of its last use, and so its tables.
//
// The pool is split into shards, twice as many as GOMAXPROCS, each with
// its own lock: the driver's threads take and return an iterator per
// read, and one lock for them all made 16 threads queue on it. A get
// looks in every shard, from its processor's home shard on (see home),
// for an iterator, passing over a shard whose lock another thread holds. Only if it finds none does it
// lock every shard at once and look again, and open a new iterator if
// the pool is empty even then. So, as with one lock, an iterator is
// opened only when none is in the pool: the pool holds no more
// iterators than were ever open at once, one per driver thread.
type iterPool struct {
	shards []iterPoolShard
	closed atomic.Bool
	// home holds each processor's home shard, as a hint (*int): an
	// iterator closed on a processor goes to its home shard, and a get
	// looks there first. A driver thread mostly stays on its processor,
	// so it mostly gets back the iterator it closed, still in its
	// processor's cache, as from one stack. A sync.Pool keeps one per
	// processor without a lock; the garbage collector may drop a hint,
	// and a new one is then picked at random.
	home sync.Pool
	// hintsMade counts the home shards picked, for tests.
	hintsMade atomic.Int64
}

// iterPoolShard is one shard of an iterPool, on cache lines of its own.
type iterPoolShard struct {
	mu   sync.Mutex
	free []*pooledIter
	_    [96]byte
}

func newIterPool() *iterPool {
	return &iterPool{shards: make([]iterPoolShard, 2*runtime.GOMAXPROCS(0))}
}

// pooledIter is a kv.Iterator whose Close returns it to its pool.
type pooledIter struct {
	*kv.Iterator
	pool    *iterPool
	bounded bool // the iterator has a bound
}

// get returns an iterator over d's current state within [lower, upper)
// (nil: unbounded), from the pool if it holds one.
func (p *iterPool) get(d *kv.DB, lower, upper []byte) *pooledIter {
	it := p.take()
	bounded := lower != nil || upper != nil
	if it == nil {
		kit, err := d.NewIter(&kv.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			log.Fatal(err)
		}
		return &pooledIter{Iterator: kit, pool: p, bounded: bounded}
	}
	if err := it.Refresh(); err != nil {
		log.Fatal(err)
	}
	if bounded || it.bounded {
		it.SetBounds(lower, upper)
		it.bounded = bounded
	}
	return it
}

// homeShard returns the index of this processor's home shard.
func (p *iterPool) homeShard() int {
	h, ok := p.home.Get().(*int)
	if !ok {
		h = new(int)
		*h = rand.IntN(len(p.shards))
		p.hintsMade.Add(1)
	}
	p.home.Put(h)
	return *h
}

// take removes an iterator from the pool, or returns nil when the pool
// is empty.
func (p *iterPool) take() *pooledIter {
	start := p.homeShard()
	for i := range p.shards {
		sh := &p.shards[(start+i)%len(p.shards)]
		if !sh.mu.TryLock() {
			continue
		}
		it := sh.pop()
		sh.mu.Unlock()
		if it != nil {
			return it
		}
	}
	// None found, maybe only passed over: look at all shards at once, each
	// locked, in order (Close locks one).
	for i := range p.shards {
		p.shards[i].mu.Lock()
	}
	var it *pooledIter
	for i := range p.shards {
		if it = p.shards[i].pop(); it != nil {
			break
		}
	}
	for i := range p.shards {
		p.shards[i].mu.Unlock()
	}
	return it
}

// pop removes the shard's last iterator, or returns nil if it has none.
// The shard's lock must be held.
func (sh *iterPoolShard) pop() *pooledIter {
	n := len(sh.free)
	if n == 0 {
		return nil
	}
	it := sh.free[n-1]
	sh.free[n-1], sh.free = nil, sh.free[:n-1]
	return it
}

// Close hands the iterator back to its pool; one that met an error, or
// whose pool is closed, is closed instead.
func (it *pooledIter) Close() error {
	if err := it.Error(); err != nil {
		return errors.Join(err, it.Iterator.Close())
	}
	p := it.pool
	sh := &p.shards[p.homeShard()]
	sh.mu.Lock()
	// close sets closed before it empties the shards, each under its
	// lock: an iterator added here while closed is false is emptied.
	if !p.closed.Load() {
		sh.free = append(sh.free, it)
		sh.mu.Unlock()
		return nil
	}
	sh.mu.Unlock()
	return it.Iterator.Close()
}

// close closes the pooled iterators, and those handed back later.
func (p *iterPool) close() {
	p.closed.Store(true)
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		free := sh.free
		sh.free = nil
		sh.mu.Unlock()
		for _, it := range free {
			if err := it.Iterator.Close(); err != nil {
				log.Print(err)
			}
		}
	}
}

func (b bloomkvDB) NewBatch() batch { return &bloomkvBatch{d: b.d, b: b.d.NewBatch()} }

// Scan is pebbleDB's own Scan, which uses nothing of its receiver but the
// iterator it is given: both engines' scans copy out the same bytes with
// the same code.
func (b bloomkvDB) Scan(iter iterator, key []byte, count int64, reverse bool) error {
	return pebbleDB{}.Scan(iter, key, count, reverse)
}

// Metrics translates bloomkv's metrics into Pebble's, for what cmd/pebble
// prints and decides from them: level sizes and scores
// (--wait-compactions), read amplification (every L0 table is a sublevel
// in bloomkv), bytes read and written (w-amp).
func (b bloomkvDB) Metrics() *pebble.Metrics {
	m := b.d.Metrics()
	var p pebble.Metrics
	for i, l := range m.Levels {
		if i >= len(p.Levels) {
			break
		}
		pl := &p.Levels[i]
		pl.NumFiles, pl.Size, pl.Score = int64(l.NumFiles), l.Size, l.Score
		pl.Sublevels = int32(min(l.NumFiles, 1))
		pl.BytesIn, pl.BytesRead = uint64(l.BytesIn), uint64(l.BytesRead)
		pl.TablesMoved = uint64(l.Moves)
		p.Compact.MoveCount += l.Moves
		if i == 0 {
			pl.Sublevels = int32(l.NumFiles)
			pl.BytesFlushed = uint64(l.BytesWritten)
		} else {
			pl.BytesCompacted = uint64(l.BytesWritten)
		}
	}
	p.Flush.Count = m.Flush.Count
	// bloomkv's compactions all merge their inputs (Pebble's "default"
	// kind); moves are counted apart, as Pebble counts them among its own.
	p.Compact.DefaultCount = m.Compact.Count
	p.Compact.Count = m.Compact.Count + p.Compact.MoveCount
	p.Compact.MultiLevelCount = m.Compact.MultiLevelCount
	p.Compact.NumInProgress = int64(m.Compact.InProgress)
	p.WAL.Files = int64(m.WAL.Files)
	p.WAL.BytesIn, p.WAL.BytesWritten = uint64(m.WAL.BytesIn), uint64(m.WAL.BytesIn)
	p.MemTable.Size, p.MemTable.Count = uint64(m.MemTable.Size), int64(m.MemTable.Count)
	p.BlockCache = pebble.CacheMetrics{Size: m.BlockCache.Size, Count: m.BlockCache.Count,
		Hits: m.BlockCache.Hits, Misses: m.BlockCache.Misses}
	p.Snapshots.Count = m.Snapshots
	return &p
}

// bloomkvBatch adapts a kv.Batch, committed by DB.Apply, to cmd/pebble's
// batch interface.
type bloomkvBatch struct {
	d *kv.DB
	b *kv.Batch
}

// bloomkvWriteOptions maps Pebble's write options to bloomkv's: a nil
// *pebble.WriteOptions syncs in Pebble, where a nil *kv.WriteOptions does
// not.
func bloomkvWriteOptions(opts *pebble.WriteOptions) *kv.WriteOptions {
	if opts.GetSync() {
		return kv.Sync
	}
	return kv.NoSync
}

// Close hands the batch's buffer on to later batches (kv.Batch.Close), as
// Pebble's Close returns its batch to a pool.
func (b *bloomkvBatch) Close() error {
	b.b.Close()
	return nil
}

func (b *bloomkvBatch) Commit(opts *pebble.WriteOptions) error {
	return b.d.Apply(b.b, bloomkvWriteOptions(opts))
}

func (b *bloomkvBatch) Set(key, value []byte, _ *pebble.WriteOptions) error {
	return b.b.Set(key, value)
}

func (b *bloomkvBatch) Delete(key []byte, _ *pebble.WriteOptions) error {
	return b.b.Delete(key)
}

func (b *bloomkvBatch) LogData(data []byte, _ *pebble.WriteOptions) error {
	return fmt.Errorf("bloomkv binding: LogData (%d bytes): bloomkv batches hold no log-only records", len(data))
}

// pointReadDB serves the iterators of an engine's DB so that a SeekGE to a
// key the store holds, the whole of a YCSB read, is answered by the
// engine's allocation-free point lookup (bloomkv's DB.GetAppend, Pebble's
// Get with its Closer) into the iterator's own buffers; any other move,
// or a SeekGE to an absent key, opens the engine's iterator, as the
// driver would have, and goes on with it. A SeekGE to a present key shows
// the same key and value either way, and both engines are served alike;
// the lookup, unlike a seek, asks the tables' filters in both.
type pointReadDB struct {
	DB
	get func(dst, key []byte) ([]byte, bool)
}

func newPointReadDB(db DB) DB {
	switch d := db.(type) {
	case bloomkvDB:
		return pointReadDB{DB: db, get: func(dst, key []byte) ([]byte, bool) {
			v, err := d.d.GetAppend(dst, key)
			if err != nil && !errors.Is(err, kv.ErrNotFound) {
				log.Fatal(err)
			}
			return v, err == nil
		}}
	case pebbleDB:
		return pointReadDB{DB: db, get: func(dst, key []byte) ([]byte, bool) {
			v, closer, err := d.d.Get(key)
			if errors.Is(err, pebble.ErrNotFound) {
				return dst, false
			}
			if err != nil {
				log.Fatal(err)
			}
			dst = append(dst, v...)
			closer.Close()
			return dst, true
		}}
	}
	log.Fatalf("--point-reads get: no point lookup for %T", db)
	return nil
}

// pointReadIters pools the iterators of pointReadDB with their buffers.
var pointReadIters = sync.Pool{New: func() any { return new(pointReadIter) }}

// NewIter returns a pointReadIter when the read has no options (YCSB's
// reads and scans), the engine's iterator otherwise.
func (p pointReadDB) NewIter(opts *pebble.IterOptions) iterator {
	if opts != nil {
		return p.DB.NewIter(opts)
	}
	it := pointReadIters.Get().(*pointReadIter)
	it.db = p
	return it
}

// Scan scans with the engine's iterator: a scan starts with a SeekGE but
// goes on.
func (p pointReadDB) Scan(iter iterator, key []byte, count int64, reverse bool) error {
	if it, ok := iter.(*pointReadIter); ok {
		iter = it.open()
	}
	return p.DB.Scan(iter, key, count, reverse)
}

// pointReadIter is pointReadDB's iterator: positioned by a point lookup
// (it nil, valid) until a move needs the engine's iterator, it.
type pointReadIter struct {
	db         pointReadDB
	it         iterator
	key, value []byte
	valid      bool
}

// open opens the engine's iterator, positioned where the lookup left
// the iterator, if it was.
func (p *pointReadIter) open() iterator {
	if p.it == nil {
		p.it = p.db.DB.NewIter(nil)
		if p.valid {
			p.it.SeekGE(p.key)
		}
	}
	return p.it
}

func (p *pointReadIter) SeekGE(key []byte) bool {
	if p.it == nil {
		var ok bool
		if p.value, ok = p.db.get(p.value[:0], key); ok {
			p.key, p.valid = append(p.key[:0], key...), true
			return true
		}
		p.valid = false
	}
	return p.open().SeekGE(key)
}

func (p *pointReadIter) SeekLT(key []byte) bool { return p.open().SeekLT(key) }
func (p *pointReadIter) First() bool            { return p.open().First() }
func (p *pointReadIter) Last() bool             { return p.open().Last() }
func (p *pointReadIter) Next() bool             { return p.open().Next() }
func (p *pointReadIter) Prev() bool             { return p.open().Prev() }

func (p *pointReadIter) Valid() bool {
	if p.it != nil {
		return p.it.Valid()
	}
	return p.valid
}

func (p *pointReadIter) Key() []byte {
	if p.it != nil {
		return p.it.Key()
	}
	if !p.valid {
		return nil
	}
	return p.key
}

func (p *pointReadIter) Value() []byte {
	if p.it != nil {
		return p.it.Value()
	}
	if !p.valid {
		return nil
	}
	return p.value
}

// Close closes the engine's iterator, if one was opened, and pools p.
func (p *pointReadIter) Close() error {
	var err error
	if p.it != nil {
		err = p.it.Close()
	}
	*p = pointReadIter{key: p.key[:0], value: p.value[:0]}
	pointReadIters.Put(p)
	return err
}
