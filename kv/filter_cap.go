package kv

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// This file keeps the filter memory of a store under a cap
// (Options.FilterBudget with Bytes set): which filter each table holds in
// memory, if any, and what the lookups the store serves say about where
// filters save reads.
//
// Every table keeps its own filter on disk, whatever happens here. Under
// a cap a table is opened without it (sstable.ReaderOptions.DeferFilter)
// and read as a table without a filter until it holds one. After every
// change of Version, and every filterPassLookups lookups served (so that
// a settled store follows its workload too), a background pass
// (rebalance) updates the traffic model, plans the filter of each table
// of the Version under the cap (planFilters, filter_plan.go: its own, one
// built in memory at the bits per key the allocation now gives it, or
// none) and makes the open tables follow: it drops the filters the plan
// leaves out first, then shrinks, loads and builds the others (follow),
// and fills the room left. A filter is held only after its bytes are
// reserved against the cap, so the bytes held never exceed it, whatever
// the order in which passes and lookups open, drop, load and build.

// filterHolder counts the filter bytes the open tables hold and, under a
// cap, decides which filter each table holds.
type filterHolder struct {
	d   *DB
	cap int64 // bytes; 0: no cap, every table holds its own filter

	held    atomic.Int64 // filter bytes the open tables hold
	notHeld atomic.Int64 // tables of the last pass's Version that the plan leaves without a filter
	built   atomic.Int64 // open tables holding a filter built in memory
	builds  atomic.Int64 // filters built since Open
	// buildRead is the data-block bytes those builds read.
	buildRead atomic.Int64
	// plans is the last pass's plan. A table it does not name (one
	// written since) may hold its own filter if the bytes fit, until the
	// next pass decides.
	plans atomic.Pointer[map[base.FileNum]tablePlan]
	// misses is the traffic model's misses per lookup (nil before any
	// lookup; see trafficModel.update), for sizing new tables.
	misses atomic.Pointer[[manifest.NumLevels]float64]
	// load is what the last pass knew of the writes the store takes
	// (see planLoad), for sizing new tables as the passes do.
	load atomic.Pointer[planLoad]

	mu      sync.Mutex // serialises passes; guards traffic
	traffic trafficModel
	// perBlock is the bookkeeping bytes a filter block takes per data
	// block beyond the filters' nominal bits, as a float64's bits: from
	// filterBlockOverhead, averaged over the filters built since.
	perBlock atomic.Uint64

	// running and again, under d.mu, schedule passes: one goroutine runs
	// them, again asks it for one more. must says the next pass was
	// asked for by a change (of the tree, of an open table) rather than
	// by lookups alone, and follows its plan for a smaller gain (see
	// rebalance).
	running, again, must bool
}

// newFilterHolder returns the holder of o's filter memory.
func newFilterHolder(d *DB, o *Options) *filterHolder {
	h := &filterHolder{d: d}
	if o.FilterBudget != nil && !o.DisableFilters {
		h.cap = o.FilterBudget.Bytes
	}
	h.perBlock.Store(math.Float64bits(filterBlockOverhead))
	return h
}

// blockOverhead returns the bookkeeping bytes a filter block takes per
// data block, as the filters built so far measure it.
func (h *filterHolder) blockOverhead() float64 { return math.Float64frombits(h.perBlock.Load()) }

// learnOverhead folds the bookkeeping of a filter just built for e, of
// size bytes at bits per entry, into blockOverhead: an average that
// weighs the last few dozen filters most.
func (h *filterHolder) learnOverhead(e *tableEntry, bits float64, size int64) {
	if e.blocks == 0 {
		return
	}
	measured := min(max(builtPerBlock(e, bits, size), 0), 2*filterBlockOverhead)
	h.perBlock.Store(math.Float64bits(0.95*h.blockOverhead() + 0.05*measured))
}

// builtPerBlock returns the bookkeeping bytes per data block of a filter
// of size bytes built for e at bits per entry: what it takes beyond the
// nominal bits of e's entries. e.blocks is not 0.
func builtPerBlock(e *tableEntry, bits float64, size int64) float64 {
	return float64(size-nominalBytes(e.entries, bits)-filterTableOverhead) / float64(e.blocks)
}

