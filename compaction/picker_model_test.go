package compaction

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

// TestPicker_Model drives the picker over random histories, under both
// level schemes and random options: flushes add L0 tables of random keys,
// split along the base level's tables as a store's flushes are
// (Picker.FlushSplit), so L0 compactions take narrow columns of L0,
// and compactions are picked against those running (up to four, the
// picker eager to run more: L0CompactionConcurrency and
// CompactionDebtConcurrency of 1) and finish in random order, each
// replacing its inputs with one table holding, per key, the newest version
// of its inputs; those into L6 report what they moved and dropped
// (Picker.RecordBottomCompaction), so under a random MaxSpaceAmp the
// overwrite ratio shrinks L5's target. After every step:
//
//   - no compaction picked conflicts with one running;
//   - L0 compacts into the base level, which lies at or above every level
//     holding data, or, settling (PickSettle, as the writes pause now and
//     then), within L0; other levels compact into the next, or,
//     multi-level, the one after;
//   - the levels below L0 stay sorted (Version.CheckOrdering);
//   - a read, newest L0 table first and then level by level, finds the
//     newest version of every key written.
//
// Once the writes stop and the compactions drain, no level is due.
func TestPicker_Model(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	const rounds = 20
	mostRunning, bases, multiLevel, capped, inL0 := 0, map[int]bool{}, 0, 0, 0
	ran, orSettleChecked := 0, 0
	covered := func() bool { return mostRunning >= 2 && len(bases) >= 2 && multiLevel > 0 && capped > 0 }
	// -short runs 5 rounds, and more (up to all 20) only while a case
	// below is yet to happen: a few rounds miss one now and then.
	for round := 0; round < rounds && (!testing.Short() || round < 5 || !covered()); round++ {
		// Rounds take every pair of wide expansion and static levels in
		// turn, so even the few rounds of -short cover each.
		m := newPickerModel(rng, round%2 == 1, round/2%2 == 1, false, []float64{1.2, 1, 1.5, -1}[round/4%4])
		ctx := fmt.Sprintf("seed %d round %d (%s)", seed, round, m.describe())
		for step := 0; step < 400; step++ {
			m.step(t, ctx)
		}
		m.drain(t, ctx)
		m.checkSettled(t, ctx)
		mostRunning = max(mostRunning, m.mostRunning)
		multiLevel += m.multiLevel
		capped += m.capped
		inL0 += m.inL0
		for level := range m.bases {
			bases[level] = true
		}
		ran++
		orSettleChecked += m.orSettleChecked
	}
	if orSettleChecked < ran { // every drain picks at least once
		t.Errorf("PickOrSettle checked at %d picks in %d rounds", orSettleChecked, ran)
	}
	t.Logf("at most %d compactions running at once; base levels %v; %d multi-level compactions; %d picks under a lowered L5 target; %d settles within L0; PickOrSettle checked at %d picks",
		mostRunning, slices.Sorted(maps.Keys(bases)), multiLevel, capped, inL0, orSettleChecked)
	if !covered() {
		t.Errorf("seed %d: the histories never ran compactions side by side, never moved the base level, never carried a compaction on a level or never lowered L5's target for space", seed)
	}
}

// describeSizes describes v's tables with their sizes.
func describeSizes(v *manifest.Version) string {
	return v.Describe(func(f *manifest.FileMetadata) string { return fmt.Sprintf("size=%d", f.Size) })
}

// pickerModel is the state of one history of TestPicker_Model.
type pickerModel struct {
	rng      *rand.Rand
	opts     Options
	p        *Picker
	v        *manifest.Version
	running  []*Compaction
	contents map[*manifest.FileMetadata]map[int]base.SeqNum // each table's keys and their versions
	newest   map[int]base.SeqNum                            // what a read must find
	seq      base.SeqNum
	nextNum  base.FileNum

	mostRunning int          // the most compactions running at once
	bases       map[int]bool // the base levels L0 compacted into
	multiLevel  int          // multi-level compactions picked
	inL0        int          // compactions within L0 picked
	inL0Due     int          // of those, picked by Pick, with writes going on
	// unbounded is p without MaxSpaceAmp, which p's L5 target is compared
	// with; capped counts the picks made under a lower one.
	unbounded *Picker
	capped    int
	// orSettleChecked counts the picks at which PickOrSettle was checked
	// against PickSettle, then Pick.
	orSettleChecked int
}

