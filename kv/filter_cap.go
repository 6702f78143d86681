package kv

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// This file keeps the filter memory of a store under a cap
// (Options.FilterBudget with Bytes set): which tables hold their filter
// blocks in memory, and what the lookups the store serves say about where
// filters save reads.
//
// Every table keeps its filter on disk, whatever happens here. A table
// whose filter is not held is opened without it (sstable.ReaderOptions.
// DeferFilter) and read as a table without a filter: each lookup that
// considers it reads a data block. After every change of Version a
// background pass (rebalance) ranks the tables by the reads their filters
// save per byte, marks as many as fit the cap, drops the filters of the
// others from the open tables, then loads the marked ones. A filter is
// loaded only after its bytes are reserved against the cap, so the bytes
// held never exceed it, whatever the order in which passes and lookups
// open, drop and load.

// filterHolder counts the filter bytes the open tables hold and, under a
// cap, decides which tables may hold theirs.
type filterHolder struct {
	d   *DB
	cap int64 // bytes; 0: no cap, every table holds its filter

	held    atomic.Int64 // filter bytes of the open tables that hold theirs
	notHeld atomic.Int64 // tables of the last pass's Version whose filter the cap leaves out
	// leftOut is the set of tables whose filter the last pass left out.
	// A table it does not name (one written since) may hold its filter
	// if the bytes fit, until the next pass decides.
	leftOut atomic.Pointer[map[base.FileNum]bool]
	// misses is the traffic model's per-level misses per lookup (nil
	// before any lookup), for sizing new tables.
	misses atomic.Pointer[[manifest.NumLevels]float64]

	mu      sync.Mutex // serialises passes; guards traffic
	traffic trafficModel

	// running and again, under d.mu, schedule passes: one goroutine runs
	// them, again asks it for one more.
	running, again bool
}

// filterPriorLookups is the weight, in decayed lookups, of the prior
// belief that every lookup misses in every run (Monkey's assumption): it
// keeps a level that has seen no lookups yet from looking useless.
const filterPriorLookups = 1000

// filterDecay is the weight of the lookups counted before a pass against
// those counted since: each pass halves the history, so the allocation
// follows a workload that changes over a few flushes.
const filterDecay = 0.5

// trafficModel turns the per-level lookup counters into decayed misses
// per lookup.
type trafficModel struct {
	lastGets   int64
	lastMisses [manifest.NumLevels]int64
	gets       float64
	misses     [manifest.NumLevels]float64
}

// update folds the counters' growth since the last update into the
// decayed sums and returns each level's misses per lookup, smoothed
// toward 1 by filterPriorLookups; nil when no lookup was ever counted.
func (t *trafficModel) update(m *dbMetrics) *[manifest.NumLevels]float64 {
	gets := m.gets.Load() + m.prefixSeeks.Load()
	t.gets = filterDecay*t.gets + float64(gets-t.lastGets)
	t.lastGets = gets
	for l := range t.misses {
		c := &m.levels[l].lookups
		misses := c.tablesConsidered.Load() - c.found.Load()
		t.misses[l] = filterDecay*t.misses[l] + float64(misses-t.lastMisses[l])
		t.lastMisses[l] = misses
	}
	if gets == 0 {
		return nil
	}
	var w [manifest.NumLevels]float64
	for l := range w {
		w[l] = (t.misses[l] + filterPriorLookups) / (t.gets + filterPriorLookups)
	}
	return &w
}

// newFilterHolder returns the holder of o's filter memory.
func newFilterHolder(d *DB, o *Options) *filterHolder {
	h := &filterHolder{d: d}
	if o.FilterBudget != nil && !o.DisableFilters {
		h.cap = o.FilterBudget.Bytes
	}
	return h
}

// mayHold reports whether table num may hold its filter: unless the last
// pass left it out.
func (h *filterHolder) mayHold(num base.FileNum) bool {
	leftOut := h.leftOut.Load()
	return leftOut == nil || !(*leftOut)[num]
}

