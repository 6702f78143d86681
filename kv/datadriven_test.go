package kv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/vfs"
)

// TestDataDriven runs the scripts in testdata/. Each script works on one
// in-memory filesystem; commands:
//
//	open [memtable-size=N] [filters=off] [auto-compactions=off] [target-file-size=N]
//	     [block-size=N] [l0-compaction-threshold=N] [split=slash|none] [filter-cap=N]
//	fill start=N count=M  set keys k<start>..k<start+M-1> (zero-padded to 6
//	                      digits), in one batch
//	filters               wait for the filter passes, then print the filter
//	                      memory and which tables hold their filters
//	batch                 input: "set k v" / "del k" / "del-range start end"
//	                      lines, applied atomically
//	indexed-batch name [snapshot=s]   input: batch lines, added to the
//	                      indexed batch name (made on the first use), not applied
//	apply name            apply the indexed batch name, and close it
//	get [snapshot=name] [batch=name]   input: one key per line
//	iter [lower=k] [upper=k] [snapshot=name] [batch=name]
//	                      input: first, last, next, prev, seek-ge k, seek-lt k,
//	                      seek-prefix-ge k, scan, set-bounds lower upper ("-":
//	                      none), clone (the next lines move a clone), stats
//	snapshot name / close-snapshot name
//	flush / compact [start end] / wait-compactions   print the LSM shape
//	lsm                   print the tables of each level
//	ls                    list the store's files
//	metrics               print lookup counters per level
//	reopen [split=slash|none] / close
//	build-ext name        input: batch lines; writes them at seqnum 0 into
//	                      the table ext/name with sstable.Writer
//	ingest name...        ingest those tables; print the LSM shape
//	disk-usage [start end]   print EstimateDiskUsage
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/script", func(t *testing.T, path string) {
		h := &scriptHarness{fs: vfs.NewMem(), snaps: map[string]*Snapshot{}}
		defer h.close(t)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := h.run(t, td)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

type scriptHarness struct {
	fs      vfs.FS
	opts    *Options
	db      *DB
	snaps   map[string]*Snapshot
	batches map[string]*Batch
}

// closeSnapshots closes the script's snapshots, which end with the DB
// they were taken of.
func (h *scriptHarness) closeSnapshots() error {
	for _, s := range h.snaps {
		if err := s.Close(); err != nil && !errors.Is(err, ErrClosed) {
			return err
		}
	}
	return nil
}

// close closes the DB at the end of a script, unless the script did.
func (h *scriptHarness) close(t testing.TB) {
	if h.db != nil {
		must(t, h.closeSnapshots())
		if err := h.db.Close(); !errors.Is(err, ErrClosed) {
			must(t, err)
		}
	}
}

