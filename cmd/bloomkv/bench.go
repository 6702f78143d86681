package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// benchOptions are the flags of bench.
type benchOptions struct {
	keys, valueSize, lookups int
	fpr                      float64
	cache                    byteSize
	memtable, tableSize      byteSize
	l1Size                   byteSize
	dir                      string
	keep, pebble, growth     bool
	prefix                   bool
	filterMemory             bool
	zipfRankings             int     // of the filter-memory study's Zipf mix
	filterCapBits            float64 // with growth: the cap growth (bench_capgrowth.go)
	growthFrom               int
	rounds                   int // of the write-modes section; 0 skips it
	writersList              string
	writers                  []int // --writers, parsed by check
	plot                     string
	markdown                 string
	seed                     uint64
	command                  string // the command line, for --markdown
	// set holds the names of the flags given on the command line.
	set map[string]bool
}

// The sizes of the bench's stores, in both engines. They are smaller than
// kv's defaults so that the default key count (about 60 MiB of tables)
// settles into L0 and three levels below it, as a store of gigabytes does
// with the defaults, and the default run stays within about two minutes.
const (
	benchMemTableSize   = 1 << 20
	benchTableSize      = 1 << 20
	benchL1Size         = 4 << 20
	benchCacheSize      = 8 << 20
	benchDefaultKeys    = 500_000
	benchDefaultLookups = 50_000
)

// withPebbleFilter returns the configuration change that puts policy on every
// level.
func withPebbleFilter(policy pebble.FilterPolicy) func(*pebble.Options) {
	return func(o *pebble.Options) { bench.WithPebbleFilter(o, policy) }
}

func (a *app) benchCommand() *cobra.Command {
	o := benchOptions{cache: benchCacheSize, memtable: benchMemTableSize,
		tableSize: benchTableSize, l1Size: benchL1Size}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure point lookups with and without filters (and against Pebble)",
		Long: "bench loads the same keys into bloomkv stores without filters, with " +
			"bloompolicy.New(--fpr), with the same bits per key divided among the levels " +
			"(kv.Options.FilterBudget) and with Pebble's bloom at the same bits per key, and " +
			"measures absent and present point lookups in three shapes of the LSM: settled " +
			"(as the load and background compactions leave it), write-heavy (lookups " +
			"between the batches of a continuing load) and compacted. It reports time, " +
			"tables considered, filter negatives, false positives, block reads and reads " +
			"saved per lookup, in total and per level. --pebble adds Pebble itself with " +
			"both filters; --growth measures the settled shape after each doubling of the " +
			"store too. Last, the write modes: one-Set NoSync and Sync fills of empty stores " +
			"in bloomkv's two WAL modes (and Pebble's with --pebble), each mode's promise " +
			"after a crash of the process beside its ns per Set; --writers runs them alone, " +
			"from several writers at once.",
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.command = commandLine(cmd)
			o.set = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
			return a.runBench(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.keys, "keys", benchDefaultKeys, "keys loaded into each store before the write-heavy shape adds a quarter more")
	f.IntVar(&o.valueSize, "value-size", 100, "bytes per value")
	f.IntVar(&o.lookups, "lookups", benchDefaultLookups, "absent lookups, and as many present lookups, per shape and store")
	f.Float64Var(&o.fpr, "fpr", 0.01, "target false-positive rate of bloompolicy.New")
	f.Var(&o.cache, "cache", "block cache size (e.g. 8MiB, 512KiB, 1048576)")
	f.Var(&o.memtable, "memtable", "memtable size of every store")
	f.Var(&o.tableSize, "table-size", "size at which compactions cut tables")
	f.Var(&o.l1Size, "l1-size", "most bytes of the base level, the level L0 compacts into, in both engines (kv.Options.LBaseMaxBytes, pebble.Options.LBaseMaxBytes): levels are sized from the bottom up, each a tenth of the one below, and the base level is the highest whose target stays within this size; it is L1 only once the store is large enough")
	f.StringVar(&o.dir, "dir", "", "directory for the stores (default: a new temporary directory)")
	f.BoolVar(&o.keep, "keep", false, "keep the stores after the run")
	f.BoolVar(&o.pebble, "pebble", false, "also run Pebble v1.1.5 with both filters")
	f.BoolVar(&o.growth, "growth", false, "load in doubling steps up to --keys and measure the settled shape after each")
	f.BoolVar(&o.filterMemory, "filter-memory", false, "run the filter-memory study instead: wasted data-block reads per lookup against filter bits per key (2-16) for uniform filters, no bottom-level filters, Monkey's budget and the traffic-aware cap, on all-absent, 90% present and Zipfian lookups, on in-memory stores of its own (so not with --dir, --keep, --pebble, --growth, --rounds, --fpr or the size flags)")
	f.IntVar(&o.zipfRankings, "zipf-rankings", 8, "with --filter-memory: the Zipf mix's figure is the mean over this many independent rankings of the keys (which keys are hot decides much of one store's figure); each strategy is measured on the same rankings, the traffic-aware store opened and warmed up anew on each")
	f.Float64Var(&o.filterCapBits, "filter-cap-bits", 0, "with --growth: grow one store instead, under a filter cap (FilterBudget{Bytes}) of this many bits per key of --keys, sampling the filter bytes held all along (they must never exceed the cap) and measuring wasted reads per absent lookup after each doubling from --growth-from")
	f.IntVar(&o.growthFrom, "growth-from", 1_000_000, "with --growth --filter-cap-bits: the first size measured (capped at --keys)")
	f.BoolVar(&o.prefix, "prefix", false, "run the prefix-scan workload instead: --keys as user/<id>/<field> keys, --lookups prefix seeks of absent and of present users (not with --filter-memory, --growth or --rounds)")
	f.StringVar(&o.plot, "plot", "", "write a plot to `FILE` (.svg or .png); not with --prefix, --writers or --filter-cap-bits, which draw none")
	f.StringVar(&o.markdown, "markdown", "", "also write the report as a Markdown page to `FILE`, with the command line, machine, Go version and date (docs/results.md is one)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of keys, values and lookup order")
	f.StringVar(&o.writersList, "writers", "", "run the writers study instead: the write modes' fills (see --rounds) from each of these comma-separated counts of writers at once (e.g. 1,4,16), their scaling and their ratios to Pebble's (with --pebble); memtables of --memtable, which should hold a whole fill for the commit path alone to be measured")
	f.IntVar(&o.rounds, "rounds", 2, "rounds of the write-modes section (--keys one-Set NoSync writes and a 500th as many Sync ones, at least 1000, into empty stores of bloomkv's two WAL modes, and Pebble's with --pebble, the modes taking turns; the best round counts); 0 skips it")
	return cmd
}