// plan returns the last pass's plan for table num, if it made one.
func (h *filterHolder) plan(num base.FileNum) (tablePlan, bool) {
	plans := h.plans.Load()
	if plans == nil {
		return tablePlan{}, false
	}
	p, ok := (*plans)[num]
	return p, ok
}

// swap charges next bytes against the cap in place of prev, and reports
// whether they fit (a shrink always does).
func (h *filterHolder) swap(prev, next int64) bool {
	for {
		held := h.held.Load()
		if h.cap > 0 && next > prev && held-prev+next > h.cap {
			return false
		}
		if h.held.CompareAndSwap(held, held-prev+next) {
			return true
		}
	}
}

// setHeldLocked records what e's Reader now holds. e.filterMu is held.
func (h *filterHolder) setHeldLocked(e *tableEntry, bytes int64, bits float64, built bool) {
	if built != e.heldBuilt {
		if built {
			h.built.Add(1)
		} else {
			h.built.Add(-1)
		}
	}
	e.heldBytes, e.heldBits, e.heldBuilt = bytes, bits, built
}

// holdOwn loads open table e's own filter, if it has one, in place of a
// filter built for it, if the bytes fit, and reports whether e then holds
// its own filter. Lookups ask the built filter until the own one replaces
// it (sstable.Reader.LoadFilter). A filter that fails to load (a corrupt
// block) is left out: the table keeps what it held, and stays readable.
func (h *filterHolder) holdOwn(e *tableEntry) bool {
	e.filterMu.Lock()
	defer e.filterMu.Unlock()
	if (e.heldBytes > 0 && !e.heldBuilt) || !e.reader.HasFilter() {
		return e.heldBytes > 0 && !e.heldBuilt
	}
	if !h.swap(e.heldBytes, e.filterBytes) {
		return false
	}
	if loaded, err := e.reader.LoadFilter(); !loaded || err != nil {
		h.held.Add(e.heldBytes - e.filterBytes) // the charge of what e still holds
		return false
	}
	h.setHeldLocked(e, e.filterBytes, e.ownBits, false)
	return true
}

// holdBuilt builds open table e a filter of bits per entry from its keys
// and holds it in place of the one held, if the bytes fit, and reports
// whether it did, and the built filter's bytes (0 if none was built). A
// table that cannot be read keeps what it holds.
func (h *filterHolder) holdBuilt(e *tableEntry, bits float64) (bool, int64) {
	f := h.build(e, bits)
	if f == nil {
		return false, 0
	}
	return h.holdFilter(e, f, bits), f.Size()
}

// build builds open table e a filter of bits per entry from its keys,
// reading the whole table; nil if the table cannot be read.
func (h *filterHolder) build(e *tableEntry, bits float64) *sstable.Filter {
	p, err := bloompolicy.RunFilter{BitsPerKey: bits}.Policy()
	if p == nil || err != nil {
		return nil
	}
	f, err := e.reader.BuildFilter(p)
	if err != nil {
		return nil
	}
	h.builds.Add(1)
	h.buildRead.Add(f.BytesRead())
	h.learnOverhead(e, bits, f.Size())
	return f
}

// holdFilter holds f, built for open table e at bits per entry, in place
// of the filter held, if the bytes fit, and reports whether it did.
func (h *filterHolder) holdFilter(e *tableEntry, f *sstable.Filter, bits float64) bool {
	e.filterMu.Lock()
	defer e.filterMu.Unlock()
	if !h.swap(e.heldBytes, f.Size()) {
		return false
	}
	e.reader.HoldFilter(f)
	h.setHeldLocked(e, f.Size(), bits, true)
	return true
}

