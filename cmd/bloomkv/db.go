package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/spf13/cobra"
)

func (a *app) dbCommand() *cobra.Command {
	var dir string
	cmd := commandGroup("db", "Read and write a bloomkv store on disk",
		"db works on the store in --dir: get, set and delete keys, scan a range, "+
			"and print the per-level metrics with the lookup accounting; checkpoint it, ingest "+
			"tables into it, estimate its disk usage. Writes are synced. "+
			"set and ingest create the store (and the directory) when --dir holds none; the other "+
			"commands need an existing store and create nothing, and get, scan, metrics, checkpoint "+
			"and disk-usage open it read-only: they change none of its files.")
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "store directory (required)")
	a.addSplitFlag(cmd)
	cmd.PersistentFlags().BoolVar(&a.verbose, "verbose", false,
		"log the store's background events (WALs and tables created and deleted, flushes, compactions, write stalls) on stderr")
	cmd.AddCommand(a.dbGetCommand(&dir), a.dbSetCommand(&dir), a.dbDeleteCommand(&dir),
		a.dbDeleteRangeCommand(&dir), a.dbScanCommand(&dir), a.dbMetricsCommand(&dir),
		a.dbCheckpointCommand(&dir), a.dbIngestCommand(&dir), a.dbDiskUsageCommand(&dir))
	return cmd
}

// dbAccess is what a db command does to its store.
type dbAccess int

const (
	// dbRead reads: the store is opened read-only (kv.Options.ReadOnly),
	// and none of its files changes.
	dbRead dbAccess = iota
	// dbWrite writes to a store that exists.
	dbWrite
	// dbCreate writes, creating the store where there is none.
	dbCreate
)

// openDB opens the store in dir under the comparer --split gives, for
// access. Commands other than set and ingest refuse to create one
// (kv.Options.ErrorIfNotExists), so a mistyped --dir is an error, not an
// empty store. Tables built with Pebble's bloom (bench's third store) are
// read with their filters too. It warns about tables whose filters were
// built under another Split, which the store then reads without them; the
// store's own warnings (kv.Options.Logger) go to stderr. With --verbose
// the store's events are logged on stderr too.
func (a *app) openDB(dir string, access dbAccess) (*kv.DB, error) {
	if dir == "" {
		return nil, usagef("--dir is required")
	}
	cmp, err := a.comparer()
	if err != nil {
		return nil, err
	}
	o := &kv.Options{ErrorIfNotExists: access != dbCreate, ReadOnly: access == dbRead,
		ExtraFilterPolicies: readableFilters(), Comparer: cmp, Logger: stderrLogger{a}}
	if a.verbose {
		o.EventListener = a.eventLogger()
	}
	db, err := kv.Open(dir, o)
	if errors.Is(err, kv.ErrDBDoesNotExist) {
		return nil, fmt.Errorf("no bloomkv store in %s (db set creates one)", dir)
	}
	if err != nil {
		return nil, err
	}
	props, err := storeTableProperties(dir, cmp)
	if err != nil {
		db.Close()
		return nil, err
	}
	a.warnSplits(dir, props, cmp)
	return db, nil
}

