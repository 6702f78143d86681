package kv

import (
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// Get returns the value of key, or ErrNotFound. The returned slice is the
// caller's to keep and modify.
func (d *DB) Get(key []byte) ([]byte, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	return d.get(key, nil)
}

// GetAppend appends the value of key to dst and returns the extended
// slice; for a key not found it returns dst and ErrNotFound. It is Get for
// a caller that keeps a buffer: when dst has room for the value, a lookup
// allocates nothing, as Pebble's Get with its Closer does, and the value
// stays valid for as long as the caller keeps dst, with no Close to call.
// Pass dst[:0] to reuse a buffer.
func (d *DB) GetAppend(dst, key []byte) ([]byte, error) {
	if err := d.checkOpen(); err != nil {
		return dst, err
	}
	return d.lookup(dst, key, nil)
}

// get is lookup into a new slice, for the caller to keep.
func (d *DB) get(key []byte, snap *Snapshot) ([]byte, error) {
	value, err := d.lookup(nil, key, snap)
	if err != nil {
		return nil, err
	}
	if value == nil {
		value = []byte{} // found, empty: not nil
	}
	return value, nil
}

// lookup looks key up as of the snapshot, or the current state when snap is
// nil: in the memtables, then in the tables from newest to oldest. Each
// source answers for its range tombstones too (a covered key comes back
// found, as KindRangeDelete), so the first source that knows the key
// decides: the sources below it hold only older versions and tombstones.
// It counts what the lookup touched. It appends the value to dst, and
// returns dst and ErrNotFound for a key not found. The copy is made
// while the lookup holds its read state: a memtable's memory is reused
// once no read state holds it.
func (d *DB) lookup(dst, key []byte, snap *Snapshot) ([]byte, error) {
	if key == nil {
		key = []byte{} // nil is "unbounded" to key-range helpers
	}
	rs, seq := d.loadReadView(snap)
	defer rs.unref()
	d.countGet()

	value, kind, found := rs.mem.Get(key, seq)
	for i := len(rs.imm) - 1; !found && i >= 0; i-- {
		value, kind, found = rs.imm[i].Get(key, seq)
	}
	if !found {
		var err error
		value, kind, found, err = d.getFromTables(rs.current, key, seq)
		if err != nil {
			return dst, err
		}
	}
	if !found || kind != base.KindSet {
		// A tombstone, or a range tombstone covering the key
		// (KindRangeDelete): the sources below it are older.
		return dst, ErrNotFound
	}
	return append(dst, value...), nil
}

// countGet counts a point lookup served (LookupMetrics.Gets), wherever it
// is answered: a memtable, a table, or an indexed batch's own writes.
func (d *DB) countGet() {
	if n := d.metrics.gets.Add(1); n&(filterPassLookups-1) == 0 {
		d.filterMem.lookupsServed()
	}
}

// loadReadView returns the current read state, referenced, and the
// sequence number a read taken now sees in it (see readSeqNum). Without a
// snapshot, the state must still be the current one once the number is
// loaded, or both are loaded again: a state replaced meanwhile may lack
// tables published before writes the number covers (an ingest publishes
// its tables, then its number, and the writes after it go to the
// memtable the replaced state lists too), and the read would see those
// writes without the tables. Loaded in the other order, the state could
// hold a compaction's output that dropped versions the number still sees.
func (d *DB) loadReadView(snap *Snapshot) (*readState, base.SeqNum) {
	for {
		rs := d.loadReadState()
		seq := d.readSeqNum(snap)
		if snap != nil || d.readState.val.Load() == rs {
			return rs, seq
		}
		rs.unref()
	}
}

// readSeqNum returns the sequence number a read taken now sees: the
// snapshot's, or else the visible one. A read loads it with its read
// state through loadReadView.
func (d *DB) readSeqNum(snap *Snapshot) base.SeqNum {
	if snap != nil {
		return snap.seq
	}
	if f := d.opts.private.beforeReadSeq; f != nil {
		f()
	}
	return base.SeqNum(d.visibleSeq.Load())
}

// getFromTables searches v's tables: L0 newest first (L0 tables may
// overlap), then in each deeper level the one table whose range covers the
// key.
func (d *DB) getFromTables(v *manifest.Version, key []byte, seq base.SeqNum) (
	value []byte, kind base.Kind, found bool, err error) {
	l0 := v.Levels[0]
	for i := len(l0) - 1; i >= 0; i-- {
		f := l0[i]
		if !f.Overlaps(d.cmp.Compare, key, key) {
			continue
		}
		if value, kind, found, err = d.getFromTable(0, f, key, seq); found || err != nil {
			return value, kind, found, err
		}
	}
	for level := 1; level < manifest.NumLevels; level++ {
		f := findTable(d.cmp.Compare, v.Levels[level], key)
		if f == nil {
			continue
		}
		if value, kind, found, err = d.getFromTable(level, f, key, seq); found || err != nil {
			return value, kind, found, err
		}
	}
	return nil, 0, false, nil
}

// findTable returns the table of a sorted, non-overlapping level whose
// range holds key, or nil.
func findTable(cmp base.Compare, files []*manifest.FileMetadata, key []byte) *manifest.FileMetadata {
	lo, hi := manifest.OverlapRange(files, cmp, key, key)
	if lo == hi {
		return nil
	}
	return files[lo]
}

// getFromTable looks key up in one table and adds what it cost to the
// level's lookup counters. The value stays valid after the table is
// released (sstable.Reader.Get's contract); get copies it for the caller.
func (d *DB) getFromTable(level int, f *manifest.FileMetadata, key []byte, seq base.SeqNum) (
	value []byte, kind base.Kind, found bool, err error) {
	counters := &d.metrics.levels[level].lookups
	e, err := d.tableCache.get(f)
	if err != nil {
		return nil, 0, false, err
	}
	defer d.tableCache.release(e)
	var stats sstable.LookupStats
	value, kind, found, err = e.reader.Get(key, seq, &stats)
	counters.addStats(&stats)
	if found {
		counters.found.Add(1)
	}
	if err != nil {
		return nil, 0, false, err
	}
	return value, kind, found, nil
}