func (h *scriptHarness) run(t *testing.T, td *datadriven.TestData) (string, error) {
	switch td.Cmd {
	case "open":
		h.close(t)
		h.opts = scriptOptions(t, td, h.fs)
		h.snaps = map[string]*Snapshot{}
		var err error
		h.db, err = Open("db", h.opts)
		return "", err
	case "reopen":
		if err := h.closeSnapshots(); err != nil {
			return "", err
		}
		if err := h.db.Close(); err != nil {
			return "", err
		}
		if td.HasArg("split") {
			h.opts.Comparer = scriptComparer(t, td)
		}
		if td.HasArg("filter-cap") {
			var n int64
			td.ScanArgs(t, "filter-cap", &n)
			h.opts.FilterBudget = nil
			if n > 0 {
				h.opts.FilterBudget = &bloompolicy.Budget{Bytes: n}
			}
		}
		h.snaps = map[string]*Snapshot{}
		var err error
		h.db, err = Open("db", h.opts)
		return "", err
	case "close":
		return "", h.db.Close()
	case "batch":
		return "", h.batch(td.Input)
	case "indexed-batch":
		return "", h.indexedBatch(td)
	case "apply":
		b := h.batches[td.CmdArgs[0].Key]
		delete(h.batches, td.CmdArgs[0].Key)
		defer b.Close()
		return "", h.db.Apply(b, Sync)
	case "get":
		return h.get(td)
	case "iter":
		return h.iter(td)
	case "snapshot":
		h.snaps[td.CmdArgs[0].Key] = h.db.NewSnapshot()
		return "", nil
	case "close-snapshot":
		return "", h.snaps[td.CmdArgs[0].Key].Close()
	case "flush":
		if err := h.db.Flush(); err != nil {
			return "", err
		}
		return formatLSM(h.db), nil
	case "compact":
		var start, end []byte
		if len(td.CmdArgs) == 2 {
			start, end = []byte(td.CmdArgs[0].Key), []byte(td.CmdArgs[1].Key)
		}
		if err := h.db.Compact(start, end); err != nil {
			return "", err
		}
		return formatLSM(h.db), nil
	case "wait-compactions":
		if err := h.db.WaitIdle(context.Background()); err != nil {
			return "", err
		}
		return formatLSM(h.db), nil
	case "lsm":
		return formatLSM(h.db), nil
	case "ls":
		// Obsolete files are deleted in the background (see cleaner):
		// list what is left once those queued are gone.
		h.db.cleaner.waitIdle()
		names, err := h.fs.List("db")
		slices.Sort(names)
		return strings.Join(names, "\n") + "\n", err
	case "metrics":
		return formatLookups(h.db.Metrics()), nil
	case "build-ext", "ingest", "disk-usage":
		return h.runFiles(td) // datadriven_files_test.go
	case "fill":
		var start, count int
		td.ScanArgs(t, "start", &start)
		td.ScanArgs(t, "count", &count)
		b := h.db.NewBatch()
		for k := start; k < start+count; k++ {
			if err := b.Set([]byte(fmt.Sprintf("k%06d", k)), []byte("v")); err != nil {
				return "", err
			}
		}
		return "", h.db.Apply(b, Sync)
	case "filters":
		h.db.waitFilterPasses()
		return formatFilters(h.db), nil
	}
	return "", fmt.Errorf("unknown command %q", td.Cmd)
}

func scriptOptions(t *testing.T, td *datadriven.TestData, fs vfs.FS) *Options {
	o := &Options{FS: fs}
	for _, arg := range td.CmdArgs {
		switch arg.Key {
		case "filters":
			o.DisableFilters = arg.Vals[0] == "off"
		case "auto-compactions":
			o.DisableAutomaticCompactions = arg.Vals[0] == "off"
		case "memtable-size":
			o.MemTableSize = int64(atoi(t, arg.Vals[0]))
		case "target-file-size":
			o.TargetFileSize = int64(atoi(t, arg.Vals[0]))
		case "block-size":
			o.BlockSize = atoi(t, arg.Vals[0])
		case "l0-compaction-threshold":
			o.L0CompactionThreshold = atoi(t, arg.Vals[0])
		case "split":
			o.Comparer = scriptComparer(t, td)
		case "filter-cap":
			o.FilterBudget = &bloompolicy.Budget{Bytes: int64(atoi(t, arg.Vals[0]))}
		default:
			t.Fatalf("open: unknown argument %q", arg.Key)
		}
	}
	return o
}

// scriptComparer returns the comparer the split argument names (see
// itertest.ComparerNamed).
func scriptComparer(t *testing.T, td *datadriven.TestData) *sstable.Comparer {
	var v string
	td.ScanArgs(t, "split", &v)
	c, ok := itertest.ComparerNamed(v)
	if !ok {
		t.Fatalf("unknown split %q", v)
	}
	return c
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (h *scriptHarness) batch(input string) error {
	b := h.db.NewBatch()
	if err := addBatchLines(b, input); err != nil {
		return err
	}
	return h.db.Apply(b, Sync)
}

// indexedBatch adds the input's writes to the named indexed batch.
func (h *scriptHarness) indexedBatch(td *datadriven.TestData) error {
	name := td.CmdArgs[0].Key
	b := h.batches[name]
	if b == nil {
		if s := h.snapshotArg(td); s != nil {
			b = s.NewIndexedBatch()
		} else {
			b = h.db.NewIndexedBatch()
		}
		if h.batches == nil {
			h.batches = map[string]*Batch{}
		}
		h.batches[name] = b
	}
	return addBatchLines(b, td.Input)
}

// batchArg returns the indexed batch the batch argument names, or nil.
func (h *scriptHarness) batchArg(td *datadriven.TestData) *Batch {
	for _, arg := range td.CmdArgs {
		if arg.Key == "batch" {
			return h.batches[arg.Vals[0]]
		}
	}
	return nil
}

// addBatchLines adds the writes of input's lines to b.
func addBatchLines(b *Batch, input string) error {
	for _, line := range strings.Split(input, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "set":
			if err := b.Set([]byte(f[1]), []byte(f[2])); err != nil {
				return err
			}
		case len(f) == 2 && f[0] == "del":
			if err := b.Delete([]byte(f[1])); err != nil {
				return err
			}
		case len(f) == 3 && f[0] == "del-range":
			if err := b.DeleteRange([]byte(f[1]), []byte(f[2])); err != nil {
				return err
			}
		default:
			return fmt.Errorf("bad batch line %q", line)
		}
	}
	return nil
}