const modelKeys = 300

// newPickerModel returns a history with random options; wideExpansion sets
// an expansion limit far above the default, staticLevels sizes the
// levels from L1 down (else from the bottom up, the base level moving,
// under maxSpaceAmp), and bigBase makes the base level's target eight
// times bigger.
func newPickerModel(rng *rand.Rand, wideExpansion, staticLevels, bigBase bool, maxSpaceAmp float64) *pickerModel {
	opts := Options{
		L0CompactionThreshold:     2 + rng.IntN(3),
		LBaseMaxBytes:             int64(4+rng.IntN(12)) << 10,
		LevelMultiplier:           2 + rng.IntN(3),
		TargetFileSize:            1 << 10,
		StaticLevels:              staticLevels,
		L0CompactionFileThreshold: 4 + rng.IntN(20),
		FlushSplitBytes:           int64(1+rng.IntN(8)) << 10,
		L0CompactionConcurrency:   1,
		CompactionDebtConcurrency: 1,
		MaxSpaceAmp:               maxSpaceAmp,
	}
	if bigBase {
		// A base level far bigger than a flush: L0 then settles within
		// itself (PickSettle), cheaper than rewriting the base level.
		opts.LBaseMaxBytes <<= 3
	}
	if wideExpansion {
		// Each compaction here writes one table; a wide expansion limit
		// lets the bigger ones carry on a level (multi-level compactions).
		opts.ExpandedCompactionFactor = 1000
	}
	v, err := NewVersion(nil, [NumLevels][]*FileMetadata{})
	if err != nil {
		panic(err)
	}
	unbounded := opts
	unbounded.MaxSpaceAmp = -1
	return &pickerModel{rng: rng, opts: opts, p: NewPicker(&opts, nil), unbounded: NewPicker(&unbounded, nil), v: v, nextNum: 1,
		contents: map[*manifest.FileMetadata]map[int]base.SeqNum{}, newest: map[int]base.SeqNum{}, bases: map[int]bool{}}
}

func (m *pickerModel) describe() string {
	return fmt.Sprintf("static %t, L0 trigger %d read-amp or %d tables, lbase %d KiB, multiplier %d, flush split %d KiB, expansion factor %d, max space-amp %g",
		m.opts.StaticLevels, m.opts.L0CompactionThreshold, m.opts.L0CompactionFileThreshold,
		m.opts.LBaseMaxBytes>>10, m.opts.LevelMultiplier, m.opts.FlushSplitBytes>>10, m.p.opts.ExpandedCompactionFactor,
		m.opts.MaxSpaceAmp)
}

// step flushes, picks or finishes a compaction at random, or now and
// then drains them all as if the writes had paused.
func (m *pickerModel) step(t testing.TB, ctx string) {
	if m.rng.IntN(100) == 0 {
		m.drain(t, ctx)
		return
	}
	switch r := m.rng.IntN(10); {
	case r < 4:
		m.flush(t, ctx)
	case r < 7 || len(m.running) == 0:
		m.pickOne(t, ctx, false)
	default:
		m.finish(t, ctx, m.rng.IntN(len(m.running)))
	}
}

// drain picks and finishes compactions, settling L0 too (PickSettle), as
// a store whose writes have stopped does, until nothing more is picked.
func (m *pickerModel) drain(t testing.TB, ctx string) {
	for len(m.running) > 0 || m.pickOne(t, ctx, true) {
		if len(m.running) > 0 {
			m.finish(t, ctx, m.rng.IntN(len(m.running)))
		}
	}
}

// flush adds the keys of a random range to L0, in tables cut along the
// base level as Picker.FlushSplit says.
func (m *pickerModel) flush(t testing.TB, ctx string) {
	lo := m.rng.IntN(modelKeys)
	hi := min(modelKeys-1, lo+m.rng.IntN(modelKeys/2))
	m.seq++
	var written []int
	for k := lo; k <= hi; k++ {
		if k == lo || k == hi || m.rng.IntN(3) == 0 {
			written = append(written, k)
			m.newest[k] = m.seq
		}
	}
	boundaries, splitBytes := m.p.FlushSplit(m.v)
	edit := &manifest.VersionEdit{}
	keys := map[int]base.SeqNum{}
	for i, k := range written {
		keys[k] = m.seq
		if i+1 == len(written) || int64(len(keys))<<10 >= splitBytes && boundaryBetween(boundaries, k, written[i+1]) {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: m.table(keys)})
			keys = map[int]base.SeqNum{}
		}
	}
	m.install(t, ctx, edit)
}

