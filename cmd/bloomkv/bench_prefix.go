package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// bench --prefix: the prefix-scan workload. Users have the keys
// "user/<id>/<field>" of prefixFields; both engines' comparers split them
// after the user, so the filters hold users. The stores are loaded in
// scattered user order and settled as for the point lookups; then
// SeekPrefixGE("user/<id>/") for absent users (odd ids) and for present
// ones (even ids, followed by Next through their fields).

// prefixFields are the fields every present user has.
var prefixFields = []string{"email", "name", "plan"}

// prefixStride scatters the load order: i*prefixStride mod users visits
// every user once when users is not a multiple of it (a prime).
const prefixStride = 1_000_003

// userSplit cuts "user/<id>/<field>" after "user/<id>/", the prefix of a
// user's keys; a key with fewer than two slashes is its own prefix. It keeps
// the invariants sstable.Split documents under bytewise order. (The tests
// of kv and pebbleadapter use the same rule, internal/itertest.UserSplit;
// the command keeps its own copy rather than import test support.)
func userSplit(key []byte) int {
	i := bytes.IndexByte(key, '/')
	if i < 0 {
		return len(key)
	}
	j := bytes.IndexByte(key[i+1:], '/')
	if j < 0 {
		return len(key)
	}
	return i + j + 2
}

// prefixComparer is bytewise order with userSplit, for bloomkv.
var prefixComparer = func() *sstable.Comparer {
	c := *sstable.DefaultComparer
	c.Split, c.SplitName = userSplit, "bloomkv.bench.user"
	return &c
}()

// prefixStore is a store of the prefix workload.
type prefixStore interface {
	store
	// seekPrefix seeks to prefix and counts its keys.
	seekPrefix(prefix []byte) (int, error)
}

// prefixConfigs returns bloomkv without filters and with ours, then Pebble
// without filters and with its bloom at the nearest whole bits per key
// when asked: the configurations of bench, with comparers that split.
func prefixConfigs(o benchOptions, ours *bloompolicy.Bloom) []benchConfig {
	bits := ours.BitsPerKey()
	whole := pebbleBits(bits)
	theirs := bloom.FilterPolicy(whole)
	cfgs := []benchConfig{
		{id: "prefix-bloomkv-nofilter", name: "bloomkv, no filter", filter: filterNone, nominal: math.NaN(),
			kv: func(k *kv.Options) { k.Comparer, k.DisableFilters = prefixComparer, true }},
		{id: "prefix-bloomkv-bloompolicy", name: "bloomkv, bloompolicy " + fmtPercent(o.fpr, 2), filter: ours.Name(), nominal: bits,
			kv: func(k *kv.Options) { k.Comparer, k.FilterPolicy = prefixComparer, ours }},
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
func withPebbleSplit(p *pebble.Options) {
	c := *pebble.DefaultComparer
	c.Split = userSplit
	p.Comparer = &c
}

// openPrefix opens cfg's store in dir for the prefix workload.
func openPrefix(cfg benchConfig, dir string, o benchOptions) (prefixStore, error) {
	s, err := cfg.open(dir, o)
	if err != nil {
		return nil, err
	}
	if k, ok := s.(*kvStore); ok {
		return &kvPrefixStore{kvStore: k}, nil
	}
	return s.(*pebbleStore), nil
}

// kvPrefixStore is a bloomkv store that splits keys, with the iterator its
// prefix seeks share.
type kvPrefixStore struct {
	*kvStore
	it *kv.Iterator // opened by the first seek, after the last write
}

func (s *kvPrefixStore) seekPrefix(prefix []byte) (int, error) {
	if s.it == nil {
		it, err := s.db.NewIter(nil)
		if err != nil {
			return 0, err
		}
		s.it = it
	}
	n := 0
	for ok := s.it.SeekPrefixGE(prefix); ok; ok = s.it.Next() {
		n++
	}
	return n, s.it.Error()
}

func (s *kvPrefixStore) close() error {
	var err error
	if s.it != nil {
		err = s.it.Close()
	}
	if cerr := s.kvStore.close(); err == nil {
		err = cerr
	}
	return err
}

// seekPrefix uses the iterator refresh opened, with UseL6Filters.
func (s *pebbleStore) seekPrefix(prefix []byte) (int, error) {
	n := 0
	for ok := s.iter.SeekPrefixGE(prefix); ok; ok = s.iter.Next() {
		n++
	}
	return n, s.iter.Error()
}

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
	rep := &prefixReport{Users: max(1, o.keys/len(prefixFields)), Fields: len(prefixFields),
		ValueSize: o.valueSize, Seeks: o.lookups, Machine: machine()}
	if rep.Users%prefixStride == 0 {
		rep.Users++
	}
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
	s, err := openPrefix(cfg, dir, o)
	if err != nil {
		return row, err
	}
	defer func() {
		if cerr := s.close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	prog := a.startProgress(cfg.name+": load", int64(rep.Users))
	err = loadUsers(ctx, s, rep, newKeyGen(o.seed), prog)
	prog.done()
	if err != nil {
		return row, err
	}
	prog = a.startProgress(cfg.name+": flush + compact + settle", -1)
	err = s.compact()
	if err == nil {
		err = s.refresh()
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

// loadUsers writes every present user's fields, users in scattered order,
// in NoSync batches of about loadBatch keys.
func loadUsers(ctx context.Context, s store, rep *prefixReport, kg keyGen, prog *progress) error {
	var key, value []byte
	perBatch := max(1, loadBatch/len(prefixFields))
	for lo := 0; lo < rep.Users; lo += perBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+perBatch, rep.Users)
		err := s.writeBatch(func(set func(key, value []byte) error) error {
			for i := lo; i < hi; i++ {
				id := 2 * int(uint64(i)*prefixStride%uint64(rep.Users))
				for _, f := range prefixFields {
					key = append(fmt.Appendf(key[:0], "user/%08d/", id), f...)
					if err := set(key, kg.value(value[:0], id, rep.ValueSize)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		prog.add(hi - lo)
	}
	return nil
}

// prefixPhase times rep.Seeks prefix seeks of absent or present users in
// random order, checking each answer, and derives the per-seek figures.
func (a *app) prefixPhase(ctx context.Context, desc string, s prefixStore, rep *prefixReport, seed uint64, present bool) (prefixPhase, error) {
	prog := a.startProgress(desc, int64(rep.Seeks))
	defer prog.done()
	want, odd := 0, uint64(1)
	if present {
		want, odd = len(prefixFields), 0
	}
	var prefix []byte
	before := s.counters().Total
	start := time.Now()
	for i := range rep.Seeks {
		if i%progressEvery == 0 && ctx.Err() != nil {
			return prefixPhase{}, ctx.Err()
		}
		id := 2*(mix64(seed^uint64(i)<<1|odd)%uint64(rep.Users)) + odd
		prefix = fmt.Appendf(prefix[:0], "user/%08d/", id)
		n, err := s.seekPrefix(prefix)
		if err != nil {
			return prefixPhase{}, err
		}
		if n != want {
			return prefixPhase{}, fmt.Errorf("prefix %s: %d keys, want %d", prefix, n, want)
		}
		prog.add(1)
	}
	p := prefixPhase{Seeks: rep.Seeks, NsPerSeek: jsonFloat(float64(time.Since(start).Nanoseconds()) / float64(rep.Seeks))}
	p.Lookups = s.counters().Total.minus(before)
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
