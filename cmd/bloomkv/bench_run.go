package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/bloomkv/bloomkv/kv"
)

// benchOne runs the workload on one configuration: the load (in doubling
// steps with --growth, measuring the settled shape after each), then the
// settled, write-heavy and compacted shapes in turn, on the same store.
func (a *app) benchOne(ctx context.Context, cfg benchConfig, w *bench.Workload, dir string, o benchOptions) (row benchRow, err error) {
	row = benchRow{Config: cfg.name, Engine: cfg.engine(), Filter: cfg.filter,
		NominalBitsPerKey: jsonFloat(cfg.nominal)}
	s, err := cfg.open(dir, o)
	if err != nil {
		return row, err
	}
	defer func() {
		if cerr := s.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	r := &shapeRunner{app: a, ctx: ctx, s: s, w: w, name: cfg.name, memtable: o.memtable}
	if err := r.growAndSettle(&row, growthSteps(w.Keys, o.growth)); err != nil {
		return row, err
	}
	wh, err := r.writeHeavy()
	if err != nil {
		return row, err
	}
	row.Shapes = append(row.Shapes, wh)
	if err := r.phase("compact", s.Compact); err != nil {
		return row, err
	}
	compacted, err := r.measure(shapeCompacted, w.Keys+w.Extra)
	if err != nil {
		return row, err
	}
	row.Shapes = append(row.Shapes, compacted)
	if err := w.VerifySample(s, w.Keys+w.Extra); err != nil {
		return row, err
	}
	fp, err := s.Footprint()
	if err != nil {
		return row, err
	}
	row.fill(fp, o.fpr)
	return row, nil
}

// growthSteps returns the key counts after which the settled shape is
// measured: only keys, or with growth the doublings that lead to it from
// keys/64 (or from the smallest step of at least 1000 keys).
func growthSteps(keys int, growth bool) []int {
	steps := []int{keys}
	for growth && len(steps) < 7 && steps[0]/2 >= 1000 {
		steps = append([]int{steps[0] / 2}, steps...)
	}
	return steps
}

// shapeRunner drives one store through the shapes.
type shapeRunner struct {
	*app
	ctx      context.Context
	s        bench.Engine
	w        *bench.Workload
	name     string   // the configuration, for progress bars
	memtable byteSize // the stores' memtable size
	loaded   int      // keys written so far
}

// phase runs f under a spinner described by desc.
func (r *shapeRunner) phase(desc string, f func() error) error {
	prog := r.startProgress(r.name+": "+desc, -1)
	defer prog.done()
	return f()
}

// growAndSettle loads the keys up to each step, settles, and measures the
// settled shape: the last step is the row's settled shape, all of them
// (with more than one) its growth series.
func (r *shapeRunner) growAndSettle(row *benchRow, steps []int) error {
	var loading time.Duration
	for i, n := range steps {
		t := time.Now()
		if err := r.loadSettled(n); err != nil {
			return err
		}
		loading += time.Since(t)
		sh, err := r.measure(shapeSettled, n)
		if err != nil {
			return err
		}
		if len(steps) > 1 {
			row.Growth = append(row.Growth, sh)
		}
		if i == len(steps)-1 {
			row.Shapes = append(row.Shapes, sh)
		}
	}
	row.LoadSeconds = jsonFloat(loading.Seconds())
	return nil
}

// settledL0Tables is how many L0 tables the settled shape aims for: as
// many as a store holds without an L0 compaction being due.
const settledL0Tables = kv.DefaultL0CompactionThreshold - 1

// tailChunk returns the size of the settled shape's last flushes: a
// quarter of a memtable's keys, with a generous 64 bytes of overhead per
// entry, so that two chunks together still fit one memtable.
func tailChunk(memtable, valueSize int) int {
	return max(1, memtable/(4*(bench.KeySize+valueSize+64)))
}

// tailChunks is how many chunks the settled shape keeps for its last
// flushes: enough for two rounds of L0 compaction.
const tailChunks = 2 * kv.DefaultL0CompactionThreshold

// loadSettled loads keys up to n and settles the store. A bulk load leaves
// L0 empty or nearly once background compactions catch up, whereas a store
// taking writes holds a few L0 tables between its L0 compactions. So the
// last keys come after a wait, in chunks each flushed to its own L0 table
// and followed by a wait, sized so that the last flush leaves L0 with
// settledL0Tables tables: an L0 compaction takes every L0 table once there
// are L0CompactionThreshold of them (keys arrive in random order, so each
// table spans the key range), so after each flush the flushes still needed
// are (settledL0Tables - L0 tables) mod the threshold. Then no compaction
// is due, and nothing was compacted by hand.
func (r *shapeRunner) loadSettled(n int) error {
	chunk := tailChunk(int(r.memtable), r.w.ValueSize)
	if err := r.loadKeys(max(r.loaded, n-tailChunks*chunk)); err != nil {
		return err
	}
	if err := r.flushAndWait(); err != nil {
		return err
	}
	for r.loaded < n {
		need := flushesToSettledL0(bench.L0Tables(r.s.Shape()))
		size := (n - r.loaded + need - 1) / need
		if size > 2*chunk {
			size = chunk // too many keys left for that many flushes: go round once more
		}
		if err := r.loadKeys(r.loaded + size); err != nil {
			return err
		}
		if err := r.flushAndWait(); err != nil {
			return err
		}
	}
	return nil
}

// flushesToSettledL0 returns how many more flushes, at least one, leave L0
// with settledL0Tables tables when it holds l0 now: each flush adds a
// table, and the one that makes L0CompactionThreshold of them sends them
// all to L1.
func flushesToSettledL0(l0 int) int {
	const t = kv.DefaultL0CompactionThreshold
	return ((settledL0Tables-l0-1)%t+t)%t + 1
}

// flushAndWait flushes the memtable and waits until no flush or compaction
// is running or due.
func (r *shapeRunner) flushAndWait() error {
	return r.phase("flush + wait for compactions", func() error {
		if err := r.s.Flush(); err != nil {
			return err
		}
		return r.s.WaitIdle(r.ctx)
	})
}

// loadKeys loads the keys up to n.
func (r *shapeRunner) loadKeys(n int) error {
	if n <= r.loaded {
		return nil
	}
	prog := r.startProgress(fmt.Sprintf("%s: load %d keys", r.name, n), int64(n-r.loaded))
	err := r.w.Load(r.ctx, r.s, r.loaded, n, prog.add)
	prog.done()
	if err == nil {
		r.loaded = n
	}
	return err
}

// measure runs the absent and then the present lookups on the LSM as it
// stands, present keys among the first n loaded. Nothing is written
// meanwhile, so the LSM should not change; if background work changed it
// all the same, the shape after the lookups is kept too.
func (r *shapeRunner) measure(shape string, n int) (shapeResult, error) {
	res := shapeResult{Shape: shape, Keys: r.loaded, LSM: r.s.Shape()}
	if err := r.s.Refresh(); err != nil {
		return res, err
	}
	for _, present := range []bool{false, true} {
		desc := fmt.Sprintf("%s: %s, %s lookups", r.name, shape, kindName(present))
		prog := r.startProgress(desc, int64(r.w.Lookups))
		c, elapsed, err := r.lookups(bench.LookupRun{Present: present, N: n, Count: r.w.Lookups}, prog)
		prog.done()
		if err != nil {
			return res, err
		}
		*res.phaseOf(present) = newPhase(c, int64(r.w.Lookups), elapsed)
	}
	if after := r.s.Shape(); !slices.Equal(after, res.LSM) {
		res.LSMAfter = after
	}
	return res, nil
}

// phaseOf returns the absent or present phase of s.
func (s *shapeResult) phaseOf(present bool) *phase {
	if present {
		return &s.Present
	}
	return &s.Absent
}

func kindName(present bool) string {
	if present {
		return "present"
	}
	return "absent"
}

// writeHeavy loads w.extra more keys in batches, and after each batch runs
// an equal share of the absent and the present lookups (present keys among
// those loaded before the phase, which are all in tables), while flushes
// and compactions go on in the background. Only the lookups are timed.
func (r *shapeRunner) writeHeavy() (shapeResult, error) {
	w := r.w
	res := shapeResult{Shape: shapeWriteHeavy}
	batches := (w.Extra + bench.LoadBatch - 1) / bench.LoadBatch
	var counts [2]lookupSnapshot
	var elapsed [2]time.Duration
	var l0 l0Sampler
	prog := r.startProgress(r.name+": write-heavy", int64(batches))
	defer prog.done()
	base := r.loaded
	for b := range batches {
		if err := r.writeHeavyBatch(base, b); err != nil {
			return res, err
		}
		l0.add(r.s.Shape())
		first, last := w.Lookups*b/batches, w.Lookups*(b+1)/batches
		for k, present := range []bool{false, true} {
			c, d, err := r.lookups(bench.LookupRun{Present: present, N: base, First: first, Count: last - first}, nil)
			if err != nil {
				return res, err
			}
			counts[k], elapsed[k] = counts[k].plus(c, 1), elapsed[k]+d
		}
		prog.add(1)
	}
	res.Keys, res.LSM, res.L0 = r.loaded, r.s.Shape(), l0.summary()
	res.Absent = newPhase(counts[0], int64(w.Lookups), elapsed[0])
	res.Present = newPhase(counts[1], int64(w.Lookups), elapsed[1])
	return res, nil
}

// writeHeavyBatch writes batch b of the write-heavy keys, which follow the
// first base loaded, and makes the lookups that follow see them.
func (r *shapeRunner) writeHeavyBatch(base, b int) error {
	lo := base + b*bench.LoadBatch
	n := min(bench.LoadBatch, base+r.w.Extra-lo)
	if err := r.w.LoadBatchAt(r.s, lo, n); err != nil {
		return err
	}
	r.loaded = lo + n
	return r.s.Refresh()
}

// l0Sampler collects the number of L0 tables seen over a phase.
type l0Sampler struct {
	n, sum, lo, hi int
}

func (l *l0Sampler) add(shape []levelShape) {
	tables := bench.L0Tables(shape)
	if l.n == 0 || tables < l.lo {
		l.lo = tables
	}
	l.hi = max(l.hi, tables)
	l.n++
	l.sum += tables
}

func (l *l0Sampler) summary() *tableRange {
	if l.n == 0 {
		return nil
	}
	return &tableRange{Min: l.lo, Max: l.hi, Mean: jsonFloat(float64(l.sum) / float64(l.n))}
}

// lookups performs a run of lookups (bench.Workload.RunLookups, which
// checks every answer) and returns the store's counters over just those
// lookups (the difference of two snapshots) and the time they took.
func (r *shapeRunner) lookups(run bench.LookupRun, prog *progress) (lookupSnapshot, time.Duration, error) {
	before := snapshotOf(r.s.Counters())
	elapsed, err := r.w.RunLookups(r.ctx, r.s, run, prog.add)
	if err != nil {
		return lookupSnapshot{}, 0, err
	}
	return snapshotOf(r.s.Counters()).plus(before, -1), elapsed, nil
}

// snapshotOf converts an engine's counters to the report's.
func snapshotOf(c bench.Counters) lookupSnapshot {
	s := lookupSnapshot{Total: fromLookupMetrics(c.Total)}
	for _, l := range c.Levels {
		s.Levels = append(s.Levels, fromLookupMetrics(l))
	}
	return s
}