// boundaryBetween reports whether a table of boundaries ends at or after
// key a and before key b.
func boundaryBetween(boundaries []*manifest.FileMetadata, a, b int) bool {
	for _, f := range boundaries {
		if end := string(f.Largest.UserKey); end >= string(modelKey(a)) && end < string(modelKey(b)) {
			return true
		}
	}
	return false
}

// pickOne picks a compaction if the picker wants another, checks it and
// keeps it running; it reports whether one was picked.
func (m *pickerModel) pickOne(t testing.TB, ctx string, settle bool) bool {
	if len(m.running) >= 4 || !m.p.WantsAnother(m.v, m.running) {
		return false
	}
	shape := m.p.Shape(m.v, m.running)
	if shape.MaxBytes[NumLevels-2] < m.unbounded.Shape(m.v, m.running).MaxBytes[NumLevels-2] {
		m.capped++
	}
	var c *Compaction
	if settle { // as kv picks once its writes have stopped
		c = m.p.PickSettle(m.v, m.running)
	}
	if c == nil {
		c = m.p.Pick(m.v, m.running)
	}
	if settle { // kv asks both at once
		if one := m.p.PickOrSettle(m.v, m.running); !reflect.DeepEqual(one, c) {
			t.Fatalf("%s: PickOrSettle picked %s, PickSettle or else Pick %s", ctx, one, c)
		}
		m.orSettleChecked++
	}
	if c == nil {
		return false
	}
	for _, r := range m.running {
		if c.Conflicts(base.DefaultComparer.Compare, []*Compaction{r}) || sharesFile(c, r) {
			t.Fatalf("%s: %s conflicts with running %s", ctx, c, r)
		}
	}
	switch {
	case c.StartLevel == 0 && c.OutputLevel == 0:
		if !m.cheaperInL0(c.Inputs[0], shape.BaseLevel) {
			t.Fatalf("%s: %s stays in L0, though that does not write less than going into L%d\n%s",
				ctx, c, shape.BaseLevel, describeSizes(m.v))
		}
		m.inL0++
		if !settle {
			m.inL0Due++
		}
	case c.StartLevel == 0 && c.OutputLevel != shape.BaseLevel:
		t.Fatalf("%s: %s: L0 goes to the base level L%d", ctx, c, shape.BaseLevel)
	case c.StartLevel > 0 && len(c.Middle) == 0 && c.OutputLevel != c.StartLevel+1:
		t.Fatalf("%s: %s skips a level", ctx, c)
	case len(c.Middle) > 0 && (c.StartLevel == 0 || c.OutputLevel != c.StartLevel+2):
		t.Fatalf("%s: %s: a multi-level compaction goes from L1..L4 two levels down", ctx, c)
	}
	for level := 1; level < shape.BaseLevel; level++ {
		if len(m.v.Levels[level]) > 0 {
			t.Fatalf("%s: L%d holds tables above the base level L%d", ctx, level, shape.BaseLevel)
		}
	}
	if len(c.Middle) > 0 {
		m.multiLevel++
	}
	m.running = append(m.running, c)
	m.mostRunning = max(m.mostRunning, len(m.running))
	if c.StartLevel == 0 && c.OutputLevel > 0 {
		m.bases[c.OutputLevel] = true
	}
	return true
}

// cheaperInL0 reports whether the L0 tables inputs may merge within L0
// rather than go into baseLevel: they hold fewer bytes than the tables of
// baseLevel under them, no L0 table left out interleaves its sequence
// numbers with theirs, and L0 is due by its read amplification, 2 or
// more, rather than by its table count (leaving out the compactions
// running).
func (m *pickerModel) cheaperInL0(inputs []*manifest.FileMetadata, baseLevel int) bool {
	lo, hi := keyRange(base0Compare, inputs)
	under := totalSize(overlapsSorted(m.v.Levels[baseLevel], base0Compare, lo, hi))
	busy := busyTables(m.running)
	amp, count := l0ReadAmp(m.v, base0Compare, busy), 0
	for _, f := range m.v.Levels[0] {
		if !busy[f] {
			count++
		}
	}
	byAmp := amp >= 2 && amp*m.opts.L0CompactionFileThreshold >= count*m.opts.L0CompactionThreshold
	return byAmp && totalSize(inputs) < under && l0SeqDisjoint(m.v, base0Compare, inputs)
}

