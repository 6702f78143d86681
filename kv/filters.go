package kv

import (
	"fmt"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// This file decides which filter policy each new table gets, and which
// policies readers know: Options.DisableFilters, Levels, FilterBudget,
// FilterPolicy and ExtraFilterPolicies.

// LevelOptions are the options of one level of the tree ([Options.Levels]).
type LevelOptions struct {
	// FilterPolicy builds the filters of tables flushed or compacted into
	// the level. nil means [Options.FilterBudget]'s sizing for the level if
	// a budget is set, else Options.FilterPolicy.
	FilterPolicy bloompolicy.FilterPolicy
}

// checkFilters validates the filter options: the policies' names, the
// length of Levels and the budget.
func (o *Options) checkFilters() error {
	if o.FilterPolicy.Name() == "" {
		return fmt.Errorf("kv: invalid options: FilterPolicy has an empty name")
	}
	if len(o.Levels) > manifest.NumLevels {
		return fmt.Errorf("kv: invalid options: Levels has %d entries for %d levels", len(o.Levels), manifest.NumLevels)
	}
	for i, l := range o.Levels {
		if l.FilterPolicy != nil && l.FilterPolicy.Name() == "" {
			return fmt.Errorf("kv: invalid options: Levels[%d].FilterPolicy has an empty name", i)
		}
	}
	for i, p := range o.ExtraFilterPolicies {
		if p == nil || p.Name() == "" {
			return fmt.Errorf("kv: invalid options: ExtraFilterPolicies[%d] is nil or unnamed", i)
		}
	}
	if o.FilterBudget != nil {
		if err := o.FilterBudget.Validate(); err != nil {
			return fmt.Errorf("kv: invalid options: FilterBudget: %w", err)
		}
	}
	return o.checkFilterCap()
}

// checkFilterCap refuses a cap on filter memory that some level's fixed
// policy would not respect: the cap chooses every new table's sizing.
func (o *Options) checkFilterCap() error {
	if o.FilterBudget == nil || o.FilterBudget.Bytes == 0 {
		return nil
	}
	for i, l := range o.Levels {
		if l.FilterPolicy != nil {
			return fmt.Errorf("kv: invalid options: Levels[%d].FilterPolicy fixes the level's filters, which a FilterBudget.Bytes cap must size", i)
		}
	}
	return nil
}

// filters returns the policies readers may use, by name: none with
// DisableFilters, else every policy the options name (FilterPolicy, Levels,
// the Bloom policy of FilterBudget, ExtraFilterPolicies), the first of each
// name.
func (o *Options) filters() map[string]bloompolicy.FilterPolicy {
	m := map[string]bloompolicy.FilterPolicy{}
	if o.DisableFilters {
		return m
	}
	add := func(p bloompolicy.FilterPolicy) {
		if _, ok := m[p.Name()]; !ok {
			m[p.Name()] = p
		}
	}
	add(o.FilterPolicy)
	for _, l := range o.Levels {
		if l.FilterPolicy != nil {
			add(l.FilterPolicy)
		}
	}
	if o.FilterBudget != nil {
		// Any Bloom reads every Bloom's filters, whatever their sizing; 10
		// bits per key is a valid argument, so there is no error.
		p, _ := bloompolicy.NewBitsPerKey(10)
		add(p)
	}
	for _, p := range o.ExtraFilterPolicies {
		add(p)
	}
	return m
}

// tableFilterLocked returns the policy of the tables a flush or compaction
// is about to write into level (nil: no filter). With a FilterBudget, the
// runs are those of the current version once the write is done: moving
// (the inputs that leave a level above for level) and, for a flush, a new
// L0 table of flushed keys. d.mu is held.
func (d *DB) tableFilterLocked(level int, moving []*manifest.FileMetadata, flushed int64) bloompolicy.FilterPolicy {
	o := d.opts
	switch {
	case o.DisableFilters:
		return nil
	case level < len(o.Levels) && o.Levels[level].FilterPolicy != nil:
		return o.Levels[level].FilterPolicy
	case o.FilterBudget == nil:
		return o.FilterPolicy
	}
	v := d.mu.versions.current
	if o.FilterBudget.Bytes > 0 {
		// A cap spends its bytes where the lookups served miss, on the
		// tree as it stands, as its passes do (filter_plan.go).
		w := capWrite{level: level, moving: moving, flushed: flushed}
		return capPolicy(v, d.filterMem.misses.Load(), o.FilterBudget.Bytes, o.BlockSize, d.filterMem.blockOverhead(),
			&w, d.filterMem.currentLoad())
	}
	runs, i := budgetRuns(v, d.picker.Shape(v, d.mu.compacting), level, moving, flushed)
	return budgetPolicy(runs, i, *o.FilterBudget)
}

// budgetPolicy returns the Bloom policy budget gives runs[i], nil if the
// run gets no filter. A budget the layout cannot meet (a sum of rates so
// small that some run would need more than bloompolicy.MaxBitsPerKey bits
// per key) gives the table the most bits there are.
func budgetPolicy(runs []bloompolicy.Runs, i int, budget bloompolicy.Budget) bloompolicy.FilterPolicy {
	var b *bloompolicy.Bloom
	filters, err := bloompolicy.Allocate(runs, budget)
	if err == nil {
		b, err = filters[i].Policy()
	} else {
		b, err = bloompolicy.RunFilter{BitsPerKey: bloompolicy.MaxBitsPerKey}.Policy()
	}
	if b == nil || err != nil {
		return nil // no filter: the budget gave this run none
	}
	return b
}

// budgetRuns returns the sorted runs of v as a filter budget sees them
// after a write into level, and the index of the run the new tables join.
// L0 tables are one run each (flushed > 0 adds one for the table being
// flushed, or for the tables of a merge within L0, moving, which leave
// their runs); levels L1 and deeper are one run each, of their keys, where
// moving's keys have left their level for level. A level from the base
// level down to above the deepest one holding keys counts at least its
// target size (shape.MaxBytes at the store's average bytes per entry): the
// size it settles at as the store grows, rather than what a compaction
// just left in it. Levels above the
// base level stay empty. The runs' Misses stay unset (Monkey's rule).
func budgetRuns(v *manifest.Version, shape compaction.Shape, level int,
	moving []*manifest.FileMetadata, flushed int64) ([]bloompolicy.Runs, int) {
	leaving := make(map[*manifest.FileMetadata]bool, len(moving))
	for _, f := range moving {
		leaving[f] = true
	}
	var keys [manifest.NumLevels]int64
	var runs []bloompolicy.Runs
	var totalKeys, totalBytes float64
	for l, files := range v.Levels {
		for _, f := range files {
			totalKeys += float64(f.NumEntries)
			totalBytes += float64(f.Size)
			switch {
			case leaving[f] && level == 0:
				// Merged within L0: flushed counts them.
			case leaving[f]:
				keys[level] += int64(f.NumEntries)
			case l == 0:
				runs = append(runs, bloompolicy.Runs{Count: 1, Keys: int64(f.NumEntries)})
			default:
				keys[l] += int64(f.NumEntries)
			}
		}
	}
	target := -1
	if level == 0 {
		target = len(runs)
		runs = append(runs, bloompolicy.Runs{Count: 1, Keys: flushed})
	}
	bottom := level
	for l := 1; l < manifest.NumLevels; l++ {
		if keys[l] > 0 {
			bottom = max(bottom, l)
		}
	}
	for l := 1; l <= bottom; l++ {
		n := keys[l]
		if l < bottom && l >= shape.BaseLevel && totalBytes > 0 {
			target := int64(float64(shape.MaxBytes[l]) * totalKeys / totalBytes)
			n = max(n, target)
		}
		if l == level {
			target = len(runs)
		}
		if n > 0 || l == level {
			runs = append(runs, bloompolicy.Runs{Count: 1, Keys: n})
		}
	}
	return runs, target
}
