package kv_test

// The store-wide operations of TestPebbleDiff: Ingest of tables written
// alike by each engine's table writer, and EstimateDiskUsage.

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/objstorage/objstorageprovider"
	psstable "github.com/cockroachdb/pebble/sstable"
)

// ingestEntry is one entry of a table to ingest: a Set, a Delete, or a
// range deletion of [key, end).
type ingestEntry struct {
	kind     sstable.Kind
	key, end []byte
	value    []byte
}

// ingest writes one to three tables with each engine's table writer and
// ingests them into both engines. The tables hold sets, deletions and
// range deletions of keys in order; one in ten ingests gives two tables
// a key in common, which both engines refuse. Paths are given in key
// order, which bloomkv requires and Pebble does not (it sorts them), and
// no table is empty, which bloomkv refuses and Pebble skips (see
// DB.Ingest).
func (r *diffRun) ingest() {
	tables := r.ingestTables()
	var desc []byte
	var kpaths, ppaths []string
	for i, entries := range tables {
		desc = fmt.Appendf(desc, "table %d: [", i)
		for _, e := range entries {
			switch e.kind {
			case sstable.KindSet:
				desc = fmt.Appendf(desc, "set %s=%s; ", fmtKey(e.key), short(e.value))
			case sstable.KindDelete:
				desc = fmt.Appendf(desc, "del %s; ", fmtKey(e.key))
			default:
				desc = fmt.Appendf(desc, "del-range %s-%s; ", fmtKey(e.key), fmtKey(e.end))
			}
		}
		desc = append(desc, "] "...)
		path := fmt.Sprintf("ext-%d-%d.sst", r.log.n, i)
		r.writeKvTable(path, entries)
		r.writePebbleTable(path, entries)
		kpaths, ppaths = append(kpaths, path), append(ppaths, path)
	}
	r.log.add("Ingest %s", desc)
	if r.sameErr("Ingest", r.kdb.Ingest(kpaths), r.pdb.Ingest(ppaths)) {
		r.ran.ingests++
	}
}

// ingestTables draws the entries of the tables of an ingest: distinct
// sorted keys cut into consecutive tables, each key set or deleted, and
// now and then a range deletion in a table, which ends before the next
// table's first key.
func (r *diffRun) ingestTables() [][]ingestEntry {
	var keys [][]byte
	for range 1 + r.rng.IntN(12) {
		keys = append(keys, r.key())
	}
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	n := min(len(keys), 1+r.rng.IntN(3))
	var tables [][]ingestEntry
	for i := range n {
		lo, hi := i*len(keys)/n, (i+1)*len(keys)/n
		var entries []ingestEntry
		for _, k := range keys[lo:hi] {
			if r.rng.IntN(5) == 0 {
				entries = append(entries, ingestEntry{kind: sstable.KindDelete, key: k})
				continue
			}
			entries = append(entries, ingestEntry{kind: sstable.KindSet, key: k, value: r.value()})
		}
		if r.rng.IntN(3) == 0 {
			entries = r.addIngestRangeDel(entries, keys, lo, hi)
		}
		tables = append(tables, entries)
	}
	if len(tables) > 1 && r.rng.IntN(10) == 0 {
		// The last key of a table repeated in the next: both refuse.
		i := r.rng.IntN(len(tables) - 1)
		last := tables[i][len(tables[i])-1]
		if last.kind != sstable.KindRangeDelete {
			tables[i+1] = append([]ingestEntry{last}, tables[i+1]...)
		}
	}
	return tables
}

// addIngestRangeDel adds a range deletion to the table of keys[lo:hi],
// starting at one of its keys and ending past it, before keys[hi] (the
// next table's first key) if there is one, past the last key otherwise;
// it may end at keys[hi], as the end is exclusive. Sometimes it replaces the table's points.
func (r *diffRun) addIngestRangeDel(entries []ingestEntry, keys [][]byte, lo, hi int) []ingestEntry {
	start := keys[lo+r.rng.IntN(hi-lo)]
	end := append(bytes.Clone(keys[len(keys)-1]), 0xff)
	if hi < len(keys) {
		end = keys[hi]
	}
	if next := append(bytes.Clone(start), 0); r.rng.IntN(2) == 0 && bytes.Compare(next, end) < 0 {
		end = next
	}
	if r.rng.IntN(4) == 0 {
		entries = nil
	}
	return append(entries, ingestEntry{kind: sstable.KindRangeDelete, key: start, end: end})
}