// finish completes running[i]: its inputs make way for one table holding
// the newest version of each of their keys.
func (m *pickerModel) finish(t testing.TB, ctx string, i int) {
	c := m.running[i]
	m.running = slices.Delete(m.running, i, i+1)
	edit := &manifest.VersionEdit{DeletedFiles: map[manifest.DeletedFileEntry]bool{}}
	merged := map[int]base.SeqNum{}
	for level, f := range c.Tables() {
		edit.DeletedFiles[manifest.DeletedFileEntry{Level: level, FileNum: f.FileNum}] = true
		for k, s := range m.contents[f] {
			merged[k] = max(merged[k], s)
		}
	}
	edit.NewFiles = []manifest.NewFileEntry{{Level: c.OutputLevel, Meta: m.table(merged)}}
	if c.OutputLevel == NumLevels-1 && c.StartLevel != c.OutputLevel {
		// Tell the picker what a store would: the entries moved down and
		// those the merge dropped.
		var moved, in int64
		for _, f := range append(slices.Clip(c.Inputs[0]), c.Middle...) {
			moved += int64(len(m.contents[f]))
		}
		for _, f := range c.Tables() {
			in += int64(len(m.contents[f]))
		}
		m.p.RecordBottomCompaction(moved, in-int64(len(merged)))
	}
	m.install(t, ctx+": finishing "+c.String(), edit)
}

// table returns the metadata of a new table holding keys, 1 KiB a key.
func (m *pickerModel) table(keys map[int]base.SeqNum) *manifest.FileMetadata {
	f := &manifest.FileMetadata{FileNum: m.nextNum, Size: uint64(len(keys)) << 10, NumEntries: uint64(len(keys))}
	m.nextNum++
	lo, hi := modelKeys, -1
	f.SmallestSeqNum = base.SeqNumMax
	for k, s := range keys {
		lo, hi = min(lo, k), max(hi, k)
		f.SmallestSeqNum, f.LargestSeqNum = min(f.SmallestSeqNum, s), max(f.LargestSeqNum, s)
	}
	f.Smallest = base.MakeInternalKey(modelKey(lo), keys[lo], base.KindSet)
	f.Largest = base.MakeInternalKey(modelKey(hi), keys[hi], base.KindSet)
	m.contents[f] = keys
	return f
}

func modelKey(k int) []byte { return fmt.Appendf(nil, "k%03d", k) }

// install applies edit and checks the version it makes.
func (m *pickerModel) install(t testing.TB, ctx string, edit *manifest.VersionEdit) {
	v, err := m.v.Apply(base.DefaultComparer.Compare, edit)
	if err != nil {
		t.Fatalf("%s: %v", ctx, err)
	}
	m.v = v
	if err := v.CheckOrdering(base.DefaultComparer.Compare); err != nil {
		t.Fatalf("%s: %v\n%s", ctx, err, describeSizes(v))
	}
	for k, want := range m.newest {
		if got := m.read(k); got != want {
			t.Fatalf("%s: a read of %s finds version %d, want %d\n%s", ctx, modelKey(k), got, want, describeSizes(v))
		}
	}
}

// read returns the version of k a lookup finds: in the newest L0 table
// holding it, else in the first level holding it.
func (m *pickerModel) read(k int) base.SeqNum {
	var best base.SeqNum
	var bestTable *manifest.FileMetadata
	for _, f := range m.v.Levels[0] {
		if s, ok := m.contents[f][k]; ok && (bestTable == nil || f.LargestSeqNum > bestTable.LargestSeqNum) {
			best, bestTable = s, f
		}
	}
	if bestTable != nil {
		return best
	}
	for _, files := range m.v.Levels[1:] {
		for _, f := range overlapsSorted(files, base.DefaultComparer.Compare, modelKey(k), modelKey(k)) {
			if s, ok := m.contents[f][k]; ok {
				return s
			}
		}
	}
	return 0
}