// reserve charges n bytes against the cap and reports whether they fit.
func (h *filterHolder) reserve(n int64) bool {
	for {
		held := h.held.Load()
		if h.cap > 0 && held+n > h.cap {
			return false
		}
		if h.held.CompareAndSwap(held, held+n) {
			return true
		}
	}
}

// hold loads the filter of open table e if it may hold it and its bytes
// fit. A filter that fails to load (a corrupt block) is left out: the
// table stays readable without it. A table that may hold its filter but
// finds no room (filters the next pass drops still held) asks for a
// pass, which decides for it.
func (h *filterHolder) hold(e *tableEntry) {
	if !h.mayHold(e.num) || e.reader.FilterHeld() || !e.reader.HasFilter() {
		return
	}
	if !h.reserve(e.filterBytes) {
		h.d.mu.Lock()
		h.scheduleLocked()
		h.d.mu.Unlock()
		return
	}
	if loaded, err := e.reader.LoadFilter(); !loaded || err != nil {
		h.held.Add(-e.filterBytes)
	}
}

// opened counts the filter of a table just opened: held already without a
// cap, loaded now if the cap allows under one.
func (h *filterHolder) opened(e *tableEntry) {
	if h.cap > 0 {
		h.hold(e)
	} else if e.reader.FilterHeld() {
		h.held.Add(e.filterBytes)
	}
}

// drop lets go of open table e's filter, if held.
func (h *filterHolder) drop(e *tableEntry) {
	if e.reader.DropFilter() {
		h.held.Add(-e.filterBytes)
	}
}

// scheduleLocked asks for a pass over the current Version, when there is
// a cap. d.mu is held.
func (h *filterHolder) scheduleLocked() {
	d := h.d
	switch {
	case h.cap == 0 || d.closed.Load():
	case h.running:
		h.again = true
	default:
		h.running = true
		d.bgWG.Add(1)
		go h.passes()
	}
}

// passes runs passes until none is asked for.
func (h *filterHolder) passes() {
	d := h.d
	defer d.bgWG.Done()
	for {
		h.rebalance()
		d.mu.Lock()
		again := h.again && !d.closed.Load()
		h.again, h.running = false, again
		if !again {
			d.mu.cond.Broadcast() // WaitIdle waits for the passes too
		}
		d.mu.Unlock()
		if !again {
			return
		}
	}
}

// rebalance updates the traffic model, chooses the tables of the current
// Version that hold their filters under the cap, and makes the open
// tables follow: drops first, so that the loads find room.
func (h *filterHolder) rebalance() {
	d := h.d
	h.mu.Lock()
	defer h.mu.Unlock()
	d.mu.Lock()
	v := d.mu.versions.current
	v.Ref()
	d.mu.Unlock()
	defer d.unrefVersion(v)

	misses := h.traffic.update(&d.metrics)
	h.misses.Store(misses)
	allowed, leftOut := chooseHeld(v, misses, h.cap)
	h.leftOut.Store(&leftOut)
	h.notHeld.Store(int64(len(leftOut)))
	entries := d.tableCache.refAll()
	defer d.tableCache.releaseAll(entries)
	newest := newestTable(v)
	for _, e := range entries {
		// Left out, or gone from the Version (obsolete): a table written
		// since v, numbered above its tables, waits for the next pass.
		if leftOut[e.num] || (!allowed[e.num] && e.num <= newest) {
			h.drop(e)
		}
	}
	for _, e := range entries {
		if d.closed.Load() {
			return
		}
		h.hold(e)
	}
}

// newestTable returns the highest file number of v's tables.
func newestTable(v *manifest.Version) base.FileNum {
	var n base.FileNum
	for _, files := range v.Levels {
		for _, f := range files {
			n = max(n, f.FileNum)
		}
	}
	return n
}

// heldCandidate is a table whose filter may be held, and the reads per
// lookup it saves per byte.
type heldCandidate struct {
	f     *manifest.FileMetadata
	score float64
}