// withDB runs fn on the store in dir and closes it, reporting the first
// error.
func (a *app) withDB(dir string, access dbAccess, fn func(db *kv.DB) error) error {
	db, err := a.openDB(dir, access)
	if err != nil {
		return err
	}
	err = fn(db)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// eventLogger returns a listener logging each event as a line on stderr,
// "bloomkv: event: ...". The store's events come from a goroutine of its
// own, so stderr is then shared under a lock.
func (a *app) eventLogger() *kv.EventListener {
	w := &lockedWriter{w: a.stderr}
	a.stderr = w
	l := kv.MakeLoggingEventListener(kv.LoggerFunc(func(format string, args ...any) {
		fmt.Fprintf(w, "bloomkv: event: "+format+"\n", args...)
	}))
	return &l
}

// lockedWriter serializes the writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// keyValue is one entry as get and scan print it with --json.
type keyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func (a *app) dbGetCommand(dir *string) *cobra.Command {
	var metrics bool
	cmd := &cobra.Command{
		Use:   "get KEY...",
		Short: "Print each key found with its value (and, with --metrics, how the lookups went)",
		Long: "get looks each KEY up and prints the ones found as scan does, \"KEY<tab>VALUE\" " +
			"(with --json, a list of {key, value}), in the order given. Each key not found is " +
			"reported on stderr, and the exit status is then 1.",
		Args: oneOrMoreArgs("KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withDB(*dir, dbRead, func(db *kv.DB) error { return a.get(db, args, metrics) })
		},
	}
	cmd.Flags().BoolVar(&metrics, "metrics", false, "print the per-level lookup accounting of these gets")
	return cmd
}

// get prints the keys found, reports each one missing on stderr and then
// fails with errReported.
func (a *app) get(db *kv.DB, keys []string, metrics bool) error {
	found := []keyValue{}
	missing := false
	for _, k := range keys {
		v, err := db.Get([]byte(k))
		switch {
		case errNotFound(err):
			missing = true
			fmt.Fprintf(a.stderr, "bloomkv: get %s: not found\n", fmtKey([]byte(k)))
		case err != nil:
			return fmt.Errorf("get %s: %w", fmtKey([]byte(k)), err)
		default:
			found = append(found, keyValue{k, string(v)})
		}
	}
	if err := a.printGets(db, found, metrics); err != nil {
		return err
	}
	if missing {
		return errReported
	}
	return nil
}

func (a *app) printGets(db *kv.DB, kvs []keyValue, metrics bool) error {
	if a.json {
		if metrics {
			return writeJSON(a.stdout, struct {
				Values  []keyValue   `json:"values"`
				Metrics dbMetricsOut `json:"metrics"`
			}{kvs, dbMetrics(db)})
		}
		return writeJSON(a.stdout, kvs)
	}
	for _, e := range kvs {
		a.printEntry([]byte(e.Key), []byte(e.Value))
	}
	if metrics {
		fmt.Fprintln(a.stdout)
		return a.writeMetrics(dbMetrics(db))
	}
	return nil
}

func (a *app) dbSetCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set a key to a value (synced; creates the store if --dir holds none)",
		Args:  exactArgs("KEY", "VALUE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withDB(*dir, dbCreate, func(db *kv.DB) error {
				return db.Set([]byte(args[0]), []byte(args[1]), kv.Sync)
			})
		},
	}
}

func (a *app) dbDeleteCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "delete KEY",
		Short: "Delete a key (synced; deleting an absent key is not an error)",
		Args:  exactArgs("KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withDB(*dir, dbWrite, func(db *kv.DB) error {
				return db.Delete([]byte(args[0]), kv.Sync)
			})
		},
	}
}

func (a *app) dbDeleteRangeCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "delete-range START END",
		Short: "Delete every key from START up to END, END excluded (synced; an empty range deletes nothing)",
		Args:  exactArgs("START", "END"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withDB(*dir, dbWrite, func(db *kv.DB) error {
				return db.DeleteRange([]byte(args[0]), []byte(args[1]), kv.Sync)
			})
		},
	}
}

func (a *app) dbScanCommand(dir *string) *cobra.Command {
	var start, end string
	var limit int
	cmd := &cobra.Command{
		Use:   "scan",
		Short: "Print the keys and values in [--start, --end), in order",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usagef("--limit %d: want 0 (no limit) or more", limit)
			}
			opts := &kv.IterOptions{}
			if cmd.Flags().Changed("start") {
				opts.LowerBound = []byte(start)
			}
			if cmd.Flags().Changed("end") {
				opts.UpperBound = []byte(end)
			}
			if opts.LowerBound != nil && opts.UpperBound != nil && bytes.Compare(opts.LowerBound, opts.UpperBound) > 0 {
				return usagef("--start %q is after --end %q: the range [start, end) is inverted", start, end)
			}
			return a.withDB(*dir, dbRead, func(db *kv.DB) error { return a.scan(db, opts, limit) })
		},
	}
	cmd.Flags().StringVar(&start, "start", "", "first key (inclusive; default: the first key)")
	cmd.Flags().StringVar(&end, "end", "", "key to stop before (exclusive; default: after the last key)")
	cmd.Flags().IntVar(&limit, "limit", 0, "print at most this many entries (0: all)")
	return cmd
}

func (a *app) scan(db *kv.DB, opts *kv.IterOptions, limit int) (err error) {
	it, err := db.NewIter(opts)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	var out []keyValue
	n := 0
	for it.First(); it.Valid() && (limit == 0 || n < limit); it.Next() {
		n++
		if a.json {
			out = append(out, keyValue{string(it.Key()), string(it.Value())})
			continue
		}
		a.printEntry(it.Key(), it.Value())
	}
	if err := it.Error(); err != nil {
		return err
	}
	if a.json {
		if out == nil {
			out = []keyValue{}
		}
		return writeJSON(a.stdout, out)
	}
	return nil
}

