package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// bench's write-modes section: what each WAL mode promises an
// acknowledged NoSync write after a crash of the process, beside what a
// write costs in it, one Set per write, NoSync and Sync
// (bench.RunWriteModes). Pebble runs with --pebble.

// writeModesSection is the section's result.
type writeModesSection struct {
	Rounds  int            `json:"rounds"`
	Seconds jsonFloat      `json:"seconds"` // the section's, stores opened and closed included
	Rows    []writeModeRow `json:"modes"`
}

// writeModeRow is one mode's promise and times.
type writeModeRow struct {
	Mode     string      `json:"mode"`
	Engine   string      `json:"engine"`
	Promise  string      `json:"promise_after_process_crash"`
	Keys     int         `json:"nosync_keys"`
	SyncKeys int         `json:"sync_keys"`
	NoSyncNs []jsonFloat `json:"nosync_ns_per_set_by_round"`
	SyncNs   []jsonFloat `json:"sync_ns_per_set_by_round"`
	// BestNoSyncNs and BestSyncNs are the best (lowest) rounds'.
	BestNoSyncNs jsonFloat `json:"nosync_ns_per_set"`
	BestSyncNs   jsonFloat `json:"sync_ns_per_set"`
	// NoSyncVsPebble and SyncVsPebble divide the best times by Pebble's;
	// NaN without Pebble.
	NoSyncVsPebble jsonFloat `json:"nosync_vs_pebble"`
	SyncVsPebble   jsonFloat `json:"sync_vs_pebble"`
	// SetsPerSync is the best Sync round's Sets per sync of the WAL:
	// how many writers shared each (bench.WriteModeResult.SetsPerSync).
	SetsPerSync jsonFloat `json:"sync_sets_per_wal_sync"`
}

// writeModes returns the modes bench runs: bloomkv's two, with the
// bench's sizes and bloompolicy's filter, and with --pebble Pebble's,
// with its bloom at the nearest whole bits per key.
func (o benchOptions) writeModes(ours *bloompolicy.Bloom) []bench.WriteMode {
	kvOpts := func() *kv.Options {
		opts := o.sizes().KVOptions()
		opts.FilterPolicy = ours
		return opts
	}
	pebbleOpts := func() *pebble.Options {
		opts := o.sizes().PebbleOptions()
		bench.WithPebbleFilter(opts, bloom.FilterPolicy(pebbleBits(ours.BitsPerKey())))
		return opts
	}
	var modes []bench.WriteMode
	for _, m := range bench.WriteModes(kvOpts, pebbleOpts) {
		if m.Engine != enginePebble || o.pebble {
			modes = append(modes, m)
		}
	}
	return modes
}

// writeModeRun is what the section does in each mode: --keys NoSync
// Sets, a 500th as many Sync ones (bench.SyncFillKeys), --rounds
// rounds.
func (o benchOptions) writeModeRun() bench.WriteModeRun {
	return bench.WriteModeRun{Keys: o.keys, SyncKeys: bench.SyncFillKeys(o.keys), ValueSize: o.valueSize,
		Rounds: o.rounds, Gen: bench.NewKeyGen(o.seed)}
}

// benchWriteModes runs the section in root/write-modes, unless --rounds
// is 0.
func (a *app) benchWriteModes(ctx context.Context, root string, o benchOptions, ours *bloompolicy.Bloom) (*writeModesSection, error) {
	if o.rounds == 0 {
		return nil, nil
	}
	start := func(desc string, total int64) bench.Progress {
		return benchProgress{a.startProgress("write modes: "+desc, total)}
	}
	t := time.Now()
	results, err := bench.RunWriteModes(ctx, vfs.Default, filepath.Join(root, "write-modes"), o.writeModes(ours),
		o.writeModeRun(), start)
	if err != nil {
		return nil, err
	}
	return &writeModesSection{Rounds: o.rounds, Seconds: jsonFloat(time.Since(t).Seconds()),
		Rows: writeModeRows(results)}, nil
}

// writeModeRows converts the section's results into rows, with their
// ratios to Pebble's row when there is one.
func writeModeRows(results []bench.WriteModeResult) []writeModeRow {
	rows := make([]writeModeRow, len(results))
	var pebbleRow *writeModeRow
	for i, r := range results {
		rows[i] = writeModeRow{Mode: r.Mode.Name, Engine: r.Mode.Engine, Promise: r.Mode.Promise,
			Keys: r.Keys, SyncKeys: r.SyncKeys,
			NoSyncNs: perSet(r.NoSync, r.Keys), SyncNs: perSet(r.Sync, r.SyncKeys),
			BestNoSyncNs: jsonFloat(r.NsPerSet()), BestSyncNs: jsonFloat(r.NsPerSyncSet()),
			SetsPerSync: jsonFloat(r.SetsPerSync())}
		if r.Mode.Engine == enginePebble {
			pebbleRow = &rows[i]
		}
	}
	var p writeModeRow // zero without Pebble: the ratios are then NaN
	if pebbleRow != nil {
		p = *pebbleRow
	}
	for i := range rows {
		rows[i].NoSyncVsPebble = jsonFloat(ratio(float64(rows[i].BestNoSyncNs), float64(p.BestNoSyncNs)))
		rows[i].SyncVsPebble = jsonFloat(ratio(float64(rows[i].BestSyncNs), float64(p.BestSyncNs)))
	}
	return rows
}

// perSet returns each round's time per Set of a fill of n keys.
func perSet(rounds []time.Duration, n int) []jsonFloat {
	out := make([]jsonFloat, len(rounds))
	for i, d := range rounds {
		out[i] = jsonFloat(bench.NsPerWrite(d, n))
	}
	return out
}

// intro says what the section measured.
func (s *writeModesSection) intro() string {
	rows, rounds := s.Rows, s.Rounds
	return fmt.Sprintf("One Set per write from one writer into an empty store with the sizes above: %d keys NoSync, "+
		"then %d Sync into another store; flushes and compactions run meanwhile. The modes take turns over %d rounds; "+
		"times are the best round's. Promise: what becomes of an acknowledged NoSync write when the process crashes "+
		"(the machine staying up); a Sync write survives a power loss in every mode.",
		rows[0].Keys, rows[0].SyncKeys, rounds)
}

// writeModesTable has a line per mode: its promise, its best times and
// their ratios to Pebble's.
func writeModesTable(rows []writeModeRow) *table {
	t := newTable("mode", "promise after a process crash", ">ns per NoSync Set", ">÷ Pebble",
		">ns per Sync Set", ">÷ Pebble")
	for _, r := range rows {
		t.add(r.Mode, r.Promise, fmtFloat(float64(r.BestNoSyncNs), 0), fmtRatio(float64(r.NoSyncVsPebble), 1),
			fmtFloat(float64(r.BestSyncNs), 0), fmtRatio(float64(r.SyncVsPebble), 1))
	}
	return t
}

// writeWriteModes prints the section, if it ran.
func writeWriteModes(w io.Writer, s *writeModesSection) error {
	if s == nil || len(s.Rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nwrite modes (%.1f s): %s\n", float64(s.Seconds), s.intro())
	return writeTables(w, writeModesTable(s.Rows))
}

// writeModesMarkdown writes the section as a titled table, if it ran.
func writeModesMarkdown(w io.Writer, s *writeModesSection) error {
	if s == nil || len(s.Rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s\n\n%s\n\n", writeModesTitle, s.intro())
	return writeModesTable(s.Rows).markdown(w)
}

// writeModesTitle is the heading of the section on the page, which the
// README's modes table quotes.
const writeModesTitle = "## Write modes: what an acknowledged NoSync write survives, and what a write costs"