// maxBenchValueSize is the largest --value-size: the loads write NoSync
// batches of bench.LoadBatch writes, each its key and value and at most
// 16 bytes of lengths and kind, and a batch must fit kv.MaxBatchSize.
const maxBenchValueSize = kv.MaxBatchSize/bench.LoadBatch - bench.KeySize - 16

func (o *benchOptions) check() error {
	switch {
	case o.keys <= 0:
		return usagef("--keys %d: want at least 1", o.keys)
	case o.valueSize < 0:
		return usagef("--value-size %d: want 0 or more", o.valueSize)
	case o.valueSize > maxBenchValueSize:
		return usagef("--value-size %d: over %d, the most a load batch of %d writes holds within kv.MaxBatchSize", o.valueSize, maxBenchValueSize, bench.LoadBatch)
	case o.lookups <= 0:
		return usagef("--lookups %d: want at least 1", o.lookups)
	case o.cache <= 0:
		return usagef("--cache %d: want a positive size", o.cache)
	case o.tableSize <= 0:
		return usagef("--table-size %d: want a positive size", o.tableSize)
	case o.l1Size <= 0:
		return usagef("--l1-size %d: want a positive size", o.l1Size)
	case o.rounds < 0:
		return usagef("--rounds %d: want 0 or more", o.rounds)
	case o.filterMemory && o.zipfRankings <= 0:
		return usagef("--zipf-rankings %d: want at least 1", o.zipfRankings)
	}
	if err := checkMemTable(int64(o.memtable)); err != nil {
		return err
	}
	if err := o.checkWriters(); err != nil {
		return err
	}
	if err := o.checkRunsAlone(); err != nil {
		return err
	}
	switch {
	case o.filterCapBits < 0:
		return usagef("--filter-cap-bits %v: want a positive cap", o.filterCapBits)
	case o.filterCapBits > 0 && !o.growth:
		return usagef("--filter-cap-bits: only with --growth")
	case o.filterCapBits > 0 && o.growthFrom <= 0:
		return usagef("--growth-from %d: want at least 1", o.growthFrom)
	case o.plot != "" && o.prefix:
		return usagef("--plot: --prefix draws no plot")
	case o.plot != "" && o.filterCapBits > 0 && !o.filterMemory:
		return usagef("--plot: --filter-cap-bits draws no plot")
	}
	if err := checkFPR(o.fpr); err != nil {
		return err
	}
	if o.plot != "" {
		if err := checkPlotPath(o.plot); err != nil {
			return err
		}
		if err := checkOutputDir("--plot", o.plot); err != nil {
			return err
		}
	}
	return o.checkMarkdown()
}