// checkSettled checks that with nothing running, nothing is due, and L0
// has settled: at most one table under each key, or less read
// amplification than half L0CompactionThreshold (see PickSettle).
func (m *pickerModel) checkSettled(t testing.TB, ctx string) {
	if amp := l0ReadAmp(m.v, base.DefaultComparer.Compare, nil); amp >= 2 && 2*amp >= m.p.opts.L0CompactionThreshold {
		t.Fatalf("%s: nothing more is picked but L0 has read amplification %d\n%s", ctx, amp, describeSizes(m.v))
	}
	prio := m.p.Priorities(m.v)
	for level := 0; level < NumLevels-1; level++ {
		if prio[level] >= 1 {
			t.Fatalf("%s: nothing more is picked but L%d has priority %.2f\n%s", ctx, level, prio[level], describeSizes(m.v))
		}
	}
}

// TestPicker_SettleInL0 drives histories where L0 settles above a base
// level far bigger than a flush: a store grows, then takes one to three
// flushes at a time and drains between them, settling L0
// (Picker.PickSettle) as a store whose writes pause does. Each settle
// stays within L0 only when that writes less than compacting into the
// base level would (its L0 tables hold fewer bytes than the base-level
// tables under them) and no other L0 table interleaves its sequence
// numbers with theirs, and goes into the base level otherwise. The
// model's checks hold throughout: every key reads its newest version,
// and once drained L0 has settled.
func TestPicker_SettleInL0(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	// At least 10 rounds, and more, up to 40, until each kind of settle
	// and the merges picked while writes go on were seen 3 times: some
	// drawn shapes never make a merge within L0 due while writes go on
	// (about 1 seed in 20 saw none in 10 rounds).
	inL0, intoBase, picked := 0, 0, 0
	for round := 0; round < 40 && (round < 10 || inL0 < 3 || intoBase < 3 || picked < 3); round++ {
		m := newPickerModel(rng, false, false, true, -1)
		ctx := fmt.Sprintf("seed %d round %d (%s)", seed, round, m.describe())
		for totalSize(m.v.Levels[NumLevels-1]) < modelKeys<<9 {
			m.flush(t, ctx)
			m.drain(t, ctx)
		}
		for range 50 {
			for range 1 + rng.IntN(3) {
				m.flush(t, ctx)
			}
			for len(m.running) > 0 || m.pickOne(t, ctx, false) {
				if len(m.running) > 0 {
					m.finish(t, ctx, rng.IntN(len(m.running)))
				}
			}
			if c := m.p.PickSettle(m.v, nil); c != nil {
				base := m.p.Shape(m.v, nil).BaseLevel
				under := totalSize(overlapsSorted(m.v.Levels[base], base0Compare, c.Smallest, c.Largest))
				cheaper := m.cheaperInL0(c.Inputs[0], base)
				switch {
				case c.OutputLevel == 0 && !cheaper:
					t.Fatalf("%s: %s settles within L0, though %d B of L0 go above %d B of L%d", ctx, c, totalSize(c.Inputs[0]), under, base)
				case c.OutputLevel == 0:
					inL0++
				case cheaper:
					t.Fatalf("%s: %s settles into L%d, though %d B of L0 go above %d B there", ctx, c, base, totalSize(c.Inputs[0]), under)
				default:
					intoBase++
				}
			}
			m.drain(t, ctx)
			m.checkSettled(t, ctx)
		}
		picked += m.inL0Due
	}
	t.Logf("%d settles within L0, %d into the base level; %d merges within L0 picked while writes went on", inL0, intoBase, picked)
	if inL0 < 3 || intoBase < 3 || picked < 3 {
		t.Errorf("seed %d: %d settles within L0 and %d into the base level, %d merges within L0 picked while writes went on; want at least 3 of each",
			seed, inL0, intoBase, picked)
	}
}

var base0Compare = base.DefaultComparer.Compare

// BenchmarkPicker_Settle measures a store's pick once its writes have
// stopped, on a Version the model grew (fixed seed): PickSettle, then
// Pick when it has nothing, as kv asked before; and PickOrSettle, which
// computes the shape, the scores and L0's statistics once for both.
func BenchmarkPicker_Settle(b *testing.B) {
	m := newPickerModel(rand.New(rand.NewPCG(1, 1)), false, false, false, 1.2)
	for range 300 {
		m.step(b, "bench")
	}
	v, running := m.v, m.running
	b.Logf("%d L0 tables, %d running", len(v.Levels[0]), len(running))
	b.Run("two-step", func(b *testing.B) {
		for range b.N {
			if c := m.p.PickSettle(v, running); c == nil {
				m.p.Pick(v, running)
			}
		}
	})
	b.Run("one-pass", func(b *testing.B) {
		for range b.N {
			m.p.PickOrSettle(v, running)
		}
	})
}
