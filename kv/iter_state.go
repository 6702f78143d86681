package kv

import (
	"sync"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/iterator"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
)

// iterState is what an Iterator works with, kept in iterStatePool between
// uses with its memory: the merge, the memtable and level iterators, the
// table iterator of each level, and the key buffers. Its shape:
//
//	Merging
//	├── memtable, immutable memtables (newest first)
//	├── Level{one L0 table} ... (newest first)
//	└── Level{L1 tables} ... Level{L6 tables}
//
// Each Level reuses one table iterator for every table it opens, so moving
// from table to table allocates nothing.
type iterState struct {
	db           *DB
	rs           *readState
	seq          base.SeqNum
	cmp          base.Compare
	bytewise     bool // cmp is bytes.Compare: equal keys are bytes.Equal
	lower, upper []byte
	// rangeDels are the sources of range tombstones (the memtables, the
	// tables) that hold any, each fragmented; a key is deleted when a
	// tombstone of any source visible at seq covers it.
	rangeDels [][]sstable.RangeTombstone

	merging  iterator.Merging
	inputs   []base.InternalIterator
	mems     []memtable.Iter
	levels   []*levelIter // the first nLevels are in use
	nLevels  int
	lowerBuf []byte
	upperBuf []byte

	// dir is +1 after a forward move, -1 after a backward one, 0 before
	// any. Forward, merging sits on the entry shown; backward, on the last
	// entry before the key shown. Once a move found no key, it says which
	// end it ran off.
	dir    int
	valid  bool
	key    []byte
	value  []byte
	keyBuf []byte
	err    error

	// prefix is SeekPrefixGE's prefix while the iterator is in prefix
	// mode, in prefixBuf, not nil even when empty; nil outside it.
	prefix    []byte
	prefixBuf []byte
	// prefixOnly is IterOptions.PrefixOnly: SeekGE seeks by prefix.
	prefixOnly bool
	// stats gathers, per level, what the tables' prefix seeks cost; each
	// move in prefix mode adds it to the DB's lookup counters.
	stats [manifest.NumLevels]sstable.LookupStats
	// counts is what Iterator.Stats reports, but for the blocks loaded by
	// the table each level has open (see levelIter.openTable).
	counts IteratorStats

	// batch is the index of the indexed batch the iterator reads over the
	// DB, nil for none; batchIter walks it. Its entries numbered below
	// batchLimit (see batchSeq) are visible; when batchDels is set,
	// rangeDels[0] holds its range tombstones.
	batch      *memtable.MemTable
	batchIter  memtable.Iter
	batchLimit base.SeqNum
	batchDels  bool

	// snap is the snapshot the iterator reads as of, nil for the DB's
	// state; src is the indexed batch it reads over, nil for none. They
	// are what Refresh reads again.
	snap *Snapshot
	src  *Batch
}

var iterStatePool = sync.Pool{New: func() any { return new(iterState) }}

// levelIter is one level (or one L0 table) of an iterator, with the table
// iterator it reuses for every table it opens.
type levelIter struct {
	iterator.Level
	table  tableIter
	cache  *tableCache
	stats  *sstable.LookupStats
	counts *IteratorStats
	// loaded is set while table's BlockLoads are this iterator's and not
	// yet in counts.
	loaded bool
	open   iterator.TableOpener // openTable, bound once
}

// openTable is the level's iterator.TableOpener: the Level closes the
// table it leaves before it opens the next, so one tableIter serves all.
func (l *levelIter) openTable(f *manifest.FileMetadata, lower, upper []byte) (base.InternalIterator, error) {
	l.harvest() // the table left is closed: its block loads are final
	if err := l.cache.initIter(&l.table, f, lower, upper, l.stats); err != nil {
		return nil, err
	}
	l.loaded = true
	return &l.table, nil
}

// harvest adds the block loads of the level's table to the iterator's
// counts, once.
func (l *levelIter) harvest() {
	if l.loaded {
		l.counts.BlockReads += l.table.BlockLoads()
		l.loaded = false
	}
}

// init readies s, fresh from the pool (zero but for its memory), as an
// iterator over d as of the snapshot (the current state when snap is nil).
// It opens no table: a Level opens its tables as positioning reaches them.
func (s *iterState) init(d *DB, opts *IterOptions, snap *Snapshot) {
	s.db, s.cmp, s.bytewise = d, d.cmp.Compare, d.cmp.Bytewise()
	d.openIters.Add(1)
	if opts != nil {
		s.lower, s.lowerBuf = keepBound(s.lowerBuf, opts.LowerBound)
		s.upper, s.upperBuf = keepBound(s.upperBuf, opts.UpperBound)
		s.prefixOnly = opts.PrefixOnly
	}
	s.snap = snap
	s.rs, s.seq = d.loadReadView(snap)
	s.build()
}