// checkMemTable checks a --memtable size against kv's limits.
func checkMemTable(m int64) error {
	if m < kv.MinMemTableSize || m > kv.MaxMemTableSize {
		return usagef("--memtable %s: want a size in [%s, %s]", fmtBytes(m),
			fmtBytes(kv.MinMemTableSize), fmtBytes(kv.MaxMemTableSize))
	}
	return nil
}

// checkWriters parses --writers, which runs alone, with at least one
// round.
func (o *benchOptions) checkWriters() (err error) {
	if o.writersList == "" {
		return nil
	}
	switch {
	case o.prefix || o.filterMemory || o.growth:
		return usagef("--writers runs alone: not with --prefix, --filter-memory or --growth")
	case o.plot != "":
		return usagef("--writers draws no plot")
	case o.rounds < 1:
		return usagef("--writers: --rounds %d, want at least 1", o.rounds)
	}
	o.writers, err = parseWriters(o.writersList)
	return err
}

// checkRunsAlone refuses the flags that --prefix and --filter-memory
// would ignore: each runs instead of the point-lookup bench, --prefix
// without its growth steps and write modes, and --filter-memory on stores
// of its own, in memory, at sizes and filters of its own.
func (o *benchOptions) checkRunsAlone() error {
	var run string
	var ignored []string
	switch {
	case o.prefix:
		run, ignored = "--prefix", []string{"filter-memory", "growth", "rounds"}
	case o.filterMemory:
		run, ignored = "--filter-memory", []string{"growth", "dir", "keep", "pebble", "memtable", "cache",
			"table-size", "l1-size", "fpr", "rounds"}
	}
	for _, name := range ignored {
		if o.set[name] {
			return usagef("--%s: %s runs alone and takes no --%s", name, run, name)
		}
	}
	return nil
}

// checkMarkdown checks --markdown before the run rather than after it: a
// page of the point-lookup bench, into a directory that exists.
func (o *benchOptions) checkMarkdown() error {
	switch {
	case o.markdown == "":
		return nil
	case o.prefix:
		return usagef("--markdown: the page is of the point-lookup bench, not --prefix")
	}
	return checkOutputDir("--markdown", o.markdown)
}

// checkOutputDir checks, before a run rather than after it, that path,
// the file an output flag names, can be written: its directory exists and
// path itself is no directory.
func checkOutputDir(flag, path string) error {
	if _, err := vfs.Default.Stat(filepath.Dir(path)); err != nil {
		return usagef("%s %s: %v", flag, path, err)
	}
	if st, err := vfs.Default.Stat(path); err == nil && st.IsDir() {
		return usagef("%s %s: is a directory, want a file name", flag, path)
	}
	return nil
}

// The engines bench runs, and the filter name of a store without filters.
const (
	engineKV     = bench.EngineKV
	enginePebble = bench.EnginePebble
	filterNone   = "none"
)

// benchConfig is one engine and filter under test: a row of the results.
// A bloomkv configuration changes the bench's kv.Options through kv, a
// Pebble one the bench's pebble.Options through pebble; everything else
// (sizes, cache, the workload) is the same for all.
type benchConfig struct {
	id      string  // directory name
	name    string  // shown in the table
	filter  string  // the policy's name, or filterNone; rows of both engines with the same filter are compared
	nominal float64 // bits per key the policy builds with; NaN without one
	kv      func(*kv.Options)
	pebble  func(*pebble.Options)
}

