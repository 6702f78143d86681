package kv_test

import (
	"flag"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// BenchmarkWriteAmpFill fills a fresh store with -writeampkeys random keys
// (2M by default) in NoSync batches of -writeampbatch (100), on the
// engines and options of bench_test.go, each engine on its own
// byte-counting vfs.FS, the engines alternated over -writeamprounds
// rounds (2). One operation is one whole fill; run it with -benchtime=1x
// and -v.
//
// Reported per engine and round: the fill's time (the writes only, not
// the settling after), write-amp as the FS counted it (bytes written to
// every file / bytes written to WALs) and as the engine counts it, the
// bytes written per kind of file (WAL, tables, MANIFEST), and L0's depth
// sampled after every tenth batch during the fill (bloomkv: the most L0
// tables holding one key, Metrics.Compact.L0ReadAmp; Pebble: its L0
// sublevels), mean and max. With -fillmetrics each engine's per-level
// metrics follow.
//
// -writeampmemtable sets both engines' memtable size; -writeampdefaults
// opens each engine with its own default options instead of the shared
// ones; -writeampsplit sets bloomkv's FlushSplitBytes, to compare flush
// shapes; -writeampseq writes the keys in ascending order. With
// -writeamptrace each engine's compactions follow, summed by start and
// output level (how many, the bytes they read and wrote, and the L0
// tables the L0 compactions took), then one by one in order: when each
// started (seconds since the store opened) and how long it took, the
// flushed L0 tables it took and their bytes, the other input bytes, and
// the bytes written, with a line where the fill ended and the settling
// began. Write amplification is a count of bytes, so it can be measured
// on a loaded machine; the fill times cannot.
func BenchmarkWriteAmpFill(b *testing.B) {
	for round := 1; round <= *writeAmpRounds; round++ {
		for _, eng := range benchEngines {
			b.Run(fmt.Sprintf("keys=%d/round=%d/engine=%s", *writeAmpKeys, round, eng.name), func(b *testing.B) {
				b.SetBytes(int64(*writeAmpKeys) * benchEntryBytes)
				for i := 0; i < b.N; i++ {
					writeAmpFill(b, eng.open, eng.name)
				}
			})
		}
	}
}

var (
	writeAmpKeys     = flag.Int("writeampkeys", 2_000_000, "BenchmarkWriteAmpFill: keys to write")
	writeAmpBatch    = flag.Int("writeampbatch", 100, "BenchmarkWriteAmpFill: keys per batch")
	writeAmpRounds   = flag.Int("writeamprounds", 2, "BenchmarkWriteAmpFill: rounds, engines alternated")
	writeAmpMemTable = flag.Int64("writeampmemtable", 0, "BenchmarkWriteAmpFill: memtable size of both engines in bytes (0: the options' own)")
	writeAmpSplit    = flag.Int64("writeampsplit", 0, "BenchmarkWriteAmpFill: bloomkv's FlushSplitBytes (0: its default)")
	writeAmpTrace    = flag.Bool("writeamptrace", false, "BenchmarkWriteAmpFill: log each engine's compactions, summed by start and output level")
	writeAmpSeq      = flag.Bool("writeampseq", false, "BenchmarkWriteAmpFill: write the keys in ascending order instead of at random")
	writeAmpDefaults = flag.Bool("writeampdefaults", false, "BenchmarkWriteAmpFill: open each engine with its own default options (and the byte-counting FS) instead of the benchmarks' shared ones")
)

// writeAmpFill runs one fill on a fresh store opened by open on a
// byte-counting FS, and reports what it wrote.
func writeAmpFill(b *testing.B, open func(*testing.B, string, bool) bench.Engine, name string) {
	b.StopTimer()
	fs := &byteCountingFS{FS: vfs.Default}
	trace := &compactionTrace{start: time.Now()}
	e := openOnFS(b, open, name, fs, trace)
	n, batch := *writeAmpKeys, *writeAmpBatch
	var depthSum, depthMax, samples int
	start := time.Now()
	b.StartTimer()
	for lo, k := 0, 0; lo < n; lo, k = lo+batch, k+1 {
		if err := applyBatch(e, lo, min(lo+batch, n), !*writeAmpSeq, false); err != nil {
			b.Fatal(err)
		}
		if k%10 == 0 {
			d := l0Depth(e)
			depthSum, depthMax, samples = depthSum+d, max(depthMax, d), samples+1
		}
	}
	b.StopTimer()
	elapsed := time.Since(start)
	trace.fillEnded()
	if err := e.Flush(); err != nil {
		b.Fatal(err)
	}
	if !settle(b, e, 30*time.Minute) {
		b.Logf("%s: background work still running after 30 minutes", name)
	}
	wal, table, manifest, other := fs.bytes()
	fsAmp := float64(wal+table+manifest+other) / float64(wal)
	meanDepth := float64(depthSum) / float64(samples)
	b.Logf("%s: %d keys in batches of %d in %v; write-amp %.3f (FS) %.3f (engine); MB written: WAL %.1f, tables %.1f, MANIFEST %.2f, other %.2f; L0 depth mean %.2f max %d over %d samples; tables per level %s",
		name, n, batch, elapsed.Round(time.Millisecond), fsAmp, e.Stats().WriteAmp,
		float64(wal)/1e6, float64(table)/1e6, float64(manifest)/1e6, float64(other)/1e6,
		meanDepth, depthMax, samples, bench.FormatShape(e.Shape()))
	if *fillMetrics {
		b.Logf("%s settled metrics:\n%s", name, engineMetrics(e))
	}
	if *writeAmpTrace {
		b.Logf("%s compactions:\n%s", name, trace)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "keys/s")
	b.ReportMetric(fsAmp, "write-amp")
	b.ReportMetric(float64(table)/1e6, "table-MB")
	b.ReportMetric(meanDepth, "l0-mean")
	b.ReportMetric(float64(depthMax), "l0-max")
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
}

// openOnFS opens a fresh store of the named engine with the benchmarks'
// options on fs, its compactions reported to trace.
func openOnFS(b *testing.B, open func(*testing.B, string, bool) bench.Engine, name string, fs vfs.FS,
	trace *compactionTrace) bench.Engine {
	dir := b.TempDir()
	switch name {
	case bench.EngineKV:
		opts := bloomkvBenchOptions(b, true)
		if *writeAmpDefaults {
			opts = &kv.Options{}
		}
		opts.FS = fs
		if *writeAmpMemTable > 0 {
			opts.MemTableSize = *writeAmpMemTable
		}
		opts.FlushSplitBytes = *writeAmpSplit
		opts.EventListener = &kv.EventListener{CompactionEnd: trace.addKV, FlushEnd: trace.addKVFlush}
		return openBloomkvWith(b, dir, opts)
	case bench.EnginePebble:
		opts := pebbleBenchOptions(true)
		if *writeAmpDefaults {
			opts = &pebble.Options{}
		}
		opts.FS = fs
		if *writeAmpMemTable > 0 {
			opts.MemTableSize = uint64(*writeAmpMemTable)
		}
		opts.EventListener = &pebble.EventListener{CompactionEnd: trace.addPebble}
		return openPebbleWith(b, dir, opts)
	}
	return open(b, dir, true)
}

// l0Depth returns the L0 tables a lookup may consult at worst: bloomkv's
// L0 read amplification, Pebble's L0 sublevels.
func l0Depth(e bench.Engine) int {
	switch e := e.(type) {
	case *bench.KV:
		return e.DB.Metrics().Compact.L0ReadAmp
	case *bench.Pebble:
		return int(e.DB.Metrics().Levels[0].Sublevels)
	}
	return 0
}

// byteCountingFS counts the bytes written to the files it creates, by
// kind of file (from the name: .log WALs, .sst tables, MANIFEST-).
type byteCountingFS struct {
	vfs.FS
	wal, table, manifest, other atomic.Int64
}

func (fs *byteCountingFS) counter(name string) *atomic.Int64 {
	base := fs.PathBase(name)
	switch {
	case strings.HasSuffix(base, ".log"):
		return &fs.wal
	case strings.HasSuffix(base, ".sst"):
		return &fs.table
	case strings.HasPrefix(base, "MANIFEST"):
		return &fs.manifest
	}
	return &fs.other
}

func (fs *byteCountingFS) bytes() (wal, table, manifest, other int64) {
	return fs.wal.Load(), fs.table.Load(), fs.manifest.Load(), fs.other.Load()
}

func (fs *byteCountingFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &countedFile{File: f, n: fs.counter(name)}, nil
}

func (fs *byteCountingFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	if err != nil {
		return nil, err
	}
	return &countedFile{File: f, n: fs.counter(newname)}, nil
}

func (fs *byteCountingFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, opts...)
	if err != nil {
		return nil, err
	}
	return &countedFile{File: f, n: fs.counter(name)}, nil
}

