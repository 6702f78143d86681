package kv

import (
	"math"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// This file is the traffic model of a store under a cap on filter memory:
// from the per-level lookup counters and each open table's own count of
// misses (sstable.Reader.Misses), decayed, the lookups per lookup served
// that reach each level and each table and miss there, which the plan
// (filter_plan.go) weighs the runs by.

// filterPriorLookups is the weight, in decayed lookups, of the prior
// belief that every lookup misses in every run (Monkey's assumption): it
// keeps a level that has seen no lookups yet from looking useless.
const filterPriorLookups = 1000

// filterHalfLife is the number of lookups over which the weight of those
// counted before halves, so that the allocation follows a workload that
// changes. It is counted in lookups rather than passes so that the
// allocation does not depend on how often the tree changes.
const filterHalfLife = 25_000

// trafficModel turns the per-level lookup counters into decayed misses
// per lookup.
type trafficModel struct {
	lastGets   int64
	lastMisses [manifest.NumLevels]int64
	lastL0     int // L0 tables at the last update
	gets       float64
	misses     [manifest.NumLevels]float64
	// l0Exposure is the decayed sum, over the lookups, of the L0 tables
	// there were to reach: L0's misses over it are one L0 table's.
	l0Exposure float64
	// tables follows each table of the Version by its own counter
	// (sstable.Reader.Misses) while it is open.
	tables map[base.FileNum]*tableTraffic
}

// tableTraffic is one table's decayed misses, and the decayed lookups
// served since the model first saw the table.
type tableTraffic struct {
	reader *sstable.Reader // the Reader whose counter last was read
	last   int64           // its count then
	misses float64
	gets   float64
}

// update folds the counters' growth since the last update into the
// sums, decayed by the lookups counted since (filterHalfLife), and
// returns the misses per lookup of each level, smoothed toward 1 by
// filterPriorLookups: for L1 and deeper the lookups that
// reach the level and miss there, per lookup served; for L0 those of one
// L0 table (L0's misses over the L0 tables the lookups had to ask: as
// many as at the last update, since a pass follows every change of the
// tree; l0 is the count now). nil when no lookup was ever counted. It
// also returns the lookups counted since the last update and the decay
// it applied, for updateTables.
func (t *trafficModel) update(m *dbMetrics, l0 int) (w *[manifest.NumLevels]float64, newGets, decay float64) {
	gets := m.gets.Load() + m.prefixSeeks.Load()
	newGets = float64(gets - t.lastGets)
	decay = math.Exp2(-newGets / filterHalfLife)
	t.gets = decay*t.gets + newGets
	t.l0Exposure = decay*t.l0Exposure + newGets*float64(t.lastL0)
	t.lastGets, t.lastL0 = gets, l0
	for l := range t.misses {
		c := &m.levels[l].lookups
		misses := c.tablesConsidered.Load() - c.found.Load()
		t.misses[l] = decay*t.misses[l] + float64(misses-t.lastMisses[l])
		t.lastMisses[l] = misses
	}
	if gets == 0 {
		return nil, newGets, decay
	}
	w = new([manifest.NumLevels]float64)
	for l := range w {
		w[l] = (t.misses[l] + filterPriorLookups) / (t.gets + filterPriorLookups)
	}
	w[0] = (t.misses[0] + filterPriorLookups) / (t.l0Exposure + filterPriorLookups)
	return w, newGets, decay
}

// updateTables folds each table's misses since the last update into its
// decayed sums, decayed as update decays the levels' (newGets lookups
// since, decay), and returns each table's misses per lookup. A table is
// expected to take its level's misses per lookup (w) in proportion to its
// entries (an L0 table, L0's per table); its own count over the lookups
// served since the model first saw it scales that by
//
//	(misses + filterTableEvidence) / (expected misses + filterTableEvidence)
//
// so that a table new to the model, or with few lookups yet, keeps its
// share, and a level's tables are then scaled together to the level's
// misses, the figure the counters of all its tables make. open names the
// open tables; a table not open has served no lookup since the last
// update, and counts from when the model first saw it open.
func (t *trafficModel) updateTables(v *manifest.Version, open map[base.FileNum]*tableEntry,
	w *[manifest.NumLevels]float64, newGets, decay float64) map[base.FileNum]float64 {
	seen := make(map[base.FileNum]*tableTraffic, len(t.tables))
	out := map[base.FileNum]float64{}
	for l, files := range v.Levels {
		var levelEntries, levelSum float64
		for _, f := range files {
			levelEntries += float64(f.NumEntries)
		}
		for _, f := range files {
			tt := t.tableTraffic(f.FileNum, open[f.FileNum], newGets, decay)
			seen[f.FileNum] = tt
			expected := w[l]
			if l > 0 && levelEntries > 0 {
				expected *= float64(f.NumEntries) / levelEntries
			}
			out[f.FileNum] = expected * (tt.misses + filterTableEvidence) / (expected*tt.gets + filterTableEvidence)
			levelSum += out[f.FileNum]
		}
		if l > 0 && levelSum > 0 {
			for _, f := range files {
				out[f.FileNum] *= w[l] / levelSum
			}
		}
	}
	t.tables = seen
	return out
}

// tableTraffic returns table num's traffic, its sums decayed and its
// counter, when open as e, read; a table new to the model counts from now.
func (t *trafficModel) tableTraffic(num base.FileNum, e *tableEntry, newGets, decay float64) *tableTraffic {
	tt := t.tables[num]
	if tt == nil {
		tt = &tableTraffic{}
		if e != nil {
			tt.reader, tt.last = e.reader, e.reader.Misses()
		}
	} else {
		tt.misses, tt.gets = decay*tt.misses, decay*tt.gets+newGets
	}
	if e == nil {
		return tt
	}
	n := e.reader.Misses()
	if e.reader != tt.reader || n < tt.last { // opened again since
		tt.reader, tt.last = e.reader, 0
	}
	tt.misses += float64(n - tt.last)
	tt.last = n
	return tt
}

// filterTableEvidence is the misses a table's own count must reach to
// move the table's weight far from its share of its level's: the weight
// is that share scaled by (misses + this) over (expected misses + this).
const filterTableEvidence = 100
