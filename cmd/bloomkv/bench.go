package main

import (
	"bytes"
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
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/spf13/cobra"
)

// benchOptions are the flags of bench.
type benchOptions struct {
	keys, valueSize, lookups int
	fpr                      float64
	cache                    byteSize
	dir                      string
	keep, pebble, prefix     bool
	plot                     string
	seed                     uint64
}

// loadBatch is the number of writes per NoSync batch while loading.
const loadBatch = 1000

func (a *app) benchCommand() *cobra.Command {
	o := benchOptions{cache: 8 << 20}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure point lookups with and without filters (and against Pebble)",
		Long: "bench loads the same keys into bloomkv stores without filters, with " +
			"bloompolicy.New(--fpr) and with Pebble's bloom at the same bits per key, " +
			"compacts them, and measures absent and present point lookups: time, tables " +
			"considered, block reads, reads saved and observed false-positive rate. " +
			"--pebble adds Pebble itself with both filters.",
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runBench(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.keys, "keys", 1_000_000, "keys loaded into each store")
	f.IntVar(&o.valueSize, "value-size", 100, "bytes per value")
	f.IntVar(&o.lookups, "lookups", 1_000_000, "absent lookups, and as many present lookups, per store")
	f.Float64Var(&o.fpr, "fpr", 0.01, "target false-positive rate of bloompolicy.New")
	f.Var(&o.cache, "cache", "block cache size (e.g. 8MiB, 512KiB, 1048576)")
	f.StringVar(&o.dir, "dir", "", "directory for the stores (default: a new temporary directory)")
	f.BoolVar(&o.keep, "keep", false, "keep the stores after the run")
	f.BoolVar(&o.pebble, "pebble", false, "also run Pebble v1.1.5 with both filters")
	f.BoolVar(&o.prefix, "prefix", false, "run the prefix-scan workload instead: --keys as user/<id>/<field> keys, --lookups prefix seeks of absent and of present users")
	f.StringVar(&o.plot, "plot", "", "write a plot to `FILE` (.svg or .png)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of keys, values and lookup order")
	return cmd
}

func (o *benchOptions) check() error {
	switch {
	case o.keys <= 0:
		return usagef("--keys %d: want at least 1", o.keys)
	case o.valueSize < 0:
		return usagef("--value-size %d: want 0 or more", o.valueSize)
	case o.lookups <= 0:
		return usagef("--lookups %d: want at least 1", o.lookups)
	case o.cache <= 0:
		return usagef("--cache %d: want a positive size", o.cache)
	}
	if err := checkFPR(o.fpr); err != nil {
		return err
	}
	if o.plot != "" {
		return checkPlotPath(o.plot)
	}
	return nil
}

// benchConfig is one engine and filter under test.
type benchConfig struct {
	id      string  // directory name
	name    string  // shown in the table
	engine  string  // "bloomkv" or "pebble"
	filter  string  // the policy, or "none"
	nominal float64 // bits per key the policy builds with; NaN without one
	open    func(dir string) (store, error)
}

