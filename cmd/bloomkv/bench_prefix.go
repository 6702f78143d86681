package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// bench --prefix: the prefix-scan workload of the harness (bench.Users,
// bench.LoadUsers, bench.UserSeeks): users with the keys
// "user/<id>/<field>", split after the user, loaded in scattered order
// and compacted; then prefix seeks of absent and of present users.

// prefixConfigs returns bloomkv without filters and with ours, then Pebble
// without filters and with its bloom at the nearest whole bits per key
// when asked: the configurations of bench, with comparers that split.
func prefixConfigs(o benchOptions, ours *bloompolicy.Bloom) []benchConfig {
	bits := ours.BitsPerKey()
	whole := pebbleBits(bits)
	theirs := bloom.FilterPolicy(whole)
	cfgs := []benchConfig{
		{id: "prefix-bloomkv-nofilter", name: "bloomkv, no filter", filter: filterNone, nominal: math.NaN(),
			kv: func(k *kv.Options) { k.Comparer, k.DisableFilters = bench.KVUserComparer, true }},
		{id: "prefix-bloomkv-bloompolicy", name: "bloomkv, bloompolicy " + fmtPercent(o.fpr, 2), filter: ours.Name(), nominal: bits,
			kv: func(k *kv.Options) { k.Comparer, k.FilterPolicy = bench.KVUserComparer, ours }},
	}
	if o.pebble {
		cfgs = append(cfgs,
			benchConfig{id: "prefix-pebble-nofilter", name: "pebble, no filter", filter: filterNone, nominal: math.NaN(),
				pebble: withPebbleSplit},
			benchConfig{id: "prefix-pebble-pebblebloom", name: fmt.Sprintf("pebble, pebble bloom %d", whole),
				filter: theirs.Name(), nominal: float64(whole),
				pebble: func(p *pebble.Options) { withPebbleSplit(p); withPebbleFilter(theirs)(p) }})
	}
	return cfgs
}

// withPebbleSplit gives Pebble the comparer of the prefix workload.
func withPebbleSplit(p *pebble.Options) { p.Comparer = bench.PebbleUserComparer }

// prefixReport is the outcome of bench --prefix.
type prefixReport struct {
	Users     int         `json:"users"`
	Fields    int         `json:"fields_per_user"`
	ValueSize int         `json:"value_size"`
	Seeks     int         `json:"seeks_per_kind"`
	Machine   string      `json:"machine"`
	Rows      []prefixRow `json:"rows"`
}

// prefixRow is one configuration's figures.
type prefixRow struct {
	Config  string      `json:"config"`
	Engine  string      `json:"engine"`
	Filter  string      `json:"filter"`
	Absent  prefixPhase `json:"absent"`
	Present prefixPhase `json:"present"`
}

// prefixPhase is one kind of seek: its time and counters, in total and per
// seek. For Pebble, tables are filter checks and block reads all block
// cache lookups (index and filter blocks included).
type prefixPhase struct {
	Seeks             int          `json:"seeks"`
	NsPerSeek         jsonFloat    `json:"ns_per_seek"`
	Lookups           lookupCounts `json:"lookups"`
	TablesPerSeek     jsonFloat    `json:"tables_per_seek"`
	BlockReadsPerSeek jsonFloat    `json:"block_reads_per_seek"`
	ObservedFPR       jsonFloat    `json:"observed_fpr"`
}

// runPrefixBench runs the prefix-scan workload on every configuration.
func (a *app) runPrefixBench(ctx context.Context, o benchOptions, ours *bloompolicy.Bloom) error {
	root, cleanup, err := benchDir(o)
	if err != nil {
		return err
	}
	defer cleanup()
	rep := &prefixReport{Users: bench.Users(o.keys), Fields: len(bench.UserFields),
		ValueSize: o.valueSize, Seeks: o.lookups, Machine: machine()}
	for _, cfg := range prefixConfigs(o, ours) {
		row, err := a.prefixOne(ctx, cfg, o, filepath.Join(root, cfg.id), rep)
		if err != nil {
			return fmt.Errorf("bench --prefix %s: %w", cfg.name, err)
		}
		rep.Rows = append(rep.Rows, row)
	}
	return a.writePrefixReport(rep)
}