// engine names the engine the configuration runs.
func (c benchConfig) engine() string {
	if c.pebble != nil {
		return enginePebble
	}
	return engineKV
}

// sizes are the sizes both engines get.
func (o benchOptions) sizes() bench.Sizes {
	return bench.Sizes{MemTable: int64(o.memtable), Table: int64(o.tableSize),
		LBase: int64(o.l1Size), Cache: int64(o.cache)}
}

// open opens the configuration's store in dir: the harness's options for
// the bench's sizes, then the configuration's changes. Pebble answers
// lookups through SeekPrefixGE, which reads L6 filters too
// (bench.PebbleSeekPrefix). bloomkv keeps the L0 tables it holds between
// L0 compactions once writes stop, as Pebble does: the settled shape is
// that of a store taking writes.
func (c benchConfig) open(dir string, o benchOptions) (bench.Engine, error) {
	if c.pebble != nil {
		opts := o.sizes().PebbleOptions()
		c.pebble(opts)
		return bench.OpenPebble(dir, opts, bench.PebbleSeekPrefix)
	}
	opts := o.sizes().KVOptions()
	opts.DisableL0Settling = true
	if c.kv != nil {
		c.kv(opts)
	}
	return bench.OpenKV(dir, opts)
}

// benchConfigs returns the configurations to run: bloomkv without filters,
// with ours, with ours sized per level for the same bits per key
// (kv.Options.FilterBudget), and with Pebble's bloom at the nearest whole
// bits per key, then Pebble with ours and Pebble's when asked. A new
// configuration is one more entry.
func benchConfigs(o benchOptions, ours *bloompolicy.Bloom) []benchConfig {
	bits := ours.BitsPerKey()
	whole := pebbleBits(bits)
	theirs := bloom.FilterPolicy(whole)
	oursName := fmt.Sprintf("bloompolicy %s", fmtPercent(o.fpr, 2))
	theirsName := fmt.Sprintf("pebble bloom %d", whole)
	budget := bloompolicy.Budget{BitsPerKey: bits}
	cfgs := []benchConfig{
		{id: "bloomkv-nofilter", name: "bloomkv, no filter", filter: filterNone, nominal: math.NaN(),
			kv: func(k *kv.Options) { k.DisableFilters = true }},
		{id: "bloomkv-bloompolicy", name: "bloomkv, " + oursName, filter: ours.Name(), nominal: bits,
			kv: func(k *kv.Options) { k.FilterPolicy = ours }},
		// The same encoding as ours, so a filter label of its own keeps it
		// out of the pairing with Pebble's row of ours.
		{id: "bloomkv-budget", name: fmt.Sprintf("bloomkv, per-level budget %.2f bits", bits),
			filter: ours.Name() + " per level", nominal: bits,
			kv: func(k *kv.Options) { k.FilterBudget = &budget }},
		{id: "bloomkv-pebblebloom", name: "bloomkv, " + theirsName, filter: theirs.Name(), nominal: float64(whole),
			kv: func(k *kv.Options) { k.FilterPolicy = pebbleadapter.FromPebble(theirs) }},
	}
	if o.pebble {
		cfgs = append(cfgs,
			benchConfig{id: "pebble-bloompolicy", name: "pebble, " + oursName, filter: ours.Name(), nominal: bits,
				pebble: withPebbleFilter(pebbleadapter.ToPebble(ours))},
			benchConfig{id: "pebble-pebblebloom", name: "pebble, " + theirsName, filter: theirs.Name(), nominal: float64(whole),
				pebble: withPebbleFilter(theirs)},
		)
	}
	return cfgs
}