func (h *scriptHarness) snapshotArg(td *datadriven.TestData) *Snapshot {
	for _, arg := range td.CmdArgs {
		if arg.Key == "snapshot" {
			return h.snaps[arg.Vals[0]]
		}
	}
	return nil
}

func (h *scriptHarness) get(td *datadriven.TestData) (string, error) {
	s := h.snapshotArg(td)
	var b strings.Builder
	for _, key := range strings.Fields(td.Input) {
		var v []byte
		var err error
		if ib := h.batchArg(td); ib != nil {
			v, err = ib.Get([]byte(key))
		} else if s != nil {
			v, err = s.Get([]byte(key))
		} else {
			v, err = h.db.Get([]byte(key))
		}
		switch {
		case errors.Is(err, ErrNotFound):
			fmt.Fprintf(&b, "%s: not found\n", key)
		case err != nil:
			fmt.Fprintf(&b, "%s: error: %v\n", key, err)
		default:
			fmt.Fprintf(&b, "%s: %s\n", key, v)
		}
	}
	return b.String(), nil
}

func (h *scriptHarness) iter(td *datadriven.TestData) (_ string, err error) {
	opts := &IterOptions{}
	for _, arg := range td.CmdArgs {
		switch arg.Key {
		case "lower":
			opts.LowerBound = []byte(arg.Vals[0])
		case "upper":
			opts.UpperBound = []byte(arg.Vals[0])
		case "prefix-only":
			opts.PrefixOnly = true
		}
	}
	var it *Iterator
	if ib := h.batchArg(td); ib != nil {
		it, err = ib.NewIter(opts)
	} else if s := h.snapshotArg(td); s != nil {
		it, err = s.NewIter(opts)
	} else {
		it, err = h.db.NewIter(opts)
	}
	if err != nil {
		return "", err
	}
	var shown error // the last error the output shows
	defer func() {
		// Close returns the iterator's error: a new one only is news.
		if cerr := it.Close(); cerr != nil && cerr != shown {
			err = errors.Join(err, cerr)
		}
	}()
	var b strings.Builder
	for _, line := range strings.Split(td.Input, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "first":
			it.First()
		case "last":
			it.Last()
		case "next":
			it.Next()
		case "prev":
			it.Prev()
		case "seek-ge":
			it.SeekGE([]byte(f[1]))
		case "seek-lt":
			it.SeekLT([]byte(f[1]))
		case "seek-prefix-ge":
			it.SeekPrefixGE([]byte(f[1]))
		case "set-bounds":
			it.SetBounds(scriptBound(f[1]), scriptBound(f[2]))
		case "clone":
			c, err := it.Clone()
			if err != nil {
				return "", err
			}
			if cerr := it.Close(); cerr != nil && cerr != shown {
				c.Close()
				return "", cerr
			}
			it = c
		case "stats":
			st := it.Stats()
			fmt.Fprintf(&b, "%s: tables=%d filter-negatives=%d block-reads=%d\n",
				line, st.TablesConsidered, st.FilterNegatives, st.BlockReads)
			continue
		case "scan":
			// All keys forward, on one line.
			var keys []string
			for it.First(); it.Valid(); it.Next() {
				keys = append(keys, string(it.Key())+"="+string(it.Value()))
			}
			fmt.Fprintf(&b, "%s: %s\n", line, strings.Join(keys, " "))
			continue
		default:
			return "", fmt.Errorf("unknown iter op %q", line)
		}
		if it.Valid() {
			fmt.Fprintf(&b, "%s: %s=%s\n", line, it.Key(), it.Value())
		} else if err := it.Error(); err != nil {
			fmt.Fprintf(&b, "%s: error: %v\n", line, err)
			shown = err
		} else {
			fmt.Fprintf(&b, "%s: .\n", line)
		}
	}
	return b.String(), nil
}

