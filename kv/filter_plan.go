package kv

import (
	"cmp"
	"math"
	"slices"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// This file decides, under a cap on filter memory, the filter each table
// of a Version holds: the plan that spends the cap on the tree as it
// stands, each table weighed by the lookups it misses (the traffic model,
// filter_traffic.go).
//
// The plan allocates the cap (less the filter blocks' bookkeeping) over
// the runs of the Version with bloompolicy.Allocate: each table a run of
// its own once lookups were counted, else each L0 table and each deeper
// level one (Monkey's rule). A table then holds a filter of the bits per key
// its run gets: its own, written with the table, when that is within
// filterBitsSlack of them, or else one built in memory from its keys at
// exactly those bits (sstable.Reader.BuildFilter). Holding what the
// allocation gives rather than all or nothing keeps the tables written
// while the store was small, with large filters, from being dropped whole
// once it grows, and lets the tables written while it was large, or while
// transient L0 tables took a share of the cap, hold the bits the settled
// tree gives them. The slack bounds how often a growing store rebuilds:
// a table's filter is built again only once the allocation has moved by
// a quarter of a bit per key (about 12% in false-positive rate), or by a
// bit while flushes and compactions run (planLoad).

// filterBitsSlack is how far, in bits per key, the filter a table holds
// (or its own) may be from what the allocation gives it before a pass
// builds it one of exactly that.
const filterBitsSlack = 0.25

// filterLoadSlack is filterBitsSlack while background work runs (see
// planLoad): a growing store rebuilds a table a quarter as often. The
// rate curve is convex, so filters spread evenly over ±1 bit of their
// share have 3–5% more false positives than filters at their share
// (bloompolicy.ModelFPR, from 3 to 10 bits per key); over ±1/4 bit,
// under 1%.
const filterLoadSlack = 1.0

// holdKind is the filter a plan has a table hold.
type holdKind uint8

const (
	holdNone  holdKind = iota // no filter: lookups read the table as if it had none
	holdOwn                   // the table's own filter, as written
	holdBuilt                 // a filter built in memory at the plan's bits per key
)

// tablePlan is what a pass decided for one table of its Version.
type tablePlan struct {
	bits  float64 // bits per entry the allocation gives the table; 0: none
	hold  holdKind
	bytes int64 // what holding it charges against the cap (built: estimated)
}

// tableFilterState is what a plan needs to know of a table: its data
// blocks (see tableBlocks) and their bookkeeping, and the filter its open Reader holds (bits 0:
// none, or not open). ownUsable says the table's own filter can be read.
type tableFilterState struct {
	blocks    int64
	perBlock  float64 // filter bookkeeping bytes per data block: the table's built filter's, else filterHolder.perBlock
	heldBits  float64
	heldBytes int64
	heldBuilt bool
	ownUsable bool
}

// planCandidate is a table the plan may have hold a filter, the choice it
// prefers and the reads per lookup that choice saves per byte.
type planCandidate struct {
	f     *manifest.FileMetadata
	plan  tablePlan
	score float64
}

// planFilters returns, for each table of v, the filter it holds under cap
// bytes, and the number of tables that then hold none though the
// allocation gave them bits or they carry a filter. misses is the
// traffic model's (nil: Monkey's rule); states holds what each table
// holds (filterHolder.filterStates); load what the pass knows of the
// writes the store takes (planLoad): the plan leaves room for the L0
// tables it reserves, and keeps a filter within load's slack of its
// share.
//
// The allocation's budget is the cap less the filter blocks' estimated
// bookkeeping, but what the plan then spends differs from it: each
// table's bits are rounded down to the 1/16 bit a filter is built at, a
// table keeps its own filter when within the slack of its bits, and
// the bookkeeping is an estimate. So the plan is made again for the
// budget moved by what it left unspent or spent beyond the cap, a few
// times (planTries), and of the plan spending the most without passing
// the cap and the one passing it the least, fitted to the cap, the one
// spending more is kept, and what it leaves beyond 1% of the cap given
// to its best tables (spendRoom): a settled store spends its cap, not a
// share of it. Should none fit, the filters that save the fewest reads
// per byte are left out or shrunk.
func planFilters(v *manifest.Version, misses *[manifest.NumLevels]float64, perTable map[base.FileNum]float64,
	cap int64, blockSize int, perBlock float64, states map[base.FileNum]tableFilterState, load planLoad) (map[base.FileNum]tablePlan, int64) {
	lay := capRuns(v, misses, perTable, cap, blockSize, perBlock, nil, load)
	budget := lay.budget
	slack := load.slack()
	var entries int64
	for _, files := range v.Levels {
		for _, f := range files {
			entries += int64(f.NumEntries)
		}
	}
	ceiling := int64(capMaxBitsPerKey * float64(entries) / 8) // capRuns' bound on the bits per entry
	var best, over, cands []planCandidate
	bestWant, overWant, lastWant, scale := int64(-1), int64(math.MaxInt64), int64(-1), int64(1)
	limit, bestLimit, overLimit := cap, cap, cap
	for try := 0; try < planTries && budget > 0; try++ {
		var reserved int64
		cands, reserved = planCandidates(v, lay, budget, states, slack)
		limit = cap - reserved
		want := planBytes(cands)
		if want <= limit && want > bestWant {
			best, bestWant, bestLimit = cands, want, limit
		}
		if want > limit && want < overWant {
			over, overWant, overLimit = cands, want, limit
		}
		if want <= limit && (limit-want <= cap/planSlackDivisor || budget >= ceiling) {
			break
		}
		// Bits move in steps of 1/16 per table: a move too small to
		// change the plan doubles until it does.
		if want == lastWant {
			scale *= 2
		} else {
			scale = 1
		}
		lastWant = want
		budget += scale * (limit - want)
		if want <= limit {
			budget = min(budget, ceiling)
		}
	}
	if bestWant < 0 {
		return fitPlans(v, cands, limit, states, slack)
	}
	plans, notHeld := fitPlans(v, best, bestLimit, states, slack)
	limit = bestLimit
	if over != nil {
		// The plan just over the cap, its last filters fitted to the room
		// left, may spend more of it.
		if p, n := fitPlans(v, over, overLimit, states, slack); plannedBytes(p) > plannedBytes(plans) {
			plans, notHeld, best, limit = p, n, over, overLimit
		}
	}
	if room := limit - plannedBytes(plans); room > cap/planSpendDivisor {
		spendRoom(plans, best, room, states, slack)
	}
	return plans, notHeld
}

// planSpendDivisor: a plan that leaves more than 1/planSpendDivisor of
// the cap unspent spends it (spendRoom). Less is left as it is: the
// plan's bytes are estimates, and room of a few bytes handed from table
// to table would have passes rebuild filters for nothing.
const planSpendDivisor = 100

// spendRoom gives room, the bytes of the cap that plans leave unspent,
// to the tables they give filters, best candidate first (cands is
// sorted, by fitPlans), as more bits of a filter built for them, while a
// table can take at least one step more (a table the plan keeps at the
// filter it holds, the bytes of the slack more). The plans left
// over 1% of the cap idle in about 1 tree in 100 (TestPlanFilters_SpendsCap):
// each table's bits are rounded down to 1/16, a table kept at its own
// filter may be a quarter bit short of its share, and a table left out
// for want of room leaves its share.
func spendRoom(plans map[base.FileNum]tablePlan, cands []planCandidate, room int64,
	states map[base.FileNum]tableFilterState, slack float64) {
	for _, c := range cands {
		if room <= 0 {
			return
		}
		p := plans[c.f.FileNum]
		if p.hold == holdNone || c.f.NumEntries == 0 {
			continue
		}
		s := states[c.f.FileNum]
		// A table the plan keeps at the filter it holds (its own, or one
		// built before) is built one only for the bytes of the slack that
		// kept it there, or more: building reads the whole table.
		gain := int64(1)
		switch {
		case p.hold == holdOwn:
			gain = nominalBytes(int64(c.f.NumEntries), ownSlack(c.f, slack))
		case keeps(p, s):
			gain = nominalBytes(int64(c.f.NumEntries), slack)
		}
		avail := room + p.bytes - filterOverhead(s.blocks, s.perBlock)
		bits := min(capMaxBitsPerKey, floorBits(8*float64(avail)/float64(c.f.NumEntries)))
		if q := builtPlan(c.f, s, bits); q.bytes-p.bytes >= gain && q.bytes <= room+p.bytes {
			plans[c.f.FileNum] = q
			room -= q.bytes - p.bytes
		}
	}
}

// keeps reports whether plan p has a table hold the filter it holds, s:
// its own, or the one built for it before.
func keeps(p tablePlan, s tableFilterState) bool {
	return p.hold == holdOwn || (p.hold == holdBuilt && s.heldBuilt && s.heldBits == p.bits)
}

// plannedBytes returns the bytes plans charge against the cap.
func plannedBytes(plans map[base.FileNum]tablePlan) int64 {
	var sum int64
	for _, p := range plans {
		sum += p.bytes
	}
	return sum
}

// planBytes returns the bytes the candidates' filters charge.
func planBytes(cands []planCandidate) int64 {
	var want int64
	for _, c := range cands {
		want += c.plan.bytes
	}
	return want
}

// planTries bounds the plans a pass makes to spend its cap; planSlackDivisor
// is how close it must come, a fraction 1/planSlackDivisor of the cap
// unspent, to stop early.
const (
	planTries        = 8
	planSlackDivisor = 2000
)

// planCandidates returns the tables of v to which the allocation of
// budget bytes over lay's runs gives bits, with the filter each would
// hold, and the bytes the allocation gives L0's reserve (planLoad).
func planCandidates(v *manifest.Version, lay capLayout, budget int64, states map[base.FileNum]tableFilterState,
	slack float64) (cands []planCandidate, reserved int64) {
	runs := lay.runs
	var filters []bloompolicy.RunFilter
	if budget > 0 && len(runs) > 0 {
		filters = allocateRuns(runs, budget)
	}
	if i := lay.reserve; filters != nil && i >= 0 {
		reserved = int64(runs[i].Count) * nominalBytes(runs[i].Keys, floorBits(filters[i].BitsPerKey))
	}
	for _, files := range v.Levels {
		for _, f := range files {
			i, ok := lay.runOf[f.FileNum]
			if !ok || filters == nil {
				continue
			}
			// Down to the 1/16 bit RunFilter.Policy builds, within the budget.
			bits := floorBits(filters[i].BitsPerKey)
			if bits < planMinBits {
				continue
			}
			p := chooseFilter(f, states[f.FileNum], bits, slack)
			reach := runReach(runs[i], f)
			cands = append(cands, planCandidate{f: f, plan: p, score: reach * (1 - bloompolicy.ModelFPR(bits)) / float64(p.bytes)})
		}
	}
	return cands, reserved
}

// allocateRuns allocates budget bytes over runs; should their weights be
// unusable, it falls back to Monkey's rule, which ignores them.
func allocateRuns(runs []bloompolicy.Runs, budget int64) []bloompolicy.RunFilter {
	filters, err := bloompolicy.Allocate(runs, bloompolicy.Budget{Bytes: budget})
	if err == nil {
		return filters
	}
	plain := make([]bloompolicy.Runs, len(runs))
	for i, r := range runs {
		plain[i] = bloompolicy.Runs{Count: r.Count, Keys: r.Keys, MaxBitsPerKey: r.MaxBitsPerKey}
	}
	filters, _ = bloompolicy.Allocate(plain, bloompolicy.Budget{Bytes: budget})
	return filters
}

// fitPlans returns the plan of every table of v: the candidates' filters,
// taken by reads saved per byte, best first, while they fit in cap bytes
// (a filter kept above its bits built at them if that fits instead, else
// one of the bits that fit in the room left, if at least planMinBits),
// and no filter for the rest; and the count of tables then without one though
// the allocation gave them bits or they carry a filter.
func fitPlans(v *manifest.Version, cands []planCandidate, cap int64,
	states map[base.FileNum]tableFilterState, slack float64) (map[base.FileNum]tablePlan, int64) {
	plans := make(map[base.FileNum]tablePlan, len(states))
	var notHeld int64
	for _, files := range v.Levels {
		for _, f := range files {
			plans[f.FileNum] = tablePlan{}
			if f.FilterBytes > 0 {
				notHeld++
			}
		}
	}
	slices.SortStableFunc(cands, func(a, b planCandidate) int { return cmp.Compare(b.score, a.score) })
	var used int64
	for _, c := range cands {
		p, s := c.plan, states[c.f.FileNum]
		if used+p.bytes > cap && p.hold != holdBuilt {
			p = builtPlan(c.f, s, p.bits)
		}
		if used+p.bytes > cap {
			// Fewer bits, in the room left, rather than no filter: the
			// filter held, or its own, if within the slack of them and
			// it fits, else one built at them.
			room := cap - used - filterOverhead(s.blocks, s.perBlock)
			bits := floorBits(8 * float64(room) / float64(c.f.NumEntries))
			if p = chooseFilter(c.f, s, bits, slack); used+p.bytes > cap {
				p = builtPlan(c.f, s, bits)
			}
		}
		if p.bits < planMinBits || used+p.bytes > cap {
			if c.f.FilterBytes == 0 {
				notHeld++
			}
			continue
		}
		if c.f.FilterBytes > 0 {
			notHeld--
		}
		used += p.bytes
		plans[c.f.FileNum] = p
	}
	return plans, notHeld
}

// planLoad is what a plan knows of the writes a store is taking: whether
// background work (a flush or a compaction) runs or is due, and if so the
// L0 to keep room for, the deepest it has stood since that work last
// stopped: l0Tables tables of about l0Keys entries each.
//
// A store being loaded swings L0 between a few tables and many, each a
// run that every lookup reaches, and grows every deeper level. An
// allocation that followed the swing would move every deeper table's
// share by a fraction of a bit, down as L0 grows and up as it drains,
// and rebuild them all, reading each whole, at every swing. Planned with
// L0 at its deepest, the deeper tables keep their bits, and the reserve
// holds the L0 tables' filters, or stays idle, until the store settles.
// And while it grows, each table may stray further from its share
// (filterLoadSlack), so that a level shrinks by rebuilding a few of its
// tables by a bit rather than all of them by a quarter of one, each time
// the store grows by a little. Once the store settles, its next pass
// plans the tree as it stands, at filterBitsSlack.
type planLoad struct {
	busy     bool
	l0Tables int
	l0Keys   int64
}

// slack returns how far, in bits per key, a table's filter may be from
// its share before the plan builds it one of exactly that.
func (l planLoad) slack() float64 {
	if l.busy {
		return filterLoadSlack
	}
	return filterBitsSlack
}

// capWrite is a write about to change the tree: a flush of flushed
// entries into a new L0 table (level 0), a merge within L0 of the tables
// moving, flushed entries in all, or a compaction into level that moves
// the tables moving down from the level above.
type capWrite struct {
	level   int
	moving  []*manifest.FileMetadata
	flushed int64
}

// capLayout is a tree as a cap's allocation sees it (capRuns).
type capLayout struct {
	runs  []bloompolicy.Runs
	runOf map[base.FileNum]int // the run of each table with entries
	// target is the run the tables a write writes join (-1 without a
	// write); reserve the run of L0's reserve (planLoad), of tables not
	// written yet (-1 without one).
	target, reserve int
	// budget is the bytes the allocation may spend.
	budget int64
}

// capRuns returns the runs of v, as w would leave it when not nil, as a
// cap's allocation sees them: each L0 table one run, each deeper level
// with entries one, weighed by misses when set (see trafficModel.update);
// with perTable (and no w), each table a run of its own, weighed by its
// own misses (trafficModel.updateTables); and, last, the run of the L0
// tables load reserves room for. The budget is what the allocation may
// spend under capBytes: the cap less the filter blocks' bookkeeping
// (filterOverhead for each table, at blockSize bytes a block and perBlock
// bytes of bookkeeping a block), and at most capMaxBitsPerKey bits per
// entry, which also bounds each run: a cap larger than the tree needs
// gives every table capMaxBitsPerKey, rather than more to the runs
// Monkey's rule favours, whose shares would then move, and their filters
// be built again, as the tree grows.
func capRuns(v *manifest.Version, misses *[manifest.NumLevels]float64, perTable map[base.FileNum]float64,
	capBytes int64, blockSize int, perBlock float64, w *capWrite, load planLoad) capLayout {
	var runs []bloompolicy.Runs
	runOf, target, reserve := map[base.FileNum]int{}, -1, -1
	levelRun := [manifest.NumLevels]int{}
	add := func(l int) int { // the run of a table of level l: a new one in L0, or per table
		if l == 0 || levelRun[l] == 0 || perTable != nil {
			runs = append(runs, bloompolicy.Runs{Count: 1, MaxBitsPerKey: capMaxBitsPerKey})
			if misses != nil {
				runs[len(runs)-1].Misses = misses[l]
			}
			if l > 0 {
				levelRun[l] = len(runs)
			}
			return len(runs) - 1
		}
		return levelRun[l] - 1
	}
	leaving := map[*manifest.FileMetadata]bool{}
	if w != nil {
		for _, f := range w.moving {
			leaving[f] = true
		}
		// The run w writes: the tables moving down join it, and a merge
		// within L0 writes one run of its inputs' entries, w.flushed.
		target = add(w.level)
		runs[target].Keys += w.flushed
	}
	var overhead, entries, size int64
	l0 := 0 // L0 tables once w is written
	if w != nil && w.level == 0 {
		l0++
	}
	for l, files := range v.Levels {
		for _, f := range files {
			if leaving[f] && w.level == 0 {
				continue // merged within L0: w.flushed counts them
			}
			if l == 0 && !leaving[f] {
				l0++
			}
			overhead += filterOverhead(tableBlocks(f, blockSize), perBlock)
			entries, size = entries+int64(f.NumEntries), size+int64(f.Size)
			if f.NumEntries == 0 {
				continue
			}
			i := target
			if !leaving[f] {
				i = add(l)
			}
			runs[i].Keys += int64(f.NumEntries)
			runOf[f.FileNum] = i
			if perTable != nil {
				runs[i].Misses = perTable[f.FileNum]
			}
		}
	}
	perEntry := int64(16)
	if entries > 0 {
		perEntry = max(1, size/entries)
	}
	if w != nil && w.flushed > 0 {
		// A compaction's outputs take about the blocks of its inputs; a
		// flush adds a table.
		overhead += filterOverhead(w.flushed*perEntry/int64(max(blockSize, 1))+1, perBlock)
		entries += w.flushed
	}
	if n := load.l0Tables - l0; n > 0 && load.l0Keys > 0 {
		r := bloompolicy.Runs{Count: n, Keys: load.l0Keys, MaxBitsPerKey: capMaxBitsPerKey}
		if misses != nil {
			r.Misses = misses[0]
		}
		runs, reserve = append(runs, r), len(runs)
		overhead += int64(n) * filterOverhead(load.l0Keys*perEntry/int64(max(blockSize, 1))+1, perBlock)
		entries += int64(n) * load.l0Keys
	}
	budget := min(capBytes-overhead, int64(capMaxBitsPerKey*float64(entries)/8))
	return capLayout{runs: runs, runOf: runOf, target: target, reserve: reserve, budget: budget}
}

// capPolicy returns the Bloom policy of the tables w writes under a cap
// of capBytes, nil for none: the bits per entry the allocation gives
// their run (capRuns), as a pass right after the write would have them
// hold, so that they can hold their own filter.
func capPolicy(v *manifest.Version, misses *[manifest.NumLevels]float64, capBytes int64, blockSize int,
	perBlock float64, w *capWrite, load planLoad) bloompolicy.FilterPolicy {
	lay := capRuns(v, misses, nil, capBytes, blockSize, perBlock, w, load)
	if lay.budget <= 0 {
		return nil
	}
	return budgetPolicy(lay.runs, lay.target, bloompolicy.Budget{Bytes: lay.budget})
}

// tableBlocks estimates the data blocks of table f, in blocks of
// blockSize bytes, from its size: what its filter block's bookkeeping is
// reckoned on, the same whether the table is open or not.
func tableBlocks(f *manifest.FileMetadata, blockSize int) int64 {
	return int64(f.Size)/int64(max(blockSize, 1)) + 1
}

// filterOverhead returns the bytes a table's filter block of blocks
// filters takes beyond their nominal bits, at perBlock bytes a filter
// (see filterHolder.perBlock).
func filterOverhead(blocks int64, perBlock float64) int64 {
	return int64(math.Ceil(perBlock*float64(blocks))) + filterTableOverhead
}

// ownSlack returns the slack for table f's own filter: a byte's bits
// wider than slack, as its bits are measured from its bytes (ownBits), to
// the byte, so that a small table written at some bits, whose filter
// rounds to a byte below their estimate, is not read whole to build one
// a byte larger.
func ownSlack(f *manifest.FileMetadata, slack float64) float64 {
	return slack + 8/float64(max(f.NumEntries, 1))
}

// chooseFilter returns the filter table f holds at bits per entry: the
// one its Reader holds, or its own, if within slack of bits (ownSlack for
// its own), else one built at bits.
func chooseFilter(f *manifest.FileMetadata, s tableFilterState, bits, slack float64) tablePlan {
	wider := ownSlack(f, slack)
	switch {
	case s.heldBits > 0 && s.heldBuilt && math.Abs(s.heldBits-bits) <= slack:
		return tablePlan{bits: s.heldBits, hold: holdBuilt, bytes: s.heldBytes}
	case s.heldBits > 0 && !s.heldBuilt && math.Abs(s.heldBits-bits) <= wider:
		return tablePlan{bits: bits, hold: holdOwn, bytes: int64(f.FilterBytes)}
	}
	if own := ownBits(f, s.blocks, s.perBlock); s.ownUsable && math.Abs(own-bits) <= wider {
		return tablePlan{bits: bits, hold: holdOwn, bytes: int64(f.FilterBytes)}
	}
	return builtPlan(f, s, bits)
}

// builtPlan returns the plan of a filter built for f at bits per entry.
func builtPlan(f *manifest.FileMetadata, s tableFilterState, bits float64) tablePlan {
	return tablePlan{bits: bits, hold: holdBuilt, bytes: builtBytes(f, s, bits)}
}

// builtBytes estimates the bytes of a filter built for f at bits per
// entry: at most that, as a table's distinct keys are at most its
// entries, plus the bookkeeping.
func builtBytes(f *manifest.FileMetadata, s tableFilterState, bits float64) int64 {
	return nominalBytes(int64(f.NumEntries), bits) + filterOverhead(s.blocks, s.perBlock)
}

// nominalBytes returns the bytes of bits per entry over entries.
func nominalBytes(entries int64, bits float64) int64 {
	return int64(math.Ceil(bits * float64(entries) / 8))
}

// ownBits returns the bits per entry of f's own filters, less the
// bookkeeping; 0 without a filter.
func ownBits(f *manifest.FileMetadata, blocks int64, perBlock float64) float64 {
	if f.FilterBytes == 0 || f.NumEntries == 0 {
		return 0
	}
	return 8 * float64(max(0, int64(f.FilterBytes)-filterOverhead(blocks, perBlock))) / float64(f.NumEntries)
}

// runReach returns the lookups per lookup served that reach table f of
// run r and miss there: the run's misses spread over its tables by their
// entries (1 for the whole run without traffic, as Monkey assumes).
func runReach(r bloompolicy.Runs, f *manifest.FileMetadata) float64 {
	w := r.Misses
	if w == 0 {
		w = 1
	}
	return w * float64(f.NumEntries) / float64(r.Keys)
}

// planMinBits is the fewest bits per entry a plan gives a table's filter:
// below it a table gets none, as a filter that rules out under half the
// absent keys is not worth its bookkeeping.
const planMinBits = 1

// capMaxBitsPerKey bounds the bits per entry a cap plans for each run (see
// capRuns): a store far smaller than the cap spends at most this, 0.05%
// false positives in the blocked layout, beyond which a larger filter
// saves little.
const capMaxBitsPerKey = 16

// bitSteps is the resolution, per bit, at which the store builds filters:
// bloompolicy's RunFilter.Policy rounds bits per key to it.
const bitSteps = 16

// floorBits rounds bits per key down to a step.
func floorBits(bits float64) float64 { return math.Floor(bits*bitSteps) / bitSteps }

// ceilBits rounds bits per key up to a step.
func ceilBits(bits float64) float64 { return math.Ceil(bits*bitSteps) / bitSteps }

// filterBlockOverhead and filterTableOverhead are the bytes a table's
// filter block takes beyond its filters' nominal bits per key, per data
// block (each filter's rounding to whole bytes, its trailer byte, its
// length) and per table (the block's offsets word and trailer). The first
// is where a store starts; it learns the figure from the filters it
// builds (filterHolder.perBlock).
const (
	filterBlockOverhead = 3.0
	filterTableOverhead = 9
)