// chooseHeld returns the tables of v that hold their filters under cap
// bytes, and those with a filter it leaves out. Each table's
// filter saves w*(1-p) reads per lookup, w being the lookups that reach
// the table and miss there (the level's misses per lookup, spread over its
// tables by their entries; an L0 table takes the level's share per table)
// and p its rate at the bits per key it was written with. Without traffic
// (misses nil) every lookup counts as reaching every run and missing, as
// Monkey assumes. Tables are taken by saved reads per byte, best first,
// while they fit.
func chooseHeld(v *manifest.Version, misses *[manifest.NumLevels]float64, cap int64) (allowed, leftOut map[base.FileNum]bool) {
	var cands []heldCandidate
	for l, files := range v.Levels {
		var levelEntries float64
		for _, f := range files {
			levelEntries += float64(f.NumEntries)
		}
		w := 1.0
		if misses != nil {
			w = misses[l]
		}
		for _, f := range files {
			if f.FilterBytes == 0 || f.NumEntries == 0 {
				continue
			}
			reach := w / float64(len(files)) // L0: each table is a run the lookup reaches
			if l > 0 {
				reach = w * float64(f.NumEntries) / levelEntries
			}
			p := bloompolicy.ModelFPR(8 * float64(f.FilterBytes) / float64(f.NumEntries))
			cands = append(cands, heldCandidate{f: f, score: reach * (1 - p) / float64(f.FilterBytes)})
		}
	}
	slices.SortStableFunc(cands, func(a, b heldCandidate) int { return cmp.Compare(b.score, a.score) })
	allowed, leftOut = make(map[base.FileNum]bool, len(cands)), map[base.FileNum]bool{}
	var used int64
	for _, c := range cands {
		if used+int64(c.f.FilterBytes) > cap {
			leftOut[c.f.FileNum] = true
			continue
		}
		used += int64(c.f.FilterBytes)
		allowed[c.f.FileNum] = true
	}
	return allowed, leftOut
}

// capBudget returns the budget that sizes new tables under a cap, for a
// tree of v's tables plus a table of flushed entries about to be written
// (at v's bytes per entry, 16 in an empty tree), in blocks of blockSize
// bytes: the cap less 1% for rounding, and less what filter blocks take
// beyond their filters' nominal bits per key, per data block (each
// filter's rounding to whole bytes, its trailer byte, its length) and per
// table (the block's offsets word and trailer).
func capBudget(b bloompolicy.Budget, v *manifest.Version, flushed int64, blockSize int) bloompolicy.Budget {
	var size, entries int64
	tables := int64(1)
	for _, files := range v.Levels {
		for _, f := range files {
			size += int64(f.Size)
			entries += int64(f.NumEntries)
			tables++
		}
	}
	perEntry := int64(16)
	if entries > 0 {
		perEntry = max(1, size/entries)
	}
	size += flushed * perEntry
	blocks := size/int64(max(blockSize, 1)) + tables
	overhead := filterBlockOverhead*blocks + filterTableOverhead*tables
	bytes := int64(float64(b.Bytes)*0.99) - overhead
	// A cap is a ceiling, not a target: a store far smaller than the cap
	// spends at most capMaxBitsPerKey bits per entry, so that the tables
	// it writes now are not left out wholesale once it has grown.
	bytes = min(bytes, int64(capMaxBitsPerKey*float64(entries+flushed)/8))
	return bloompolicy.Budget{Bytes: max(1, bytes)}
}

// capMaxBitsPerKey bounds the average bits per entry a cap plans for (see
// capBudget): 0.05% false positives in the blocked layout, beyond which a
// larger filter saves little and, under a cap, would be left out whole as
// the store grows.
const capMaxBitsPerKey = 16

// filterBlockOverhead and filterTableOverhead bound the bytes a table's
// filter block takes beyond its filters' nominal bits per key, per data
// block and per table (see capBudget).
const (
	filterBlockOverhead = 4
	filterTableOverhead = 16
)