// scriptBound reads an iterator bound: "-" is none.
func scriptBound(s string) []byte {
	if s == "-" {
		return nil
	}
	return []byte(s)
}

// formatLSM prints the tables of each non-empty level.
func formatLSM(d *DB) string {
	d.mu.Lock()
	v := d.mu.versions.current
	d.mu.Unlock()
	s := v.Describe(func(f *manifest.FileMetadata) string { return fmt.Sprintf("entries=%d", f.NumEntries) })
	if s == "" {
		return "(empty)\n"
	}
	return s
}

// formatFilters prints the filter memory metrics and, per table of the
// current Version, its own filter's bytes and what the cap's plan has it
// hold: its own filter, one built in memory at some bits per entry, or
// none ("left out" when the allocation gave it bits that did not fit, "no
// filter" when it gave none); "held" when the table is open with that
// filter in memory.
func formatFilters(d *DB) string {
	m := d.Metrics()
	var b strings.Builder
	fmt.Fprintf(&b, "cap=%d held=%d not-held=%d built=%d\n", m.Filters.CapBytes, m.Filters.HeldBytes, m.Filters.TablesNotHeld, m.Filters.TablesBuilt)
	v := refCurrentVersion(d)
	defer d.unrefVersion(v)
	for l, files := range v.Levels {
		for _, f := range files {
			fmt.Fprintf(&b, "L%d %s entries=%d filter=%dB bits/key=%.1f: %s\n", l, f.FileNum, f.NumEntries,
				f.FilterBytes, 8*float64(f.FilterBytes)/float64(f.NumEntries), tableFilterDesc(d, f))
		}
	}
	return b.String()
}

// tableFilterDesc describes the filter table f holds under the plan.
func tableFilterDesc(d *DB, f *manifest.FileMetadata) string {
	p, planned := d.filterMem.plan(f.FileNum)
	e, ok := d.tableCache.listedEntry(f.FileNum)
	var held string
	if ok && e.opened.Load() && e.err == nil && e.reader.FilterHeld() {
		e.filterMu.Lock()
		held = fmt.Sprintf("held own (%dB)", e.heldBytes)
		if e.heldBuilt {
			held = fmt.Sprintf("held built at %.2f bits/key (%dB)", e.heldBits, e.heldBytes)
		}
		e.filterMu.Unlock()
	}
	switch {
	case d.filterMem.cap == 0 || !planned:
		if held == "" {
			return "not held"
		}
		return held
	case held != "":
		return held
	case p.hold == holdOwn:
		return "may hold own"
	case p.hold == holdBuilt:
		return fmt.Sprintf("may hold built at %.2f bits/key", p.bits)
	case p.bits > 0:
		return "left out"
	}
	return "no filter"
}

// formatLookups prints the lookup counters of the levels that were
// consulted, and the total.
func formatLookups(m Metrics) string {
	var b strings.Builder
	row := func(name string, l LookupMetrics) {
		fmt.Fprintf(&b, "%s: gets=%d prefix-seeks=%d considered=%d negatives=%d true-pos=%d false-pos=%d block-reads=%d",
			name, l.Gets, l.PrefixSeeks, l.TablesConsidered, l.FilterNegatives, l.FilterTruePositives,
			l.FilterFalsePositives, l.BlockReads)
		if l.RangeDelChecks > 0 {
			fmt.Fprintf(&b, " range-del-checks=%d", l.RangeDelChecks)
		}
		if l.PrefixMatches > 0 {
			fmt.Fprintf(&b, " prefix-matches=%d", l.PrefixMatches)
		}
		if l.FilterSkipped > 0 {
			fmt.Fprintf(&b, " filter-skipped=%d", l.FilterSkipped)
		}
		b.WriteString("\n")
	}
	for i, l := range m.Levels {
		if l.Lookups != (LookupMetrics{}) || l.NumFiles > 0 {
			row(fmt.Sprintf("L%d (%d tables, %d keys)", i, l.NumFiles, l.Keys), l.Lookups)
		}
	}
	row("total", m.Lookups)
	return b.String()
}
