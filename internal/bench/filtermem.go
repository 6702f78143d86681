package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// This file is the filter-memory study: wasted data-block reads per lookup
// against filter memory, for four ways of spending it and three lookup
// mixes, on stores settled at L0 and three levels.
//
// A lookup wastes a read when it reads a data block that does not hold its
// key: a false positive, or a table whose filter is missing or not held.
// With every key in a table, wasted reads = block reads - lookups that
// found their key.

// FilterStrategy is a way to spend filter memory.
type FilterStrategy string

// The strategies of the study.
const (
	// StrategyUniform gives every table the same bits per key.
	StrategyUniform FilterStrategy = "uniform"
	// StrategyNoBottom gives the bottom level no filter and spreads the
	// same memory over the levels above (RocksDB's
	// optimize_filters_for_hits).
	StrategyNoBottom FilterStrategy = "no-bottom"
	// StrategyMonkey is kv.Options.FilterBudget{BitsPerKey}: Monkey's rule.
	StrategyMonkey FilterStrategy = "monkey"
	// StrategyTraffic is kv.Options.FilterBudget{Bytes}: a cap of the
	// filter bytes StrategyMonkey's store spent at the same bits per key
	// (its budget counts every entry, shadowed versions included), spent
	// by the lookups the store serves, on a copy of that store's tree
	// (see FilterMemStudy).
	StrategyTraffic FilterStrategy = "traffic"
)

// FilterStrategies lists the strategies in the order the study reports
// them.
var FilterStrategies = []FilterStrategy{StrategyUniform, StrategyNoBottom, StrategyMonkey, StrategyTraffic}

// LookupMix is a distribution of lookups over present and absent keys.
type LookupMix string

// The mixes of the study.
const (
	// MixAbsent looks up absent keys only.
	MixAbsent LookupMix = "absent"
	// MixPresent90 looks up present keys 90% of the time, any alike, and
	// absent ones 10%.
	MixPresent90 LookupMix = "90/10"
	// MixZipf draws keys from present and absent ones alike, by a Zipf
	// law (s = 1.1) over a random ranking of them. Which keys are hot
	// decides much of a single store's figure (whether the hottest absent
	// keys are false positives of some filter is fixed once it is built),
	// so the study measures it over FilterMemConfig.ZipfRankings rankings
	// and reports the mean.
	MixZipf LookupMix = "zipf"
)

// LookupMixes lists the mixes in the order the study reports them.
var LookupMixes = []LookupMix{MixAbsent, MixPresent90, MixZipf}

// FilterMemConfig sizes the study.
type FilterMemConfig struct {
	Keys      int       // keys loaded into each store
	ValueSize int       // bytes per value
	Lookups   int       // lookups measured per mix (and as many to warm up)
	Bits      []float64 // filter memory, in bits per key of the final store
	Seed      uint64
	// ZipfRankings is the number of independent Zipf rankings MixZipf is
	// measured over (0: 1). Ranking r maps Zipf rank k to key
	// Mix64(k ^ Seed ^ Mix64(r)) (ranking 0 is Seed's own); every strategy
	// is measured on the same rankings, and a store that learns from its
	// lookups (StrategyTraffic) is loaded and warmed up for each ranking
	// on that ranking.
	ZipfRankings int
	// Pebble adds the Pebble strategies (PebbleStrategies) at each memory.
	Pebble bool
}

// FilterMemResult is one measurement.
type FilterMemResult struct {
	Strategy FilterStrategy
	Mix      LookupMix
	Bits     float64 // the memory asked for, bits per key
	// Spent is the filter bits per entry the store's tables hold in
	// memory (under a cap: held; otherwise: every table's filter), and
	// FilterBytes the bytes.
	Spent       float64
	FilterBytes int64
	// Wasted is the wasted data-block reads per lookup: the mean over
	// Rankings measurements (each of FilterMemConfig.Lookups lookups) for
	// MixZipf, one measurement otherwise; WastedSE is the mean's standard
	// error (0 from a single measurement).
	Wasted, WastedSE float64
	Rankings         int
	// Levels is the number of L0 tables and deeper levels holding data.
	L0Tables, Levels int
}