func (a *app) runBench(ctx context.Context, o benchOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	ours, err := bloompolicy.New(o.fpr)
	if err != nil {
		return usageError{err}
	}
	if o.prefix {
		return a.runPrefixBench(ctx, o, ours)
	}
	if o.filterMemory {
		return a.runFilterMemory(ctx, o)
	}
	if o.writers != nil {
		return a.runWriters(ctx, o, ours)
	}
	if o.filterCapBits > 0 {
		return a.runCapGrowth(ctx, o)
	}
	root, cleanup, err := benchDir(o)
	if err != nil {
		return err
	}
	defer cleanup()
	start := time.Now()
	w := bench.NewWorkload(o.seed, o.keys, o.valueSize, o.lookups)
	rep := &benchReport{Params: o.params(ours)}
	for _, cfg := range benchConfigs(o, ours) {
		row, err := a.benchOne(ctx, cfg, w, filepath.Join(root, cfg.id), o)
		if err != nil {
			return fmt.Errorf("bench %s: %w", cfg.name, err)
		}
		rep.Rows = append(rep.Rows, row)
	}
	if rep.WriteModes, err = a.benchWriteModes(ctx, root, o, ours); err != nil {
		return err
	}
	if o.plot != "" {
		if err := a.benchPlot(rep, w.Gen, o); err != nil {
			return err
		}
	}
	rep.Seconds = jsonFloat(time.Since(start).Seconds())
	if o.keep {
		rep.Dir = root
	}
	return a.finishBench(rep, o)
}

// finishBench compares the engines and writes the report: the Markdown
// page with --markdown, then the table or JSON on stdout.
func (a *app) finishBench(rep *benchReport, o benchOptions) error {
	rep.VsPebble = compareWithPebble(rep.Rows)
	if o.markdown != "" {
		if err := writeBenchMarkdown(o.markdown, o.command, rep, time.Now()); err != nil {
			return err
		}
	}
	return a.writeBenchReport(rep)
}

// params records the run's parameters for the report.
func (o benchOptions) params(ours *bloompolicy.Bloom) benchParams {
	extra := bench.WriteHeavyKeys(o.keys)
	return benchParams{
		Keys: o.keys, WriteHeavyKeys: extra, KeySize: bench.KeySize, ValueSize: o.valueSize, Lookups: o.lookups,
		TargetFPR: o.fpr, CacheBytes: int64(o.cache), MemTableBytes: int64(o.memtable),
		TableBytes: int64(o.tableSize), L1Bytes: int64(o.l1Size), Seed: o.seed,
		OursBitsPerKey: ours.BitsPerKey(), PebbleBitsPerKey: pebbleBits(ours.BitsPerKey()),
		Shapes: map[string]string{
			shapeSettled: fmt.Sprintf("the %d keys written in random order in NoSync batches of %d, "+
				"then Flush and a wait until no compaction is running or due; no manual compaction", o.keys, bench.LoadBatch),
			shapeWriteHeavy: fmt.Sprintf("%d more keys written in NoSync batches of %d, each batch followed by "+
				"an equal share of the lookups (present keys among the first %d); background work goes on", extra, bench.LoadBatch, o.keys),
			shapeCompacted: "Flush, Compact over the whole key range, and a wait until no compaction is running or due",
		},
		Machine: machine(),
	}
}

// machine describes where the bench runs, since its times depend on it: the
// platform, CPUs, Go version and, where the system tells, the load average
// at the start (other work on the machine slows every figure).
func machine() string {
	s := fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	if f, err := vfs.Default.Open("/proc/loadavg"); err == nil {
		defer f.Close()
		var buf [64]byte
		n, _ := f.Read(buf[:])
		if fields := strings.Fields(string(buf[:n])); len(fields) >= 3 {
			s += fmt.Sprintf(", load average %s %s %s at the start", fields[0], fields[1], fields[2])
		}
	}
	return s
}

// benchDir returns the directory the stores go in and a function that
// removes what the run created, unless --keep.
func benchDir(o benchOptions) (dir string, cleanup func(), err error) {
	fs := vfs.Default
	dir = o.dir
	created := dir == ""
	if created {
		dir = filepath.Join(os.TempDir(), "bloomkv-bench-"+strconv.FormatUint(rand.Uint64(), 36))
	} else if _, err := fs.Stat(dir); err != nil {
		created = true
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	if names, err := fs.List(dir); err != nil {
		return "", nil, err
	} else if !created && len(names) > 0 {
		return "", nil, fmt.Errorf("--dir %s: not empty (bench only writes into an empty or new directory)", dir)
	}
	cleanup = func() {
		if o.keep {
			return
		}
		if created {
			_ = fs.RemoveAll(dir)
			return
		}
		names, _ := fs.List(dir)
		for _, n := range names {
			_ = fs.RemoveAll(fs.PathJoin(dir, n))
		}
	}
	return dir, cleanup, nil
}