// countedFile adds the bytes written through it to n.
type countedFile struct {
	vfs.File
	n *atomic.Int64
}

func (f *countedFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.n.Add(int64(n))
	return n, err
}

func (f *countedFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

// compactionTrace sums an engine's finished compactions by start and
// output level.
type compactionTrace struct {
	mu    sync.Mutex
	sums  map[[2]int]*compactionSum
	l0    map[uint64]bool // bloomkv: the tables flushes wrote
	steps []string        // each compaction, in order
	start time.Time       // when the store opened
	fill  time.Duration   // when the fill ended (0: not yet)
	// marked is set once the steps hold the fill's end.
	marked bool
}

// compactionSum is what the compactions from one level into another did.
type compactionSum struct {
	count, l0Tables int
	in, out         int64
}

func (t *compactionTrace) add(start, output, l0Tables int, l0Bytes, in, out int64, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := time.Since(t.start) - took
	if t.fill > 0 && at > t.fill && !t.marked {
		t.steps = append(t.steps, fmt.Sprintf("-- fill ended at %.2fs", t.fill.Seconds()))
		t.marked = true
	}
	step := fmt.Sprintf("%6.2fs %5.2fs L%d->L%d %.1f MB -> %.1f MB", at.Seconds(), took.Seconds(),
		start, output, float64(in)/1e6, float64(out)/1e6)
	if start == 0 {
		step = fmt.Sprintf("%6.2fs %5.2fs L0->L%d %d tables %.1f MB + %.1f MB -> %.1f MB", at.Seconds(), took.Seconds(),
			output, l0Tables, float64(l0Bytes)/1e6, float64(in-l0Bytes)/1e6, float64(out)/1e6)
	}
	t.steps = append(t.steps, step)
	if t.sums == nil {
		t.sums = make(map[[2]int]*compactionSum)
	}
	s := t.sums[[2]int{start, output}]
	if s == nil {
		s = &compactionSum{}
		t.sums[[2]int{start, output}] = s
	}
	s.count++
	s.l0Tables += l0Tables
	s.in += in
	s.out += out
}

// fillEnded marks the end of the fill: compactions starting later are
// the settling's.
func (t *compactionTrace) fillEnded() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fill = time.Since(t.start)
}