// FilterMemStudy runs the study: for each memory, a store per strategy
// but the traffic-aware one, loaded with every key twice (the second pass
// rewrites the tables of the first for the store at its full size, as a
// store that has served its workload a while holds them), flushed,
// settled and measured on every mix. The traffic-aware strategy is
// measured on the same tree as Monkey's, so that the two differ in
// nothing but the allocation (two stores loaded alike settle at shapes
// that differ by their background work's timing, and their figures by
// up to a tenth): for each mix and ranking, a copy of Monkey's store
// (kv.DB.Checkpoint) is opened under a cap of the filter bytes Monkey's
// store spent, warmed up with twice c.Lookups lookups of the mix, which
// the cap learns from, settled and measured. With c.Pebble, each memory
// also gets a Pebble store per PebbleStrategies entry, loaded once and
// measured on every mix (see measurePebble). progress, if not nil, is
// told of each result.
func FilterMemStudy(ctx context.Context, c FilterMemConfig, progress func(FilterMemResult)) ([]FilterMemResult, error) {
	var out []FilterMemResult
	for _, bits := range c.Bits {
		for _, s := range []FilterStrategy{StrategyUniform, StrategyNoBottom} {
			if err := c.measureStore(ctx, s, bits, &out, progress); err != nil {
				return out, err
			}
		}
		if err := c.measureMonkeyAndCap(ctx, bits, &out, progress); err != nil {
			return out, err
		}
		if !c.Pebble {
			continue
		}
		for _, s := range PebbleStrategies {
			if err := c.measurePebble(ctx, s, bits, &out, progress); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// measureStore loads one store of strategy s and measures every mix on
// it.
func (c FilterMemConfig) measureStore(ctx context.Context, s FilterStrategy, bits float64,
	out *[]FilterMemResult, progress func(FilterMemResult)) error {
	db, _, err := c.load(ctx, s, bits)
	if err != nil {
		return fmt.Errorf("bench: %s at %v bits/key: %w", s, bits, err)
	}
	defer db.Close()
	return c.measureMixes(s, bits, out, progress, func(m LookupMix, ranking int) (FilterMemResult, error) {
		return c.measure(db, m, ranking)
	})
}

// measureMonkeyAndCap loads a store of StrategyMonkey, measures every mix
// on it, then StrategyTraffic on copies of it (see FilterMemStudy).
func (c FilterMemConfig) measureMonkeyAndCap(ctx context.Context, bits float64,
	out *[]FilterMemResult, progress func(FilterMemResult)) error {
	db, fs, err := c.load(ctx, StrategyMonkey, bits)
	if err != nil {
		return fmt.Errorf("bench: %s at %v bits/key: %w", StrategyMonkey, bits, err)
	}
	defer db.Close()
	err = c.measureMixes(StrategyMonkey, bits, out, progress, func(m LookupMix, ranking int) (FilterMemResult, error) {
		return c.measure(db, m, ranking)
	})
	if err != nil {
		return err
	}
	capBytes := (*out)[len(*out)-1].FilterBytes // what Monkey's store spent
	copies := 0
	return c.measureMixes(StrategyTraffic, bits, out, progress, func(m LookupMix, ranking int) (FilterMemResult, error) {
		copies++
		dir := fmt.Sprintf("capped-%d", copies)
		capped, err := c.openCapped(ctx, db, fs, dir, capBytes, m, ranking)
		if err != nil {
			return FilterMemResult{}, err
		}
		r, err := c.measure(capped, m, ranking)
		return r, errors.Join(err, capped.Close(), fs.RemoveAll(dir))
	})
}

// openCapped opens a copy of db, in dir of fs, under a cap of capBytes
// of filter memory, and warms it up with lookups of mix m on its ranking.
func (c FilterMemConfig) openCapped(ctx context.Context, db *kv.DB, fs vfs.FS, dir string, capBytes int64,
	m LookupMix, ranking int) (*kv.DB, error) {
	if err := db.Checkpoint(dir); err != nil {
		return nil, err
	}
	o, err := c.filterMemOptions(StrategyTraffic, 0)
	if err != nil {
		return nil, err
	}
	o.FS, o.FilterBudget = fs, &bloompolicy.Budget{Bytes: capBytes}
	capped, err := kv.Open(dir, o)
	if err != nil {
		return nil, err
	}
	if _, err = c.lookups(capped, m, ranking, c.Keys, 2*c.Lookups, 1); err == nil {
		err = capped.WaitIdle(ctx)
	}
	if err != nil {
		return nil, errors.Join(err, capped.Close())
	}
	return capped, nil
}

// measureMixes measures each of LookupMixes, on each of its rankings, of
// strategy s at bits per key, in either engine, and appends the results
// to out, one per mix (the mean over its rankings).
func (c FilterMemConfig) measureMixes(s FilterStrategy, bits float64, out *[]FilterMemResult,
	progress func(FilterMemResult), measure func(m LookupMix, ranking int) (FilterMemResult, error)) error {
	for _, m := range LookupMixes {
		var rs []FilterMemResult
		for ranking := range c.rankings(m) {
			r, err := measure(m, ranking)
			if err != nil {
				return fmt.Errorf("bench: %s at %v bits/key, %s, ranking %d: %w", s, bits, m, ranking, err)
			}
			rs = append(rs, r)
		}
		r := meanResult(rs)
		r.Strategy, r.Bits = s, bits
		*out = append(*out, r)
		if progress != nil {
			progress(r)
		}
	}
	return nil
}

// rankings returns the number of rankings mix m is measured over.
func (c FilterMemConfig) rankings(m LookupMix) int {
	if m != MixZipf {
		return 1
	}
	return max(c.ZipfRankings, 1)
}

// meanResult returns the mean of measurements rs of one mix: their mean
// wasted reads and its standard error, and their mean filter memory; the
// shape is the first's.
func meanResult(rs []FilterMemResult) FilterMemResult {
	r := rs[0]
	n := float64(len(rs))
	var wasted, spent, bytes float64
	for _, x := range rs {
		wasted, spent, bytes = wasted+x.Wasted, spent+x.Spent, bytes+float64(x.FilterBytes)
	}
	r.Wasted, r.Spent, r.FilterBytes, r.Rankings = wasted/n, spent/n, int64(math.Round(bytes/n)), len(rs)
	if len(rs) > 1 {
		var ss float64
		for _, x := range rs {
			ss += (x.Wasted - r.Wasted) * (x.Wasted - r.Wasted)
		}
		r.WastedSE = math.Sqrt(ss / (n - 1) / n)
	}
	return r
}

// filterMemSizes are the sizes of the study's stores, in both engines.
var filterMemSizes = Sizes{MemTable: 64 << 10, Table: 64 << 10, LBase: 128 << 10, Cache: 64 << 20}

// filterMemOptions returns the options of a study store: sizes that settle
// Keys keys of about 40 bytes into L0 and three levels.
func (c FilterMemConfig) filterMemOptions(s FilterStrategy, bits float64) (*kv.Options, error) {
	z := filterMemSizes
	o := &kv.Options{FS: vfs.NewMem(), MemTableSize: z.MemTable, TargetFileSize: z.Table,
		LBaseMaxBytes: z.LBase, BlockCacheSize: z.Cache}
	switch s {
	case StrategyUniform:
		p, err := bloompolicy.NewBitsPerKey(bits)
		o.FilterPolicy = p
		return o, err
	case StrategyNoBottom:
		// Set once the shape is known (see load): the bottom level's
		// share of the keys decides the bits of the others.
		return o, nil
	case StrategyMonkey:
		o.FilterBudget = &bloompolicy.Budget{BitsPerKey: bits}
	}
	return o, nil
}

// load builds a store for strategy s at bits per key, in a file system of
// its own, which it also returns.
func (c FilterMemConfig) load(ctx context.Context, s FilterStrategy, bits float64) (*kv.DB, vfs.FS, error) {
	o, err := c.filterMemOptions(s, bits)
	if err != nil {
		return nil, nil, err
	}
	if s == StrategyNoBottom {
		// The levels above L6 hold about a ninth of the keys at
		// multiplier 10; they get the bits of all keys, L6 none.
		p, err := bloompolicy.NewBitsPerKey(min(bits*10, bloompolicy.MaxBitsPerKey))
		if err != nil {
			return nil, nil, err
		}
		o.FilterPolicy = p
		o.Levels = make([]kv.LevelOptions, 7)
		o.Levels[6].FilterPolicy = noFilter{}
		o.ExtraFilterPolicies = []bloompolicy.FilterPolicy{noFilter{}}
	}
	db, err := kv.Open("db", o)
	if err != nil {
		return nil, nil, err
	}
	g := NewKeyGen(c.Seed)
	for range 2 {
		if err = c.fill(db, g, 0, c.Keys); err != nil {
			break
		}
	}
	if err == nil {
		err = db.Flush()
	}
	if err == nil {
		err = db.WaitIdle(ctx)
	}
	if err != nil {
		return nil, nil, errors.Join(err, db.Close())
	}
	return db, o.FS, nil
}

// fill sets present keys [lo, hi).
func (c FilterMemConfig) fill(db *kv.DB, g KeyGen, lo, hi int) error {
	var key, value []byte
	for i := lo; i < hi; i++ {
		key, value = g.Present(key[:0], i), g.Value(value[:0], i, c.ValueSize)
		if err := db.Set(key, value, kv.NoSync); err != nil {
			return err
		}
	}
	return nil
}

// measure runs c.Lookups lookups of mix m on its ranking and reports what
// they wasted.
func (c FilterMemConfig) measure(db *kv.DB, m LookupMix, ranking int) (FilterMemResult, error) {
	before := db.Metrics()
	found, err := c.lookups(db, m, ranking, c.Keys, c.Lookups, 2)
	if err != nil {
		return FilterMemResult{}, err
	}
	after := db.Metrics()
	r := FilterMemResult{Mix: m}
	reads := after.Lookups.BlockReads - before.Lookups.BlockReads
	r.Wasted = float64(reads-int64(found)) / float64(c.Lookups)
	var filterBytes, keys int64
	for i, l := range after.Levels {
		filterBytes += l.FilterBytes
		keys += l.Keys
		if i == 0 {
			r.L0Tables = l.NumFiles
		} else if l.NumFiles > 0 {
			r.Levels++
		}
	}
	if after.Filters.CapBytes > 0 {
		filterBytes = after.Filters.HeldBytes
	}
	r.Spent = 8 * float64(filterBytes) / float64(keys)
	r.FilterBytes = filterBytes
	return r, nil
}

// lookups runs n lookups of mix m (on Zipf ranking ranking) in db over the
// first keys present keys (and as many absent ones), drawing with stream,
// and returns how many found their key. A present key not found, or an
// absent one found, is an error.
func (c FilterMemConfig) lookups(db *kv.DB, m LookupMix, ranking, keys, n int, stream uint64) (int, error) {
	return c.lookupsWith(func(key []byte) (bool, error) {
		_, err := db.Get(key)
		if errors.Is(err, kv.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}, m, ranking, keys, n, stream)
}

// lookupsWith is lookups through get, which reports whether it found key.
func (c FilterMemConfig) lookupsWith(get func(key []byte) (bool, error), m LookupMix, ranking, keys, n int, stream uint64) (int, error) {
	g := NewKeyGen(c.Seed)
	rng := rand.New(rand.NewPCG(c.Seed, stream))
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(2*keys-1))
	found := 0
	var key []byte
	for range n {
		var present bool
		var i int
		switch m {
		case MixAbsent:
			i = rng.IntN(keys)
		case MixPresent90:
			present, i = rng.IntN(10) > 0, rng.IntN(keys)
		case MixZipf:
			id := c.zipfID(zipf.Uint64(), ranking, keys)
			present, i = id%2 == 0, id/2
		}
		if present {
			key = g.Present(key[:0], i)
		} else {
			key = g.Absent(key[:0], i)
		}
		ok, err := get(key)
		switch {
		case err != nil:
			return found, err
		case ok != present:
			return found, fmt.Errorf("key %s: present %v, but the lookup found it: %v", key, present, ok)
		case ok:
			found++
		}
	}
	return found, nil
}

// zipfID returns the key of Zipf rank rank in ranking ranking, among
// keys present and keys absent ones: id/2 is the key's index, odd ids
// are absent. Ranking r maps rank k to Mix64(k ^ Seed ^ Mix64(r)):
// Mix64(0) is 0, so ranking 0 is Seed's own, and mixing r (rather than
// taking Seed ^ r, which would map rank k of ranking r to rank k^r of
// ranking 0, the same hot keys reordered) gives each ranking hot keys of
// its own.
func (c FilterMemConfig) zipfID(rank uint64, ranking, keys int) int {
	return int(Mix64(rank^c.Seed^Mix64(uint64(ranking))) % uint64(2*keys))
}

// noFilter is a filter policy whose filters say "maybe" to every key: the
// bottom level of StrategyNoBottom. Its filters are empty, so a table
// spends a byte or two per data block on them.
type noFilter struct{}

func (noFilter) Name() string                        { return "bench.nofilter" }
func (noFilter) NewWriter() bloompolicy.FilterWriter { return noFilterWriter{} }
func (noFilter) MayContain(_, _ []byte) bool         { return true }

type noFilterWriter struct{}

func (noFilterWriter) AddKey([]byte)            {}
func (noFilterWriter) Finish(dst []byte) []byte { return dst }
