package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/cockroachdb/pebble/vfs"
)

// bench --writers: the write modes' fills (bench_writemodes.go) from
// several writers at once, each writer count in turn: how each mode's
// NoSync and Sync writes scale with the writers, and how they compare
// with Pebble's at the same count. With memtables large enough that no
// fill flushes (--memtable), the commit path alone is measured.

// maxBenchWriters bounds --writers.
const maxBenchWriters = 1024

// parseWriters reads --writers: writer counts separated by commas, each
// in [1, maxBenchWriters], none twice.
func parseWriters(s string) ([]int, error) {
	var counts []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxBenchWriters {
			return nil, usagef("--writers %q: %q is not a writer count in [1, %d]", s, f, maxBenchWriters)
		}
		if seen[n] {
			return nil, usagef("--writers %q: %d twice", s, n)
		}
		seen[n] = true
		counts = append(counts, n)
	}
	return counts, nil
}

// writersStudy is the result of bench --writers.
type writersStudy struct {
	Machine       string       `json:"machine"`
	Keys          int          `json:"nosync_keys"`
	SyncKeys      int          `json:"sync_keys"`
	ValueSize     int          `json:"value_size"`
	MemTableBytes int64        `json:"memtable_bytes"`
	Rounds        int          `json:"rounds"`
	Seconds       jsonFloat    `json:"seconds"`
	Rows          []writersRow `json:"rows"`
}

// writersRow is one mode's fills at one writer count.
type writersRow struct {
	Writers int `json:"writers"`
	writeModeRow
	// NoSyncScaling and SyncScaling are the mode's throughput over its
	// own with one writer (its best time per Set with one writer over
	// this count's); NaN without a one-writer run.
	NoSyncScaling jsonFloat `json:"nosync_throughput_vs_one_writer"`
	SyncScaling   jsonFloat `json:"sync_throughput_vs_one_writer"`
}

// runWriters runs the study: for each count of --writers, the write
// modes' fills from that many writers, --rounds rounds, the modes taking
// turns.
func (a *app) runWriters(ctx context.Context, o benchOptions, ours *bloompolicy.Bloom) error {
	root, cleanup, err := benchDir(o)
	if err != nil {
		return err
	}
	defer cleanup()
	t := time.Now()
	modes := o.writeModes(ours)
	run := o.writeModeRun()
	s := &writersStudy{Machine: machine(), Keys: run.Keys, SyncKeys: run.SyncKeys, ValueSize: run.ValueSize,
		MemTableBytes: int64(o.memtable), Rounds: run.Rounds}
	for _, n := range o.writers {
		run.Writers = n
		start := func(desc string, total int64) bench.Progress {
			return benchProgress{a.startProgress(fmt.Sprintf("%d writers: %s", n, desc), total)}
		}
		results, err := bench.RunWriteModes(ctx, vfs.Default, filepath.Join(root, fmt.Sprintf("writers-%d", n)),
			modes, run, start)
		if err != nil {
			return err
		}
		for _, r := range writeModeRows(results) {
			s.Rows = append(s.Rows, writersRow{Writers: n, writeModeRow: r})
		}
	}
	s.scale()
	s.Seconds = jsonFloat(time.Since(t).Seconds())
	if o.markdown != "" {
		var b bytes.Buffer
		if err := s.markdown(&b, o.command, time.Now()); err != nil {
			return err
		}
		if err := writeFile(vfs.Default, o.markdown, &b); err != nil {
			return err
		}
	}
	if a.json {
		return writeJSON(a.stdout, s)
	}
	fmt.Fprintf(a.stdout, "writers (%.1f s; %s): %s\n", float64(s.Seconds), s.Machine, s.intro())
	return writeTables(a.stdout, s.table())
}

// scale sets each row's scaling against its mode's one-writer row.
func (s *writersStudy) scale() {
	one := map[string]writeModeRow{}
	for _, r := range s.Rows {
		if r.Writers == 1 {
			one[r.Mode] = r.writeModeRow
		}
	}
	for i := range s.Rows {
		r := &s.Rows[i]
		base, ok := one[r.Mode]
		if !ok {
			r.NoSyncScaling, r.SyncScaling = jsonFloat(math.NaN()), jsonFloat(math.NaN())
			continue
		}
		r.NoSyncScaling = jsonFloat(ratio(float64(base.BestNoSyncNs), float64(r.BestNoSyncNs)))
		r.SyncScaling = jsonFloat(ratio(float64(base.BestSyncNs), float64(r.BestSyncNs)))
	}
}

// intro says what the study measured.
func (s *writersStudy) intro() string {
	return fmt.Sprintf("One Set per write into an empty store with %s memtables, from each count of writers at once, "+
		"writer w writing the keys i ≡ w (mod writers): %d keys of %d B values NoSync, then %d Sync into another store. "+
		"The modes take turns over %d round(s) at each count; times are the best round's, the fill's wall time over its "+
		"writes. ÷ Pebble: time per Set over Pebble's at the same count (below 1: bloomkv ahead). "+
		"× 1 writer: the mode's throughput over its own with one writer. Sync Sets per WAL sync: in the best Sync "+
		"round, how many writers shared each sync of the WAL (bloomkv's Metrics().WAL.Syncs; for Pebble, the syncs "+
		"of its WAL files, counted through its vfs.FS).",
		fmtBytes(s.MemTableBytes), s.Keys, s.ValueSize, s.SyncKeys, s.Rounds)
}

// table has a line per writer count and mode.
func (s *writersStudy) table() *table {
	t := newTable(">writers", "mode", ">ns per NoSync Set", ">÷ Pebble", ">× 1 writer",
		">ns per Sync Set", ">÷ Pebble", ">× 1 writer", ">Sync Sets per WAL sync")
	for _, r := range s.Rows {
		t.add(strconv.Itoa(r.Writers), r.Mode,
			fmtFloat(float64(r.BestNoSyncNs), 0), fmtRatio(float64(r.NoSyncVsPebble), 1), fmtScale(r.NoSyncScaling),
			fmtFloat(float64(r.BestSyncNs), 0), fmtRatio(float64(r.SyncVsPebble), 1), fmtScale(r.SyncScaling),
			fmtFloat(float64(r.SetsPerSync), 2))
	}
	return t
}

// fmtScale formats a throughput ratio as "3.10x", "-" when NaN.
func fmtScale(x jsonFloat) string { return fmtRatio(float64(x), 1) }

// markdown writes the study as a page: the command line that made it,
// the machine, the Go version and the date, then the table.
func (s *writersStudy) markdown(w io.Writer, command string, now time.Time) error {
	fmt.Fprintf(w, "# Writers: how writes scale with the writers\n\n"+
		"Generated by `%s` on %s (%s). Do not edit: rerun the command.\n\n%s\n\n",
		command, now.UTC().Format("2006-01-02"), markdownMachine(), s.intro())
	return s.table().markdown(w)
}
