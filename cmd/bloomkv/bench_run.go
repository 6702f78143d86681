package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/bloomkv/bloomkv/internal/bench"
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
	r := a.newShapeRunner(ctx, cfg.name, s, w, int64(o.memtable))
	if err := r.growAndSettle(&row, bench.GrowthSteps(w.Keys, o.growth)); err != nil {
		return row, err
	}
	wh, err := r.writeHeavy()
	if err != nil {
		return row, err
	}
	row.Shapes = append(row.Shapes, wh)
	if err := r.Phase("compact", s.Compact); err != nil {
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

// shapeRunner drives one store through the shapes: the harness's Loader
// reaches them, the runner measures them.
type shapeRunner struct {
	*bench.Loader
	ctx context.Context
	s   bench.Engine
	w   *bench.Workload
}

// newShapeRunner returns the runner of store s of configuration name,
// showing its phases on a's progress bars.
func (a *app) newShapeRunner(ctx context.Context, name string, s bench.Engine, w *bench.Workload, memtable int64) *shapeRunner {
	l := &bench.Loader{Engine: s, Workload: w, MemTable: memtable, Name: name,
		Start: func(desc string, total int64) bench.Progress { return benchProgress{a.startProgress(desc, total)} }}
	return &shapeRunner{Loader: l, ctx: ctx, s: s, w: w}
}

// benchProgress shows a harness phase on a progress bar.
type benchProgress struct{ p *progress }

func (b benchProgress) Add(n int) { b.p.add(n) }
func (b benchProgress) Done()     { b.p.done() }

// growAndSettle loads the keys up to each step, settles, and measures the
// settled shape: the last step is the row's settled shape, all of them
// (with more than one) its growth series.
func (r *shapeRunner) growAndSettle(row *benchRow, steps []int) error {
	var loading time.Duration
	for i, n := range steps {
		t := time.Now()
		if err := r.Settle(r.ctx, n); err != nil {
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

// measure runs the absent and then the present lookups on the LSM as it
// stands, present keys among the first n loaded. Nothing is written
// meanwhile, so the LSM should not change; if background work changed it
// all the same, the shape after the lookups is kept too.
func (r *shapeRunner) measure(shape string, n int) (shapeResult, error) {
	res := shapeResult{Shape: shape, Keys: r.Loaded, LSM: r.s.Shape()}
	if err := r.s.Refresh(); err != nil {
		return res, err
	}
	for _, present := range []bool{false, true} {
		prog := r.Start(fmt.Sprintf("%s: %s, %s lookups", r.Name, shape, kindName(present)), int64(r.w.Lookups))
		c, elapsed, err := r.lookups(bench.LookupRun{Present: present, N: n, Count: r.w.Lookups}, prog.Add)
		prog.Done()
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
	batches := w.WriteHeavyBatches()
	var counts [2]lookupSnapshot
	var elapsed [2]time.Duration
	var l0 l0Sampler
	prog := r.Start(r.Name+": write-heavy", int64(batches))
	defer prog.Done()
	base := r.Loaded
	for b := range batches {
		if err := r.WriteHeavyBatch(base, b); err != nil {
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
		prog.Add(1)
	}
	res.Keys, res.LSM, res.L0 = r.Loaded, r.s.Shape(), l0.summary()
	res.Absent = newPhase(counts[0], int64(w.Lookups), elapsed[0])
	res.Present = newPhase(counts[1], int64(w.Lookups), elapsed[1])
	return res, nil
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
func (r *shapeRunner) lookups(run bench.LookupRun, progress func(n int)) (lookupSnapshot, time.Duration, error) {
	before := snapshotOf(r.s.Counters())
	elapsed, err := r.w.RunLookups(r.ctx, r.s, run, progress)
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
