package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/bloomkv/bloomkv/kv"
)

// benchOne runs the workload on one configuration: the load (in doubling
// steps with --growth, measuring the settled shape after each), then the
// settled, write-heavy and compacted shapes in turn, on the same store.
func (a *app) benchOne(ctx context.Context, cfg benchConfig, w *workload, dir string, o benchOptions) (row benchRow, err error) {
	row = benchRow{Config: cfg.name, Engine: cfg.engine(), Filter: cfg.filter,
		NominalBitsPerKey: jsonFloat(cfg.nominal)}
	s, err := cfg.open(dir, o)
	if err != nil {
		return row, err
	}
	defer func() {
		if cerr := s.close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	r := &shapeRunner{app: a, ctx: ctx, s: s, w: w, name: cfg.name, memtable: o.memtable}
	if err := r.growAndSettle(&row, growthSteps(w.keys, o.growth)); err != nil {
		return row, err
	}
	wh, err := r.writeHeavy()
	if err != nil {
		return row, err
	}
	row.Shapes = append(row.Shapes, wh)
	if err := r.phase("compact", s.compact); err != nil {
		return row, err
	}
	compacted, err := r.measure(shapeCompacted, w.keys+w.extra)
	if err != nil {
		return row, err
	}
	row.Shapes = append(row.Shapes, compacted)
	if err := w.verifySample(s, w.keys+w.extra); err != nil {
		return row, err
	}
	fp, err := s.footprint()
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
	s        store
	w        *workload
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
	return max(1, memtable/(4*(keySize+valueSize+64)))
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
	chunk := tailChunk(int(r.memtable), r.w.valueSize)
	if err := r.loadKeys(max(r.loaded, n-tailChunks*chunk)); err != nil {
		return err
	}
	if err := r.flushAndWait(); err != nil {
		return err
	}
	for r.loaded < n {
		need := flushesToSettledL0(l0Tables(r.s.shape()))
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
		if err := r.s.flush(); err != nil {
			return err
		}
		r.s.waitIdle()
		return nil
	})
}

// l0Tables returns the number of L0 tables of an LSM shape.
func l0Tables(shape []levelShape) int {
	if len(shape) > 0 && shape[0].Level == 0 {
		return shape[0].Tables
	}
	return 0
}

// loadKeys loads the keys up to n.
func (r *shapeRunner) loadKeys(n int) error {
	if n <= r.loaded {
		return nil
	}
	prog := r.startProgress(fmt.Sprintf("%s: load %d keys", r.name, n), int64(n-r.loaded))
	err := load(r.ctx, r.s, r.w, r.loaded, n, prog)
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
	res := shapeResult{Shape: shape, Keys: r.loaded, LSM: r.s.shape()}
	if err := r.s.refresh(); err != nil {
		return res, err
	}
	for _, present := range []bool{false, true} {
		desc := fmt.Sprintf("%s: %s, %s lookups", r.name, shape, kindName(present))
		prog := r.startProgress(desc, int64(r.w.lookups))
		c, elapsed, err := r.lookups(lookupRun{present: present, n: n, count: r.w.lookups}, prog)
		prog.done()
		if err != nil {
			return res, err
		}
		*res.phaseOf(present) = newPhase(c, int64(r.w.lookups), elapsed)
	}
	if after := r.s.shape(); !slices.Equal(after, res.LSM) {
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
	batches := (w.extra + loadBatch - 1) / loadBatch
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
		l0.add(r.s.shape())
		first, last := w.lookups*b/batches, w.lookups*(b+1)/batches
		for k, present := range []bool{false, true} {
			c, d, err := r.lookups(lookupRun{present: present, n: base, first: first, count: last - first}, nil)
			if err != nil {
				return res, err
			}
			counts[k], elapsed[k] = counts[k].plus(c, 1), elapsed[k]+d
		}
		prog.add(1)
	}
	res.Keys, res.LSM, res.L0 = r.loaded, r.s.shape(), l0.summary()
	res.Absent = newPhase(counts[0], int64(w.lookups), elapsed[0])
	res.Present = newPhase(counts[1], int64(w.lookups), elapsed[1])
	return res, nil
}

// writeHeavyBatch writes batch b of the write-heavy keys, which follow the
// first base loaded, and makes the lookups that follow see them.
func (r *shapeRunner) writeHeavyBatch(base, b int) error {
	lo := base + b*loadBatch
	n := min(loadBatch, base+r.w.extra-lo)
	if err := loadBatchAt(r.s, r.w, lo, n); err != nil {
		return err
	}
	r.loaded = lo + n
	return r.s.refresh()
}

// l0Sampler collects the number of L0 tables seen over a phase.
type l0Sampler struct {
	n, sum, lo, hi int
}

func (l *l0Sampler) add(shape []levelShape) {
	tables := l0Tables(shape)
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

// lookupRun is a run of lookups: count of them starting at lookup first,
// of absent keys or of present keys among the first n loaded.
type lookupRun struct {
	present         bool
	n, first, count int
}

// lookups performs a run of lookups and returns the store's counters over
// just those lookups (the difference of two snapshots) and the time they
// took. Every answer is checked: a present key must be found with a value
// of the right size, an absent one must not be.
func (r *shapeRunner) lookups(run lookupRun, prog *progress) (lookupSnapshot, time.Duration, error) {
	var buf [keySize]byte
	before := r.s.counters()
	start := time.Now()
	for i := run.first; i < run.first+run.count; i++ {
		if i%progressEvery == 0 && r.ctx.Err() != nil {
			return lookupSnapshot{}, 0, r.ctx.Err()
		}
		key := r.w.lookupKey(buf[:0], i, run.n, run.present)
		v, found, err := r.s.get(key)
		switch {
		case err != nil:
			return lookupSnapshot{}, 0, fmt.Errorf("get %q: %w", key, err)
		case found != run.present:
			return lookupSnapshot{}, 0, fmt.Errorf("get %q: found=%t, want %t", key, found, run.present)
		case found && len(v) != r.w.valueSize:
			return lookupSnapshot{}, 0, fmt.Errorf("get %q: value of %d bytes, want %d", key, len(v), r.w.valueSize)
		}
		prog.add(1)
	}
	elapsed := time.Since(start)
	return r.s.counters().plus(before, -1), elapsed, nil
}

// verifySample checks the values of up to 1000 of the first n keys byte
// for byte. The timed lookups check only their sizes, so as not to time
// the generator.
func (w *workload) verifySample(s store, n int) error {
	if err := s.refresh(); err != nil {
		return err
	}
	var key [keySize]byte
	var want []byte
	step := max(1, n/1000)
	for i := 0; i < n; i += step {
		k := w.kg.present(key[:0], i)
		v, found, err := s.get(k)
		if err != nil {
			return fmt.Errorf("get %q: %w", k, err)
		}
		want = w.kg.value(want[:0], i, w.valueSize)
		if !found || !bytes.Equal(v, want) {
			return fmt.Errorf("get %q: found=%t, value differs from the one written", k, found)
		}
	}
	return nil
}