// opened counts the filter of a table just opened: held already without a
// cap; under one, its own loaded now if the plan gives it its own (or,
// for a table written since the last pass, if the room left takes it).
// A table whose plan is a built filter loads nothing (its own would be
// charged only to be replaced) and, like one whose own finds no room
// (filters the next pass drops still held), asks for a pass, which
// decides for it.
func (h *filterHolder) opened(e *tableEntry) {
	if h.cap == 0 {
		if e.reader.FilterHeld() {
			e.filterMu.Lock()
			h.held.Add(e.filterBytes)
			h.setHeldLocked(e, e.filterBytes, e.ownBits, false)
			e.filterMu.Unlock()
		}
		return
	}
	p, ok := h.plan(e.num)
	switch {
	case ok && p.hold == holdNone:
		return
	case ok && p.hold == holdBuilt: // the pass builds it
	case h.holdOwn(e):
		return
	}
	h.d.mu.Lock()
	h.scheduleLocked()
	h.d.mu.Unlock()
}

// drop lets go of open table e's filter, if it holds one.
func (h *filterHolder) drop(e *tableEntry) {
	e.filterMu.Lock()
	defer e.filterMu.Unlock()
	if e.reader.DropFilter() {
		h.held.Add(-e.heldBytes)
	}
	h.setHeldLocked(e, 0, 0, false)
}

// filterState returns what a plan needs to know of table f, open as e
// (nil: not open).
func (h *filterHolder) filterState(f *manifest.FileMetadata, e *tableEntry) tableFilterState {
	if e == nil {
		return tableFilterState{blocks: tableBlocks(f, h.d.opts.BlockSize), perBlock: h.blockOverhead(), ownUsable: f.FilterBytes > 0}
	}
	e.filterMu.Lock()
	defer e.filterMu.Unlock()
	s := tableFilterState{blocks: e.blocks, perBlock: h.blockOverhead(), heldBits: e.heldBits, heldBytes: e.heldBytes,
		heldBuilt: e.heldBuilt, ownUsable: e.reader.HasFilter()}
	if e.heldBuilt && e.blocks > 0 {
		// The table's own measure: filters of its keys at other bits
		// take about the same bookkeeping, which the average may miss
		// by a few dozen bytes, and a plan over a cap nearly spent
		// would then have it build one that does not fit.
		s.perBlock = builtPerBlock(e, e.heldBits, e.heldBytes)
	}
	return s
}

// filterStates returns what each table of v holds (filterState), open
// ones from their entries in open.
func (h *filterHolder) filterStates(v *manifest.Version, open map[base.FileNum]*tableEntry) map[base.FileNum]tableFilterState {
	states := map[base.FileNum]tableFilterState{}
	for _, files := range v.Levels {
		for _, f := range files {
			states[f.FileNum] = h.filterState(f, open[f.FileNum])
		}
	}
	return states
}

// workEndedLocked asks for a pass when a flush, a compaction or a manual
// operation has ended and no other runs or is due, if the last pass may
// have planned for a store taking writes (planLoad.busy, or a pass runs
// now): its plan keeps a reserve for an L0 as deep as it stood, which
// stays idle, and the tables' bits short of their share, until a pass
// plans the tree as it now stands. d.mu is held.
func (h *filterHolder) workEndedLocked() {
	if h.cap == 0 || h.d.writingTablesLocked() {
		return
	}
	if h.running || h.currentLoad().busy {
		h.scheduleLocked()
	}
}

// lookupsServed asks for a pass, when there is a cap: the store has
// served filterPassLookups more lookups since the last one asked for so,
// so that a store whose tree does not change still follows its workload.
func (h *filterHolder) lookupsServed() {
	if h.cap == 0 {
		return
	}
	h.d.mu.Lock()
	h.askLocked()
	h.d.mu.Unlock()
}

// filterPassLookups is how many lookups a store under a cap serves
// between the passes it asks for whatever happens to its tree (a power
// of two, tested with a mask on the lookup path): under filterHalfLife,
// so that the allocation follows a workload that changes on a settled
// store within about a half-life.
const filterPassLookups = 1 << 14

// scheduleLocked asks for a pass over the current Version, when there is
// a cap. d.mu is held.
func (h *filterHolder) scheduleLocked() {
	h.must = true
	h.askLocked()
}