// prefixOne loads, settles and seeks one configuration.
func (a *app) prefixOne(ctx context.Context, cfg benchConfig, o benchOptions, dir string, rep *prefixReport) (row prefixRow, err error) {
	row = prefixRow{Config: cfg.name, Engine: cfg.engine(), Filter: cfg.filter}
	s, err := cfg.open(dir, o)
	if err != nil {
		return row, err
	}
	defer func() {
		if cerr := s.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	prog := a.startProgress(cfg.name+": load", int64(rep.Users))
	err = bench.LoadUsers(ctx, s, rep.Users, rep.ValueSize, bench.NewKeyGen(o.seed), prog.add)
	prog.done()
	if err != nil {
		return row, err
	}
	prog = a.startProgress(cfg.name+": flush + compact + settle", -1)
	err = s.Compact()
	if err == nil {
		err = s.Refresh()
	}
	prog.done()
	if err != nil {
		return row, err
	}
	if row.Absent, err = a.prefixPhase(ctx, cfg.name+": absent users", s, rep, o.seed, false); err != nil {
		return row, err
	}
	row.Present, err = a.prefixPhase(ctx, cfg.name+": present users", s, rep, o.seed, true)
	return row, err
}

// prefixPhase times rep.Seeks prefix seeks of absent or present users in
// random order, checking each answer, and derives the per-seek figures.
func (a *app) prefixPhase(ctx context.Context, desc string, s bench.Engine, rep *prefixReport, seed uint64, present bool) (prefixPhase, error) {
	prog := a.startProgress(desc, int64(rep.Seeks))
	defer prog.done()
	before := s.Counters().Total
	elapsed, err := bench.UserSeeks(ctx, s, rep.Users, rep.Seeks, seed, present, prog.add)
	if err != nil {
		return prefixPhase{}, err
	}
	p := prefixPhase{Seeks: rep.Seeks, NsPerSeek: jsonFloat(float64(elapsed.Nanoseconds()) / float64(rep.Seeks))}
	p.Lookups = fromLookupMetrics(s.Counters().Total).minus(fromLookupMetrics(before))
	p.TablesPerSeek = jsonFloat(float64(p.Lookups.TablesConsidered) / float64(rep.Seeks))
	p.BlockReadsPerSeek = jsonFloat(float64(p.Lookups.BlockReads) / float64(rep.Seeks))
	p.ObservedFPR = jsonFloat(p.Lookups.observedFPR())
	return p, nil
}

// writePrefixReport prints the report as a table, or as JSON with --json.
func (a *app) writePrefixReport(rep *prefixReport) error {
	if a.json {
		return writeJSON(a.stdout, rep)
	}
	w := a.stdout
	fmt.Fprintf(w, "bloomkv bench --prefix: %d users of %d fields (keys user/<id>/<field>) with %d B values; %d prefix seeks of absent and of present users\n",
		rep.Users, rep.Fields, rep.ValueSize, rep.Seeks)
	fmt.Fprintf(w, "both comparers split keys after user/<id>/; Pebble seeks through an iterator with UseL6Filters\nmachine: %s\n\n", rep.Machine)
	t := newTable("config", ">ns/seek absent", ">ns/seek present", ">tables/seek", ">block reads/seek", ">FPR")
	for _, r := range rep.Rows {
		tables := fmtFloat(float64(r.Absent.TablesPerSeek), 2)
		if r.Engine == enginePebble && r.Filter == filterNone {
			tables = "-" // Pebble counts tables only as filter checks
		}
		t.add(r.Config, fmtFloat(float64(r.Absent.NsPerSeek), 0), fmtFloat(float64(r.Present.NsPerSeek), 0), tables,
			fmtFloat(float64(r.Absent.BlockReadsPerSeek), 3)+" / "+fmtFloat(float64(r.Present.BlockReadsPerSeek), 2),
			fmtPercent(float64(r.Absent.ObservedFPR), 3))
	}
	if err := t.write(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\ntables/seek and FPR: absent users; block reads/seek: absent / present. Pebble rows: tables = filter checks, block reads = all block-cache lookups (index and filter blocks included).\n")
	return err
}