// benchConfigs returns the configurations to run: bloomkv without filters,
// with ours and with Pebble's bloom at the nearest whole bits per key, then
// Pebble with both when asked.
func benchConfigs(o benchOptions, ours *bloompolicy.Bloom) []benchConfig {
	bits := ours.BitsPerKey()
	whole := pebbleBits(bits)
	theirs := bloom.FilterPolicy(whole)
	oursName := fmt.Sprintf("bloompolicy %s", fmtPercent(o.fpr, 2))
	theirsName := fmt.Sprintf("pebble bloom %d", whole)
	cfgs := []benchConfig{
		{"bloomkv-nofilter", "bloomkv, no filter", "bloomkv", "none", math.NaN(),
			func(dir string) (store, error) { return openKV(dir, o, nil) }},
		{"bloomkv-bloompolicy", "bloomkv, " + oursName, "bloomkv", ours.Name(), bits,
			func(dir string) (store, error) { return openKV(dir, o, ours) }},
		{"bloomkv-pebblebloom", "bloomkv, " + theirsName, "bloomkv", theirs.Name(), float64(whole),
			func(dir string) (store, error) { return openKV(dir, o, pebbleadapter.FromPebble(theirs)) }},
	}
	if o.pebble {
		cfgs = append(cfgs,
			benchConfig{"pebble-bloompolicy", "pebble, " + oursName, "pebble", ours.Name(), bits,
				func(dir string) (store, error) { return openPebble(dir, o, pebbleadapter.ToPebble(ours)) }},
			benchConfig{"pebble-pebblebloom", "pebble, " + theirsName, "pebble", theirs.Name(), float64(whole),
				func(dir string) (store, error) { return openPebble(dir, o, theirs) }},
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
	root, cleanup, err := benchDir(o)
	if err != nil {
		return err
	}
	defer cleanup()
	start := time.Now()
	w := newWorkload(o.seed, o.keys, o.valueSize, o.lookups)
	rep := &benchReport{Params: o.params(ours)}
	for _, cfg := range benchConfigs(o, ours) {
		row, err := a.benchOne(ctx, cfg, w, filepath.Join(root, cfg.id), o.fpr)
		if err != nil {
			return fmt.Errorf("bench %s: %w", cfg.name, err)
		}
		rep.Rows = append(rep.Rows, row)
	}
	if o.plot != "" {
		if err := a.benchPlot(rep, w.kg, o); err != nil {
			return err
		}
	}
	rep.Seconds = jsonFloat(time.Since(start).Seconds())
	if o.keep {
		rep.Dir = root
	}
	return a.writeBenchReport(rep)
}

// params records the run's parameters for the report.
func (o benchOptions) params(ours *bloompolicy.Bloom) benchParams {
	return benchParams{
		Keys: o.keys, KeySize: keySize, ValueSize: o.valueSize, Lookups: o.lookups,
		TargetFPR: o.fpr, CacheBytes: int64(o.cache), Seed: o.seed,
		OursBitsPerKey: ours.BitsPerKey(), PebbleBitsPerKey: pebbleBits(ours.BitsPerKey()),
		Procedure: fmt.Sprintf("keys written in random order in NoSync batches of %d; Flush, Compact "+
			"over the whole key range, and wait for the background compactions that follow; then "+
			"the absent lookups and the present lookups, each in random order", loadBatch),
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

// benchOne loads, settles and queries one configuration.
func (a *app) benchOne(ctx context.Context, cfg benchConfig, w *workload, dir string, target float64) (row benchRow, err error) {
	row = benchRow{Config: cfg.name, Engine: cfg.engine, Filter: cfg.filter,
		NominalBitsPerKey: jsonFloat(cfg.nominal)}
	s, err := cfg.open(dir)
	if err != nil {
		return row, err
	}
	defer func() {
		if cerr := s.close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	t := time.Now()
	prog := a.startProgress(cfg.name+": load", int64(w.keys))
	err = load(ctx, s, w, prog)
	prog.done()
	if err != nil {
		return row, err
	}
	row.LoadSeconds = jsonFloat(time.Since(t).Seconds())
	t = time.Now()
	prog = a.startProgress(cfg.name+": flush + compact + settle", -1)
	err = s.settle()
	prog.done()
	if err != nil {
		return row, err
	}
	row.SettleSeconds = jsonFloat(time.Since(t).Seconds())
	if row.Absent, err = a.lookupPhase(ctx, cfg.name+": absent lookups", s, w, false); err != nil {
		return row, err
	}
	if row.Present, err = a.lookupPhase(ctx, cfg.name+": present lookups", s, w, true); err != nil {
		return row, err
	}
	if err := w.verifySample(s); err != nil {
		return row, err
	}
	fp, err := s.footprint()
	if err != nil {
		return row, err
	}
	row.fill(fp, target)
	return row, nil
}

// lookupPhase times w.lookups point lookups of absent or present keys and
// returns the store's lookup counters over just that phase (the difference
// of two snapshots). Every answer is checked: a present key must be found
// with a value of the right size, an absent one must not be.
func (a *app) lookupPhase(ctx context.Context, desc string, s store, w *workload, present bool) (phase, error) {
	prog := a.startProgress(desc, int64(w.lookups))
	defer prog.done()
	var buf [keySize]byte
	before := s.counters()
	start := time.Now()
	for i := range w.lookups {
		if i%progressEvery == 0 && ctx.Err() != nil {
			return phase{}, ctx.Err()
		}
		key := w.lookupKey(buf[:0], i, present)
		v, found, err := s.get(key)
		switch {
		case err != nil:
			return phase{}, fmt.Errorf("get %q: %w", key, err)
		case found != present:
			return phase{}, fmt.Errorf("get %q: found=%t, want %t", key, found, present)
		case found && len(v) != w.valueSize:
			return phase{}, fmt.Errorf("get %q: value of %d bytes, want %d", key, len(v), w.valueSize)
		}
		prog.add(1)
	}
	elapsed := time.Since(start)
	c := s.counters().minus(before)
	c.Gets = int64(w.lookups)
	return phase{
		Lookups: c,
		NsPerOp: jsonFloat(float64(elapsed.Nanoseconds()) / float64(w.lookups)),
	}, nil
}

// verifySample checks the values of up to 1000 keys byte for byte. The
// timed phases check only their sizes, so as not to time the generator.
func (w *workload) verifySample(s store) error {
	var key [keySize]byte
	var want []byte
	step := max(1, w.keys/1000)
	for i := 0; i < w.keys; i += step {
		k := w.kg.present(key[:0], i)
		v, found, err := s.get(k)
		if err != nil {
			return fmt.Errorf("get %q: %w", k, err)
		}
		want = w.kg.value(want[:0], i, w.valueSize)
		if !found || !bytes.Equal(v, want) {
			return fmt.Errorf("get %q: found=%t, value differs from the one written", k, found)
		}
	}
	return nil
}

// benchPlot measures the standalone filter curves (up to 100,000 keys per
// filter, bits per key 4 to 20) and writes the plot of a bench run.
func (a *app) benchPlot(rep *benchReport, kg keyGen, o benchOptions) error {
	n := min(o.keys, 100_000)
	q := min(max(20*n, 100_000), 2_000_000)
	prog := a.startProgress("plot: standalone filters", -1)
	ours, pebble, err := fprCurve(kg, 4, 20, n, q)
	prog.done()
	if err != nil {
		return err
	}
	d := plotData{Ours: ours, Pebble: pebble, Keys: n}
	for _, r := range rep.Rows {
		if r.Filter != "none" {
			d.Bench = append(d.Bench, fprPoint{Label: r.Config, BitsPerKey: r.FilterBitsPerKey, FPR: r.ObservedFPR})
		}
		d.Saved = append(d.Saved, savedBar{Config: r.Config,
			Absent: float64(r.Absent.ReadsSavedPerLookup), Present: float64(r.Present.ReadsSavedPerLookup)})
	}
	if err := writePlot(vfs.Default, o.plot, d); err != nil {
		return err
	}
	rep.Curves = &fprCurves{Keys: n, Queries: q, Ours: ours, Pebble: pebble}
	rep.Plot = o.plot
	return nil
}