func (t *compactionTrace) addKVFlush(info kv.FlushInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.l0 == nil {
		t.l0 = make(map[uint64]bool)
	}
	for _, f := range info.Output {
		t.l0[f.FileNum] = true
	}
}

func (t *compactionTrace) addKV(info kv.CompactionInfo) {
	if info.Err != nil {
		return
	}
	l0Tables, l0Bytes := 0, int64(0)
	if info.StartLevel == 0 {
		t.mu.Lock()
		for _, f := range info.Input {
			if t.l0[f.FileNum] {
				l0Tables++
				l0Bytes += int64(f.Size)
			}
		}
		t.mu.Unlock()
	}
	t.add(info.StartLevel, info.OutputLevel, l0Tables, l0Bytes, info.InputBytes, info.OutputBytes, info.Duration)
}

func (t *compactionTrace) addPebble(info pebble.CompactionInfo) {
	if info.Err != nil || len(info.Input) == 0 {
		return
	}
	var in, out, l0Bytes int64
	l0Tables := 0
	for _, l := range info.Input {
		for _, f := range l.Tables {
			in += int64(f.Size)
			if l.Level == 0 {
				l0Bytes += int64(f.Size)
			}
		}
		if l.Level == 0 {
			l0Tables += len(l.Tables)
		}
	}
	for _, f := range info.Output.Tables {
		out += int64(f.Size)
	}
	t.add(info.Input[0].Level, info.Output.Level, l0Tables, l0Bytes, in, out, info.Duration)
}

// String lists the sums, one line per start and output level.
func (t *compactionTrace) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([][2]int, 0, len(t.sums))
	for k := range t.sums {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	var sb strings.Builder
	for _, k := range keys {
		s := t.sums[k]
		fmt.Fprintf(&sb, "    L%d->L%d: %d compactions, %.1f MB read, %.1f MB written", k[0], k[1], s.count, float64(s.in)/1e6, float64(s.out)/1e6)
		if s.l0Tables > 0 {
			fmt.Fprintf(&sb, ", %.1f L0 tables each", float64(s.l0Tables)/float64(s.count))
		}
		sb.WriteString("\n")
	}
	for _, step := range t.steps {
		fmt.Fprintf(&sb, "      %s\n", step)
	}
	return sb.String()
}
