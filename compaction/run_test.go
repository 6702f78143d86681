package compaction

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/vfs"
)

// memOutputs hands out tables in an in-memory file system, numbered from 1.
type memOutputs struct {
	fs   vfs.FS
	next base.FileNum
}

func newMemOutputs() *memOutputs { return &memOutputs{fs: vfs.NewMem()} }

func (o *memOutputs) newOutput() (base.FileNum, vfs.File, error) {
	o.next++
	f, err := o.fs.Create(base.MakeFilename(base.FileTypeTable, o.next))
	return o.next, f, err
}

// open opens the table numbered n with filters from policies.
func (o *memOutputs) open(t testing.TB, n base.FileNum, policies ...bloompolicy.FilterPolicy) *sstable.Reader {
	t.Helper()
	name := base.MakeFilename(base.FileTypeTable, n)
	f, err := o.fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	opts := sstable.ReaderOptions{FileNum: n, FileName: name, Filters: map[string]bloompolicy.FilterPolicy{}}
	for _, p := range policies {
		opts.Filters[p.Name()] = p
	}
	r, err := sstable.NewReader(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rangeDels returns the range tombstones of table m.
func (o *memOutputs) rangeDels(t testing.TB, m *manifest.FileMetadata) []sstable.RangeTombstone {
	t.Helper()
	r := o.open(t, m.FileNum)
	defer r.Close()
	return r.RangeDels()
}

// readTable returns every entry of table m and checks m against them and
// its range tombstones.
func (o *memOutputs) readTable(t testing.TB, m *manifest.FileMetadata) []modelEntry {
	t.Helper()
	r := o.open(t, m.FileNum)
	defer r.Close()
	it, err := r.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	var entries []modelEntry
	for ok := it.First(); ok; ok = it.Next() {
		entries = append(entries, modelEntry{key: it.Key().Clone(), value: bytes.Clone(it.Value())})
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	checkMetadata(t, m, entries, r.RangeDels(), r.Properties())
	return entries
}

// checkMetadata checks what Run said of a table against its contents:
// entries and range tombstones.
func checkMetadata(t testing.TB, m *manifest.FileMetadata, entries []modelEntry, rangeDels []sstable.RangeTombstone,
	props *sstable.Properties) {
	t.Helper()
	if len(entries) == 0 && len(rangeDels) == 0 {
		t.Fatalf("table %s is empty", m.FileNum)
	}
	var first, last base.InternalKey
	if len(entries) > 0 {
		first, last = entries[0].key, entries[len(entries)-1].key
	}
	if len(rangeDels) > 0 {
		s, l := rangedel.Bounds(rangeDels)
		if len(entries) == 0 || base.InternalCompare(bytes.Compare, s, first) < 0 {
			first = s
		}
		if len(entries) == 0 || base.InternalCompare(bytes.Compare, l, last) > 0 {
			last = l
		}
	}
	lo, hi := first.SeqNum(), first.SeqNum()
	for _, e := range entries {
		lo, hi = min(lo, e.key.SeqNum()), max(hi, e.key.SeqNum())
	}
	for _, tb := range rangeDels {
		lo, hi = min(lo, tb.Seq), max(hi, tb.Seq)
	}
	switch {
	case base.InternalCompare(bytes.Compare, m.Smallest, first) != 0 || base.InternalCompare(bytes.Compare, m.Largest, last) != 0:
		t.Fatalf("table %s: bounds %s-%s, contents %s-%s", m.FileNum, m.Smallest, m.Largest, first, last)
	case m.SmallestSeqNum != lo || m.LargestSeqNum != hi:
		t.Fatalf("table %s: seqnums %d-%d, contents %d-%d", m.FileNum, m.SmallestSeqNum, m.LargestSeqNum, lo, hi)
	case m.NumEntries != uint64(len(entries)):
		t.Fatalf("table %s: %d entries, contents %d", m.FileNum, m.NumEntries, len(entries))
	case m.FilterBytes != props.FilterSize:
		t.Fatalf("table %s: %d filter bytes, properties %d", m.FileNum, m.FilterBytes, props.FilterSize)
	}
}

// checkBoundaries checks that the tables are in key order and that no user
// key has versions, or is covered by range tombstones, in two of them.
func checkBoundaries(t testing.TB, tables []*manifest.FileMetadata) {
	t.Helper()
	for i := 1; i < len(tables); i++ {
		if !tables[i-1].EndsBefore(bytes.Compare, tables[i].Smallest.UserKey) {
			t.Fatalf("tables %s and %s share or reverse user keys", tables[i-1], tables[i])
		}
	}
}

// TestRun runs testdata/run. Command:
//
//	run [target-file-size=N] [snapshots=(...)] [elide=(...)|elide=all]
//	    [grandparents=(a-b:SIZE,...)] [max-overlap=SIZE]
//	    [boundaries=(a-b,...)] [split-bytes=SIZE]
//	    [range-dels=(a-c#5,...)] [below=(a-b,...)] [zero]
//	<entries, as in testdata/compaction_iter>
//
// range-dels are the input's range tombstones; below, the key ranges the
// levels below the output hold (range tombstones that meet none may be
// elided; without below, none may); zero sets RunConfig.ZeroSeqNums. It
// prints each table written, read back with its range tombstones, and the
// stats.
func TestRun(t *testing.T) {
	datadriven.RunTest(t, "testdata/run", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "run" {
			return fmt.Sprintf("unknown command %q", d.Cmd)
		}
		out := newMemOutputs()
		cfg := RunConfig{NewOutput: out.newOutput}
		for _, arg := range d.CmdArgs {
			switch arg.Key {
			case "target-file-size":
				cfg.TargetFileSize = parseSize(t, arg.SingleVal(t))
			case "max-overlap":
				cfg.MaxGrandparentOverlap = parseSize(t, arg.SingleVal(t))
			case "range-dels":
				for _, v := range arg.Vals {
					cfg.RangeDels = append(cfg.RangeDels, parseRangeDel(t, v))
				}
			case "below":
				cfg.ElideRangeTombstone = elideBelow(arg.Vals)
			case "grandparents":
				for i, v := range arg.Vals {
					bounds, size, _ := strings.Cut(v, ":")
					f := parseFile(t, fmt.Sprintf("%d:%s size=%s", 100+i, bounds, size))
					cfg.Grandparents = append(cfg.Grandparents, f)
				}
			case "boundaries":
				for i, v := range arg.Vals {
					cfg.SplitBoundaries = append(cfg.SplitBoundaries, parseFile(t, fmt.Sprintf("%d:%s", 200+i, v)))
				}
			case "split-bytes":
				cfg.SplitBytes = parseSize(t, arg.SingleVal(t))
			case "zero":
				cfg.ZeroSeqNums = true
			}
		}
		d.CmdArgs = filterArgs(d.CmdArgs, "snapshots", "elide")
		cfg.Snapshots, cfg.ElideTombstone = parseIterArgs(t, d)
		input := itertest.ParseEntries(t, strings.Join(strings.Fields(d.Input), " "))
		tables, stats, err := Run(input, cfg)
		var b strings.Builder
		for _, m := range tables {
			fmt.Fprintf(&b, "%s: seqnums %d-%d, %d entries\n ", m, m.SmallestSeqNum, m.LargestSeqNum, m.NumEntries)
			for _, e := range out.readTable(t, m) {
				fmt.Fprintf(&b, " %s:%s", e.key, e.value)
			}
			for _, tb := range out.rangeDels(t, m) {
				fmt.Fprintf(&b, " %s", tb)
			}
			b.WriteString("\n")
		}
		checkBoundaries(t, tables)
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
		}
		fmt.Fprintf(&b, "in=%d out=%d shadowed=%d elided=%d tables=%d\n",
			stats.EntriesIn, stats.EntriesOut, stats.Shadowed, stats.TombstonesElided, stats.Tables)
		if cfg.ZeroSeqNums {
			fmt.Fprintf(&b, "zeroed=%d\n", stats.SeqNumsZeroed)
		}
		if len(cfg.RangeDels) > 0 {
			fmt.Fprintf(&b, "range-deleted=%d range-dels-out=%d range-dels-elided=%d\n",
				stats.RangeDeleted, stats.RangeDelsOut, stats.RangeDelsElided)
		}
		return b.String()
	})
}

// parseRangeDel parses "a-c#5" as the range tombstone [a, c)#5.
func parseRangeDel(t testing.TB, s string) sstable.RangeTombstone {
	span, seqStr, _ := strings.Cut(s, "#")
	start, end, ok := strings.Cut(span, "-")
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if !ok || err != nil {
		t.Fatalf("bad range tombstone %q", s)
	}
	return sstable.RangeTombstone{Start: []byte(start), End: []byte(end), Seq: base.SeqNum(seq)}
}

// elideBelow returns an ElideRangeTombstone for levels below that hold the
// inclusive key ranges "a-b".
func elideBelow(ranges []string) func(start, end []byte) bool {
	return func(start, end []byte) bool {
		for _, r := range ranges {
			lo, hi, _ := strings.Cut(r, "-")
			if bytes.Compare(start, []byte(hi)) <= 0 && bytes.Compare([]byte(lo), end) < 0 {
				return false
			}
		}
		return true
	}
}

func filterArgs(args []datadriven.CmdArg, keep ...string) []datadriven.CmdArg {
	var out []datadriven.CmdArg
	for _, a := range args {
		for _, k := range keep {
			if a.Key == k {
				out = append(out, a)
			}
		}
	}
	return out
}

// TestRun_Filters checks that every table gets a filter per block and that
// lookups of absent keys are answered by it.
func TestRun_Filters(t *testing.T) {
	policy, err := bloompolicy.New(0.01)
	if err != nil {
		t.Fatal(err)
	}
	var keys []base.InternalKey
	var vals [][]byte
	for i := range 2000 {
		keys = append(keys, base.MakeInternalKey([]byte(fmt.Sprintf("key%05d", 2*i)), base.SeqNum(i+1), base.KindSet))
		vals = append(vals, bytes.Repeat([]byte{'v'}, 50))
	}
	out := newMemOutputs()
	tables, _, err := Run(itertest.NewSliceIter(bytes.Compare, keys, vals), RunConfig{
		NewOutput:      out.newOutput,
		Writer:         sstable.WriterOptions{FilterPolicy: policy, BlockSize: 1024, Compression: sstable.NoCompression},
		TargetFileSize: 32 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 3 {
		t.Fatalf("%d tables, want several at a 32 KiB target", len(tables))
	}
	var stats sstable.LookupStats
	for _, m := range tables {
		if m.FilterBytes == 0 {
			t.Fatalf("table %s has no filter", m)
		}
		r := out.open(t, m.FileNum, policy)
		if r.Properties().FilterPolicyName != policy.Name() {
			t.Fatalf("table %s: filter policy %q", m, r.Properties().FilterPolicyName)
		}
		lo, hi := m.Smallest.UserKey, m.Largest.UserKey
		for i := range 4000 {
			k := []byte(fmt.Sprintf("key%05d", i))
			if bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) > 0 {
				continue
			}
			_, _, found, err := r.Get(k, base.SeqNumMax, &stats)
			if err != nil || found != (i%2 == 0) {
				t.Fatalf("Get(%s) in %s: found=%t err=%v", k, m, found, err)
			}
		}
		r.Close()
	}
	if stats.FilterNegatives < 1500 {
		t.Fatalf("filters rejected %d of 2000 absent keys", stats.FilterNegatives)
	}
}

// TestRun_SplitOnUserKeys checks that cutting at the target size never
// separates the versions of a key, even one with many versions kept for
// snapshots.
func TestRun_SplitOnUserKeys(t *testing.T) {
	var keys []base.InternalKey
	var vals [][]byte
	var snapshots []base.SeqNum
	seq := base.SeqNum(1 << 20)
	for i := range 40 {
		n := 1
		if i%10 == 3 {
			n = 50 // a hot key with a version kept for each snapshot
		}
		for v := range n {
			keys = append(keys, base.MakeInternalKey([]byte(fmt.Sprintf("k%03d", i)), seq, base.KindSet))
			vals = append(vals, bytes.Repeat([]byte{byte('a' + v%26)}, 300))
			if n > 1 {
				snapshots = append(snapshots, seq)
			}
			seq--
		}
	}
	for i, j := 0, len(snapshots)-1; i < j; i, j = i+1, j-1 {
		snapshots[i], snapshots[j] = snapshots[j], snapshots[i]
	}
	out := newMemOutputs()
	const target = 4 << 10
	tables, stats, err := Run(itertest.NewSliceIter(bytes.Compare, keys, vals), RunConfig{
		NewOutput: out.newOutput, Snapshots: snapshots, TargetFileSize: target,
		Writer: sstable.WriterOptions{Compression: sstable.NoCompression},
	})
	if err != nil {
		t.Fatal(err)
	}
	if stats.EntriesOut != int64(len(keys)) {
		t.Fatalf("wrote %d of %d entries, all visible to a snapshot", stats.EntriesOut, len(keys))
	}
	checkBoundaries(t, tables)
	var total int
	for i, m := range tables {
		total += len(out.readTable(t, m))
		if i < len(tables)-1 && m.Size < target {
			t.Fatalf("table %s of %d bytes cut below the %d target", m, m.Size, target)
		}
	}
	if total != len(keys) || stats.Tables != len(tables) {
		t.Fatalf("read %d entries from %d tables, want %d from %d", total, len(tables), len(keys), stats.Tables)
	}
}

// TestRun_Errors checks that failures of the input, of NewOutput and of the
// configuration come back as errors.
func TestRun_Errors(t *testing.T) {
	input := func() *itertest.SliceIter {
		return itertest.ParseEntries(t, "a#3,SET:a b#2,SET:b !err c#1,SET:c")
	}
	out := newMemOutputs()
	tables, _, err := Run(input(), RunConfig{NewOutput: out.newOutput, TargetFileSize: 1})
	if !errors.Is(err, itertest.ErrInjected) || !strings.HasPrefix(err.Error(), "compaction: ") {
		t.Fatalf("input error: got %v", err)
	}
	// a's table is finished; b's versions were never all read.
	if len(tables) != 1 || len(out.readTable(t, tables[0])) != 1 {
		t.Fatalf("input error: %d finished tables returned, want 1", len(tables))
	}

	errNoSpace := errors.New("no space")
	_, _, err = Run(input(), RunConfig{NewOutput: func() (base.FileNum, vfs.File, error) { return 0, nil, errNoSpace }})
	if !errors.Is(err, errNoSpace) {
		t.Fatalf("output error: got %v", err)
	}

	_, _, err = Run(input(), RunConfig{NewOutput: out.newOutput, Snapshots: []base.SeqNum{5, 3}})
	if err == nil {
		t.Fatal("snapshots out of order accepted")
	}
	if _, _, err = Run(input(), RunConfig{}); err == nil {
		t.Fatal("nil NewOutput accepted")
	}

	// Input out of order is refused by the table writer.
	bad := itertest.NewSliceIter(bytes.Compare, []base.InternalKey{
		base.MakeInternalKey([]byte("b"), 1, base.KindSet), base.MakeInternalKey([]byte("a"), 2, base.KindSet),
	}, [][]byte{nil, nil})
	if _, _, err = Run(bad, RunConfig{NewOutput: out.newOutput}); err == nil {
		t.Fatal("unordered input accepted")
	}
}

// BenchmarkRun measures compacting four overlapping inputs of 25,000
// entries each, half of them shadowed, into 2 MiB tables in memory.
func BenchmarkRun(b *testing.B) {
	const perChild, children = 25_000, 4
	keys := make([][]base.InternalKey, children)
	vals := make([][][]byte, children)
	var inBytes int64
	for c := range children {
		for i := range perChild {
			k := base.MakeInternalKey([]byte(fmt.Sprintf("key%08d", (i*children+c)/2)), base.SeqNum(i*children+c+1), base.KindSet)
			keys[c] = append(keys[c], k)
			vals[c] = append(vals[c], bytes.Repeat([]byte{'v'}, 64))
			inBytes += int64(k.Size() + 64)
		}
	}
	b.SetBytes(inBytes)
	b.ResetTimer()
	for range b.N {
		iters := make([]base.InternalIterator, children)
		for c := range iters {
			iters[c] = itertest.NewSliceIter(bytes.Compare, keys[c], vals[c])
		}
		out := newMemOutputs()
		_, stats, err := Run(NewMergingIter(bytes.Compare, iters...), RunConfig{NewOutput: out.newOutput, TargetFileSize: 2 << 20})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(stats.EntriesOut)/float64(stats.EntriesIn), "kept/entry")
	}
}

// TestRun_CallbackPanic checks that a comparer function that panics during
// Run comes back as an error wrapping ErrCallbackPanic, with the panic's
// value, and that the table being written is abandoned.
func TestRun_CallbackPanic(t *testing.T) {
	cases := map[string]func(c *base.Comparer){
		"Split": func(c *base.Comparer) {
			// Only on b/1, so that NewWriter's CheckSplit passes.
			c.Split = func(k []byte) int {
				if string(k) == "b/1" {
					panic("split " + string(k))
				}
				return itertest.SlashSplit(k)
			}
		},
		"Separator": func(c *base.Comparer) { c.Separator = func(dst, a, b []byte) []byte { panic("separator") } },
		"Successor": func(c *base.Comparer) { c.Successor = func(dst, a []byte) []byte { panic("successor") } },
	}
	ran := 0
	for name, spoil := range cases {
		c := itertest.SlashComparer()
		spoil(c)
		input := itertest.ParseEntries(t, "a/1#3,SET:a b/1#2,SET:b c/1#1,SET:c")
		out := newMemOutputs()
		_, _, err := Run(input, RunConfig{NewOutput: out.newOutput, Comparer: c,
			Writer: sstable.WriterOptions{Comparer: c, BlockSize: 1}})
		if !errors.Is(err, ErrCallbackPanic) || !strings.Contains(err.Error(), strings.ToLower(name)) {
			t.Errorf("%s panics: Run = %v, want ErrCallbackPanic naming the panic", name, err)
		}
		ran++
	}
	if ran != len(cases) {
		t.Fatalf("%d of %d cases ran", ran, len(cases))
	}
}

// TestRun_EmptyKeyFromStableInput runs a stable input whose first user
// key is the empty key, as a memtable yields it (a nil slice), under a
// range tombstone, with a table cut after every key: the tombstone is cut
// with the tables, and no table overlaps the next. The runner takes a nil
// key for "no key", so the compaction iterator must never yield one.
func TestRun_EmptyKeyFromStableInput(t *testing.T) {
	keys := []base.InternalKey{
		base.MakeInternalKey(nil, 4, base.KindSet),
		base.MakeInternalKey([]byte("b"), 5, base.KindSet),
		base.MakeInternalKey([]byte("d"), 6, base.KindSet),
	}
	vals := [][]byte{[]byte("v"), []byte("v"), []byte("v")}
	for _, stable := range []bool{false, true} {
		out := newMemOutputs()
		tables, _, err := Run(itertest.NewSliceIter(bytes.Compare, keys, vals), RunConfig{
			NewOutput:      out.newOutput,
			RangeDels:      []sstable.RangeTombstone{{Start: []byte("a"), End: []byte("z"), Seq: 3}},
			TargetFileSize: 1,
			StableInput:    stable,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(tables) != 3 {
			t.Fatalf("stable=%v: %d tables, want one per key", stable, len(tables))
		}
		checkBoundaries(t, tables)
	}
}