func (r *diffRun) writeKvTable(path string, entries []ingestEntry) {
	f, err := r.kopts.FS.Create(path)
	r.check(err, "bloomkv: creating a table to ingest")
	opts := sstable.WriterOptions{Comparer: r.kopts.Comparer, BlockSize: r.kopts.BlockSize}
	if r.rng.IntN(2) == 0 { // the store's own policy: Get and prefix seeks ask the filters
		policy, err := bloompolicy.New(kv.DefaultFilterFPR)
		r.check(err, "bloompolicy.New")
		opts.FilterPolicy = policy
	}
	w := sstable.NewWriter(f, opts)
	for _, e := range entries {
		if e.kind == sstable.KindRangeDelete {
			r.check(w.AddRangeDel(sstable.RangeTombstone{Start: e.key, End: e.end, Seq: 0}), "sstable.Writer.AddRangeDel")
			continue
		}
		r.check(w.Add(sstable.MakeInternalKey(e.key, 0, e.kind), e.value), "sstable.Writer.Add")
	}
	r.check(w.Close(), "sstable.Writer.Close")
}

func (r *diffRun) writePebbleTable(path string, entries []ingestEntry) {
	f, err := r.popts.FS.Create(path)
	r.check(err, "Pebble: creating a table to ingest")
	opts := psstable.WriterOptions{Comparer: r.popts.Comparer, BlockSize: r.kopts.BlockSize}
	w := psstable.NewWriter(objstorageprovider.NewFileWritable(f), opts)
	for _, e := range entries {
		switch e.kind {
		case sstable.KindSet:
			err = w.Set(e.key, e.value)
		case sstable.KindDelete:
			err = w.Delete(e.key)
		default:
			err = w.DeleteRange(e.key, e.end)
		}
		r.check(err, "Pebble's sstable.Writer")
	}
	r.check(w.Close(), "Pebble's sstable.Writer.Close")
}

// estimate compares EstimateDiskUsage: both engines refuse a start after
// end, and bloomkv's figure of a range is no less than that of a range
// within it, the tables unchanged between the calls. The figures themselves differ with the table formats. A nil
// end is unbounded for bloomkv (kv/estimate.go) and sorts first for
// Pebble, so the outer range's ends are never nil.
func (r *diffRun) estimate() {
	start, end := r.seekKey(), r.seekKey()
	for end == nil {
		end = r.seekKey()
	}
	if r.rng.IntN(4) != 0 && bytes.Compare(start, end) > 0 {
		start, end = end, start
	}
	r.log.add("EstimateDiskUsage(%s, %s)", fmtKey(start), fmtKey(end))
	// Background work changes the tables, and so the figures, between
	// calls.
	r.check(r.kdb.WaitIdle(context.Background()), "WaitIdle")
	outer, kerr := r.kdb.EstimateDiskUsage(start, end)
	_, perr := r.pdb.EstimateDiskUsage(start, end)
	if !r.sameErr("EstimateDiskUsage", kerr, perr) {
		return
	}
	in0, in1 := r.seekKey(), r.seekKey()
	if bytes.Compare(in0, in1) > 0 {
		in0, in1 = in1, in0
	}
	if bytes.Compare(in0, start) < 0 {
		in0 = start
	}
	if in1 == nil || bytes.Compare(in1, end) > 0 {
		in1 = end // a nil end would be unbounded
	}
	if bytes.Compare(in0, in1) > 0 {
		return
	}
	inner, err := r.kdb.EstimateDiskUsage(in0, in1)
	r.check(err, "EstimateDiskUsage")
	if inner > outer {
		r.fatalf("EstimateDiskUsage(%s, %s) = %d, more than EstimateDiskUsage(%s, %s) = %d around it",
			fmtKey(in0), fmtKey(in1), inner, fmtKey(start), fmtKey(end), outer)
	}
	all, err := r.kdb.EstimateDiskUsage(nil, nil)
	r.check(err, "EstimateDiskUsage(nil, nil)")
	if outer > all {
		r.fatalf("EstimateDiskUsage(%s, %s) = %d, more than the whole store's %d", fmtKey(start), fmtKey(end), outer, all)
	}
}