// build adds the inputs of s's read state within s's bounds and readies the
// merge over them: what init and SetBounds share.
func (s *iterState) build() {
	rs := s.rs
	if s.batch != nil {
		s.addBatch()
	}
	s.addMemTables(rs)
	l0 := rs.current.Levels[0]
	for i := len(l0) - 1; i >= 0; i-- {
		if iterator.OverlapsBounds(s.cmp, l0[i].Smallest.UserKey, l0[i].Largest.UserKey, s.lower, s.upper) {
			s.addLevel(0, l0[i:i+1])
		}
	}
	for level := 1; level < len(rs.current.Levels); level++ {
		if files := rs.current.Levels[level]; len(files) > 0 {
			s.addLevel(level, files)
		}
	}
	s.merging.Init(s.cmp, s.inputs...)
	s.addDBRangeDels(rs)
}

// keepBound copies bound into buf, returning the copy and the buffer; a
// nil bound (unbounded) stays nil.
func keepBound(buf, bound []byte) ([]byte, []byte) {
	if bound == nil {
		return nil, buf
	}
	buf = append(buf[:0], bound...)
	if buf == nil {
		buf = []byte{}
	}
	return buf, buf
}

// addMemTables adds the iterators of rs's memtables, newest first.
func (s *iterState) addMemTables(rs *readState) {
	n := 1 + len(rs.imm)
	if cap(s.mems) < n {
		s.mems = make([]memtable.Iter, n)
	}
	s.mems = s.mems[:n]
	for j := 0; j < n; j++ {
		m := rs.mem
		if j > 0 {
			m = rs.imm[len(rs.imm)-j]
		}
		m.InitIter(&s.mems[j], s.lower, s.upper)
		s.inputs = append(s.inputs, &s.mems[j])
	}
}

// addDBRangeDels adds the range tombstones of rs's memtables and tables.
func (s *iterState) addDBRangeDels(rs *readState) {
	s.addRangeDels(rs.mem.RangeDels(), nil)
	for _, m := range rs.imm {
		s.addRangeDels(m.RangeDels(), nil)
	}
	s.addRangeDels(rs.tableRangeDels())
}

// addLevel adds an iterator over files, sorted and not overlapping, of
// the given level.
func (s *iterState) addLevel(level int, files []*manifest.FileMetadata) {
	if s.nLevels == len(s.levels) {
		l := &levelIter{}
		l.open = l.openTable
		s.levels = append(s.levels, l)
	}
	l := s.levels[s.nLevels]
	s.nLevels++
	l.cache, l.stats, l.counts = s.db.tableCache, &s.stats[level], &s.counts
	l.table.considered = &s.counts.TablesConsidered
	l.Init(s.cmp, files, s.lower, s.upper, l.open)
	s.inputs = append(s.inputs, &l.Level)
}

// addRangeDels adds a source of fragmented range tombstones, if it holds
// any; an error gathering them stops the iterator.
func (s *iterState) addRangeDels(frags []sstable.RangeTombstone, err error) {
	if err != nil && s.err == nil {
		s.err = err
	}
	if len(frags) > 0 {
		s.rangeDels = append(s.rangeDels, frags)
	}
}

// rangeDeleted reports whether a range tombstone visible to the iterator
// deletes version seq of key.
func (s *iterState) rangeDeleted(key []byte, seq base.SeqNum) bool {
	for j, frags := range s.rangeDels {
		readSeq := s.seq
		if j == 0 && s.batchDels {
			readSeq = s.batchLimit - 1
		}
		if tseq, ok := rangedel.Covering(s.cmp, frags, key, readSeq); ok && tseq > seq {
			return true
		}
	}
	return false
}

// close closes the iterators, releases the read state and returns s to
// the pool, dropping every reference to the DB's memory; it returns what
// Iterator.Close does.
func (s *iterState) close() error {
	s.db.openIters.Add(-1)
	err := s.merging.Close()
	s.rs.unref()
	if s.err != nil {
		err = s.err
	} else if cerr := s.db.checkOpen(); cerr != nil {
		err = cerr
	}
	for j := range s.mems {
		s.mems[j] = memtable.Iter{}
	}
	for _, l := range s.levels[:s.nLevels] {
		l.Level = iterator.Level{}
		l.cache, l.stats, l.counts, l.loaded = nil, nil, nil, false
	}
	clear(s.inputs)
	clear(s.rangeDels)
	*s = iterState{
		rangeDels: s.rangeDels[:0], merging: s.merging, inputs: s.inputs[:0],
		mems: s.mems[:0], levels: s.levels, lowerBuf: s.lowerBuf, upperBuf: s.upperBuf,
		keyBuf: s.keyBuf[:0], prefixBuf: s.prefixBuf[:0],
	}
	iterStatePool.Put(s)
	return err
}