// printEntry prints one entry as get and scan do: "KEY<tab>VALUE", each
// quoted when not plain printable text.
func (a *app) printEntry(key, value []byte) {
	fmt.Fprintf(a.stdout, "%s\t%s\n", fmtKey(key), fmtKey(value))
}

func (a *app) dbMetricsCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "metrics",
		Short: "Print the per-level metrics of the store, with the lookup accounting",
		Long: "metrics prints, per level, the tables, bytes, keys and filter bytes, and the " +
			"lookup counters. Counters live in memory: they count the lookups of this " +
			"process, so they are zero here; `db get --metrics` shows them for its keys.",
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withDB(*dir, dbRead, func(db *kv.DB) error {
				m := dbMetrics(db)
				if a.json {
					return writeJSON(a.stdout, m)
				}
				return a.writeMetrics(m)
			})
		},
	}
}

// dbLevel is one row of the metrics table.
type dbLevel struct {
	Level       string       `json:"level"`
	Tables      int          `json:"tables"`
	Bytes       int64        `json:"bytes"`
	Keys        int64        `json:"keys"`
	FilterBytes int64        `json:"filter_bytes"`
	BitsPerKey  jsonFloat    `json:"filter_bits_per_key"`
	Lookups     lookupCounts `json:"lookups"`
	FPR         jsonFloat    `json:"observed_fpr"`
}

// dbMetricsOut is what metrics prints.
type dbMetricsOut struct {
	Levels []dbLevel `json:"levels"`
	Total  dbLevel   `json:"total"`
}

func dbMetrics(db *kv.DB) dbMetricsOut {
	m := db.Metrics()
	var out dbMetricsOut
	out.Total.Level = "total"
	for i, l := range m.Levels {
		row := dbLevel{Level: fmt.Sprintf("L%d", i), Tables: l.NumFiles, Bytes: l.Size,
			Keys: l.Keys, FilterBytes: l.FilterBytes, Lookups: fromLookupMetrics(l.Lookups)}
		row.derive()
		out.Levels = append(out.Levels, row)
		out.Total.Tables += row.Tables
		out.Total.Bytes += row.Bytes
		out.Total.Keys += row.Keys
		out.Total.FilterBytes += row.FilterBytes
	}
	out.Total.Lookups = fromLookupMetrics(m.Lookups)
	out.Total.derive()
	return out
}

func (l *dbLevel) derive() {
	l.BitsPerKey = jsonFloat(ratio(8*float64(l.FilterBytes), float64(l.Keys)))
	l.FPR = jsonFloat(l.Lookups.observedFPR())
}

func fromLookupMetrics(l kv.LookupMetrics) lookupCounts {
	return lookupCounts{
		Gets:                 l.Gets,
		TablesConsidered:     l.TablesConsidered,
		FilterNegatives:      l.FilterNegatives,
		FilterTruePositives:  l.FilterTruePositives,
		FilterFalsePositives: l.FilterFalsePositives,
		PrefixMatches:        l.PrefixMatches,
		FilterSkipped:        l.FilterSkipped,
		BlockReads:           l.BlockReads,
		BlockCacheMisses:     l.BlockCacheMisses,
	}
}

func (a *app) writeMetrics(m dbMetricsOut) error {
	t := newTable("level", ">tables", ">size", ">keys", ">filter", ">bits/key", ">gets",
		">tables considered", ">filter neg", ">true pos", ">false pos", ">prefix match", ">FPR",
		">filter skipped", ">block reads", ">cache misses")
	for _, l := range append(m.Levels, m.Total) {
		c := l.Lookups
		t.add(l.Level, fmt.Sprint(l.Tables), fmtBytes(l.Bytes), fmt.Sprint(l.Keys), fmtBytes(l.FilterBytes),
			fmtFloat(float64(l.BitsPerKey), 2), fmt.Sprint(c.Gets), fmt.Sprint(c.TablesConsidered),
			fmt.Sprint(c.FilterNegatives), fmt.Sprint(c.FilterTruePositives), fmt.Sprint(c.FilterFalsePositives),
			fmt.Sprint(c.PrefixMatches), fmtPercent(float64(l.FPR), 2), fmt.Sprint(c.FilterSkipped),
			fmt.Sprint(c.BlockReads), fmt.Sprint(c.BlockCacheMisses))
	}
	return t.write(a.stdout)
}

// errNotFound reports whether err is the store's "no such key".
func errNotFound(err error) bool { return errors.Is(err, kv.ErrNotFound) }