// askLocked asks for a pass, when there is a cap. d.mu is held.
func (h *filterHolder) askLocked() {
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
		d.mu.Lock()
		must := h.must
		h.must = false
		d.mu.Unlock()
		h.rebalance(must)
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

// rebalance updates the traffic model, plans the filters of the current
// Version's tables under the cap, and makes the open tables follow,
// opening first those not open while the table cache has room. It
// follows its plan only when that is worth the filters it builds: when
// the plan cuts the expected wasted reads per lookup by filterReplanGain
// of them, for a pass that lookups alone asked for (not must), or else
// by filterSettleGain, or spends more than 1% more of the cap
// (planChange). So a pass over a tree that has not changed builds
// nothing.
func (h *filterHolder) rebalance(must bool) {
	d := h.d
	h.mu.Lock()
	defer h.mu.Unlock()
	d.mu.Lock()
	v := d.mu.versions.current
	v.Ref()
	busy := d.writingTablesLocked()
	d.mu.Unlock()
	defer d.unrefVersion(v)
	load := h.updateLoad(v, busy)
	d.tableCache.openWhileRoom(v)
	entries := d.tableCache.refAll()
	defer d.tableCache.releaseAll(entries)
	open := make(map[base.FileNum]*tableEntry, len(entries))
	for _, e := range entries {
		open[e.num] = e
	}

	misses, newGets, decay := h.traffic.update(&d.metrics, len(v.Levels[0]))
	h.misses.Store(misses)
	var perTable map[base.FileNum]float64
	if misses != nil {
		perTable = h.traffic.updateTables(v, open, misses, newGets, decay)
	}
	newest := newestTable(v)
	// Each table's weight in the expected wasted reads per lookup.
	weights := perTable
	if weights == nil {
		weights = monkeyWeights(v)
	}
	// A plan's built filters are estimates until built; when building
	// them leaves part of the cap unspent, the plan is made again from
	// the filters as built, a few times.
	for round := 0; round < followRounds; round++ {
		builds := h.builds.Load()
		states := h.filterStates(v, open)
		plans, notHeld := planFilters(v, misses, perTable, h.cap, d.opts.BlockSize, h.blockOverhead(), states, load)
		settle := must || round > 0
		gain := filterReplanGain
		if settle {
			gain = filterSettleGain
		}
		h.plans.Store(&plans)
		h.notHeld.Store(notHeld)
		if c := comparePlan(v, open, plans, weights, states); !c.saves(gain) && !(settle && c.more > h.cap/planSpendDivisor) {
			h.dropObsolete(entries, plans, newest)
			return
		}
		h.follow(entries, plans, newest)
		if h.builds.Load() == builds || h.cap-h.held.Load() <= h.cap/planSlackDivisor || d.closed.Load() {
			return
		}
	}
}

// updateLoad returns what the plan of v knows of the writes the store
// takes (planLoad), and keeps it for sizing new tables: busy says whether
// background work runs or is due.
func (h *filterHolder) updateLoad(v *manifest.Version, busy bool) planLoad {
	var l planLoad
	if busy {
		l = h.currentLoad()
	}
	l.busy = busy
	if l0 := v.Levels[0]; busy && len(l0) > 0 && len(l0) >= l.l0Tables {
		var keys int64
		for _, f := range l0 {
			keys += int64(f.NumEntries)
		}
		l.l0Tables, l.l0Keys = len(l0), keys/int64(len(l0))
	}
	h.load.Store(&l)
	return l
}

// currentLoad returns what the last pass knew of the writes the store
// takes (updateLoad); none before the first pass.
func (h *filterHolder) currentLoad() planLoad {
	if p := h.load.Load(); p != nil {
		return *p
	}
	return planLoad{}
}

// followRounds bounds the plans a pass makes and follows.
const followRounds = 3

// planChange is what following a plan would change for the open tables
// of a Version (comparePlan): the expected wasted reads per lookup they
// hold and would hold, by each table's weight (its misses per lookup)
// and the rate model, and the bytes of the cap they would hold more.
//
// Building filters reads whole tables. For a workload that drifts a
// little it is not worth it, for one that has changed it is
// (filterReplanGain). And over a tree that has not changed, a plan made
// from scratch is seldom the filters held, though no better: where its
// estimated sizes differ from the sizes built, or a table's share sits
// at a step's edge, it moves bits from table to table and back, pass
// after pass (filterSettleGain). But a settled store spends its cap,
// though what the room left would save may be under filterSettleGain:
// a plan that holds more than 1/planSpendDivisor of the cap more is
// followed too (see rebalance).
type planChange struct {
	held, planned float64
	more          int64
}

// saves reports whether the plan cuts the expected wasted reads by at
// least a share gain of them.
func (c planChange) saves(gain float64) bool { return c.planned < (1-gain)*c.held }

// comparePlan returns what holding what plans says, rather than what the
// open tables of v hold (states), would change.
func comparePlan(v *manifest.Version, open map[base.FileNum]*tableEntry, plans map[base.FileNum]tablePlan,
	weights map[base.FileNum]float64, states map[base.FileNum]tableFilterState) planChange {
	var c planChange
	for _, files := range v.Levels {
		for _, f := range files {
			if open[f.FileNum] == nil {
				continue // the plan's filter for it waits for it to open
			}
			w, s, p := weights[f.FileNum], states[f.FileNum], plans[f.FileNum]
			c.held += w * bloompolicy.ModelFPR(s.heldBits)
			c.planned += w * bloompolicy.ModelFPR(plannedBits(f, p, s))
			c.more += p.bytes - s.heldBytes
		}
	}
	return c
}

// plannedBits returns the bits per entry table f holds once it follows
// plan p from s: those of its own filter where p keeps it (p.bits are
// then the allocation's, within the slack of them), else p's.
func plannedBits(f *manifest.FileMetadata, p tablePlan, s tableFilterState) float64 {
	switch {
	case p.hold != holdOwn:
		return p.bits
	case s.heldBytes > 0 && !s.heldBuilt:
		return s.heldBits
	}
	return ownBits(f, s.blocks, s.perBlock)
}

// filterReplanGain is the share of the expected wasted reads a pass that
// lookups alone asked for must save to build filters; filterSettleGain
// that of any other pass (see planChange). A change of the tree
// leaves new tables holding none, or their own at the bits the store
// wrote them with, which plans beat by far more.
const (
	filterReplanGain = 0.1
	filterSettleGain = 0.01
)

// monkeyWeights returns each table's misses per lookup as Monkey's rule
// has them, for a store that has counted no lookup: every lookup misses
// in every run of the cap's allocation (capRuns: each L0 table and each
// deeper level), in a table of a level by its share of the level's
// entries (runReach).
func monkeyWeights(v *manifest.Version) map[base.FileNum]float64 {
	lay := capRuns(v, nil, nil, 0, 1, 0, nil, planLoad{})
	w := make(map[base.FileNum]float64, len(lay.runOf))
	for _, files := range v.Levels {
		for _, f := range files {
			if i, ok := lay.runOf[f.FileNum]; ok {
				w[f.FileNum] = runReach(lay.runs[i], f)
			}
		}
	}
	return w
}

// dropObsolete drops the filters of open tables that are no longer in
// the Version planned (not in plans, numbered at or below its newest).
func (h *filterHolder) dropObsolete(entries []*tableEntry, plans map[base.FileNum]tablePlan, newest base.FileNum) {
	for _, e := range entries {
		if _, ok := plans[e.num]; !ok && e.num <= newest {
			h.drop(e)
		}
	}
}

// follow makes the open tables hold what plans says: drops first, so that
// the loads and builds find room, then the built filters that shrink,
// then own filters, then built ones for tables holding none, then those
// that grow; what did not fit then (the room was still taken when its
// turn came) is tried once more. A table the plan does not name is
// obsolete if numbered at or below newest, and drops its filter; one
// written since waits for the next pass.
func (h *filterHolder) follow(entries []*tableEntry, plans map[base.FileNum]tablePlan, newest base.FileNum) {
	h.dropObsolete(entries, plans, newest)
	var steps []*followStep
	for _, e := range entries {
		p, ok := plans[e.num]
		s := h.filterState(nil, e)
		switch {
		case !ok: // obsolete, dropped, or written since: the next pass decides
		case p.hold == holdNone:
			h.drop(e)
		case p.hold == holdOwn:
			steps = append(steps, &followStep{e: e, p: p, order: followOwn})
		case !s.heldBuilt || s.heldBits != p.bits:
			steps = append(steps, &followStep{e: e, p: p, order: buildOrder(s, p)})
		}
	}
	slices.SortStableFunc(steps, func(a, b *followStep) int { return cmp.Compare(a.order, b.order) })
	for round := 0; round < 2 && len(steps) > 0; round++ {
		var failed []*followStep
		for _, st := range steps {
			if h.d.closed.Load() {
				return
			}
			if !h.followOne(st) {
				failed = append(failed, st)
			}
		}
		steps = failed
	}
	h.fillRoom(entries, plans)
}

// followStep is one table's move toward its plan, and when follow takes
// it: followShrink before followOwn before followFill before followGrow.
// built keeps a filter built for the step that did not fit, for the
// second try: building reads the whole table.
type followStep struct {
	e     *tableEntry
	p     tablePlan
	order int
	built *sstable.Filter
}

const (
	followShrink = iota // a built filter that takes fewer bytes than the one held
	followOwn           // the table's own filter
	followFill          // a built filter for a table holding none: each lookup reaching it reads a block
	followGrow          // a built filter that takes more bytes than the one held
)

// buildOrder returns when follow builds a table the filter of plan p,
// from what the table holds, s.
func buildOrder(s tableFilterState, p tablePlan) int {
	switch {
	case s.heldBytes == 0:
		return followFill
	case p.bytes < s.heldBytes:
		return followShrink
	}
	return followGrow
}

// followOne takes step st and reports whether the table then holds what
// its plan says.
func (h *filterHolder) followOne(st *followStep) bool {
	if st.order == followOwn {
		return h.holdOwn(st.e)
	}
	if st.built == nil {
		if st.built = h.build(st.e, st.p.bits); st.built == nil {
			return false
		}
	}
	return h.holdFilter(st.e, st.built, st.p.bits)
}

// fillRoom gives each open table that holds fewer bits than the plan
// gives it (its filter, or others', larger than the plan estimated, so
// that the room was taken when its turn came) a filter built in the room
// left, at up to the plan's bits: a table with a smaller filter saves
// most of the reads it would, one with none saves nothing, and the cap is
// spent rather than left idle.
func (h *filterHolder) fillRoom(entries []*tableEntry, plans map[base.FileNum]tablePlan) {
	for _, e := range entries {
		p, ok := plans[e.num]
		if !ok || p.hold == holdNone || h.d.closed.Load() || e.entries == 0 {
			continue
		}
		s := h.filterState(nil, e)
		if s.heldBits >= p.bits-1.0/bitSteps || (p.hold == holdOwn && s.heldBytes > 0 && !s.heldBuilt) {
			continue // about the bits planned, or its own as planned (within the slack)
		}
		room := h.cap - h.held.Load() + s.heldBytes - filterOverhead(s.blocks, s.perBlock)
		bits := min(p.bits, floorBits(8*float64(room)/float64(e.entries)))
		// The room is an estimate: a filter that does not fit tries
		// again with the bits it took too many taken off, a few times,
		// while it still holds more than the one held.
		for try := 0; try < 3 && bits >= planMinBits && bits > s.heldBits; try++ {
			held, size := h.holdBuilt(e, bits)
			if held || size == 0 {
				break
			}
			excess := size - (h.cap - h.held.Load() + s.heldBytes)
			bits -= max(ceilBits(8*float64(excess)/float64(e.entries)), 1.0/bitSteps)
		}
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
