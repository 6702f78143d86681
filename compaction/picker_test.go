package compaction

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/cockroachdb/datadriven"
)

// TestPicker runs testdata/picker (static level sizes) and
// testdata/shape (dynamic ones). Commands:
//
//	define [l0-threshold=N] [l0-file-threshold=N] [lbase=SIZE] [multiplier=N] [target-file-size=SIZE] [levels=static]
//	       [l0-concurrency=N] [debt-concurrency=SIZE]
//	L<n>
//	  <filenum>:<smallest>-<largest> [size=SIZE]   (key "a" means a#<filenum>,SET)
//	scores
//	shape                the base level, each level's target, score and priority,
//	                     L0's read amplification and the debt, against the kept
//	                     compactions
//	pick [keep]          picks against the compactions kept so far; keep adds the result
//	clear                forgets the kept compactions
//	manual level=N [start=K] [end=K] [keep]
//	compact-range [start=K] [end=K] [flush=K-K]
//	                     walks a Manual plan, installing after each step one table
//	                     that stands for the compaction's output (and, with flush,
//	                     a new L0 table over that range, as a flush of later
//	                     writes would); prints the steps and the version they leave
//	elide                one user key per line: may the last compaction drop its tombstones?
//	zero                 may the last compaction zero sequence numbers (ZeroSeqNums)?
func TestPicker(t *testing.T) {
	checked := 0
	for _, file := range []string{"testdata/picker", "testdata/shape"} {
		t.Run(file, func(t *testing.T) { checked += runPickerScript(t, file) })
	}
	if checked < 50 {
		t.Fatalf("PickOrSettle checked at %d picks", checked)
	}
}

// runPickerScript runs the picker script file and returns how many picks
// it checked PickOrSettle at.
func runPickerScript(t *testing.T, file string) (checked int) {
	var (
		v          *manifest.Version
		p          *Picker
		inProgress []*Compaction
		last       *Compaction
		nextNum    base.FileNum // of the tables compact-range installs
	)
	datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			p = NewPicker(parsePickerOptions(t, d), nil)
			v = parseVersion(t, d.Input)
			inProgress, last, nextNum = nil, nil, 100
			return v.Describe(func(f *manifest.FileMetadata) string { return fmt.Sprintf("size=%d", f.Size) })
		case "scores":
			var b strings.Builder
			for level, s := range p.Scores(v) {
				fmt.Fprintf(&b, "L%d: %.2f\n", level, s)
			}
			return b.String()
		case "shape":
			return formatShape(p, v, inProgress)
		case "pick":
			checkPickOrSettle(t, p, v, inProgress)
			checked++
			last = p.Pick(v, inProgress)
			if last != nil && d.HasArg("keep") {
				inProgress = append(inProgress, last)
			}
			return formatCompaction(last)
		case "pick-settle":
			checkPickOrSettle(t, p, v, inProgress)
			checked++
			last = p.PickSettle(v, inProgress)
			if last != nil && d.HasArg("keep") {
				inProgress = append(inProgress, last)
			}
			return formatCompaction(last)
		case "clear":
			inProgress = nil
			return ""
		case "record-bottom":
			var moved, freed int64
			d.ScanArgs(t, "moved", &moved)
			d.ScanArgs(t, "freed", &freed)
			p.RecordBottomCompaction(moved, freed)
			return fmt.Sprintf("overwrite ratio %.3f", p.OverwriteRatio())
		case "manual":
			var level int
			var start, end string
			d.ScanArgs(t, "level", &level)
			d.MaybeScanArgs(t, "start", &start)
			d.MaybeScanArgs(t, "end", &end)
			last = p.PickManual(v, level, bytesOrNil(start), bytesOrNil(end))
			if last != nil && d.HasArg("keep") {
				inProgress = append(inProgress, last)
			}
			return formatCompaction(last)
		case "compact-range":
			var start, end, flush string
			d.MaybeScanArgs(t, "start", &start)
			d.MaybeScanArgs(t, "end", &end)
			d.MaybeScanArgs(t, "flush", &flush)
			var out string
			out, v, last = walkManual(t, p, v, bytesOrNil(start), bytesOrNil(end), flush, &nextNum)
			return out
		case "elide":
			elide := last.ElideTombstone(v, base.DefaultComparer.Compare)
			var b strings.Builder
			for _, k := range strings.Fields(d.Input) {
				fmt.Fprintf(&b, "%s: %t\n", k, elide([]byte(k)))
			}
			return b.String()
		case "zero":
			return fmt.Sprintf("%t\n", last.ZeroSeqNums(v, base.DefaultComparer.Compare))
		default:
			return fmt.Sprintf("unknown command %q", d.Cmd)
		}
	})
	return checked
}

// checkPickOrSettle checks that PickOrSettle picks on v what PickSettle
// does, or else what Pick does.
func checkPickOrSettle(t *testing.T, p *Picker, v *manifest.Version, inProgress []*Compaction) {
	t.Helper()
	want := p.PickSettle(v, inProgress)
	if want == nil {
		want = p.Pick(v, inProgress)
	}
	if got := p.PickOrSettle(v, inProgress); !reflect.DeepEqual(got, want) {
		t.Fatalf("PickOrSettle: %s(%+v)\nwant %s(%+v)", formatCompaction(got), got, formatCompaction(want), want)
	}
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

func parsePickerOptions(t *testing.T, d *datadriven.TestData) *Options {
	opts := &Options{}
	for _, arg := range d.CmdArgs {
		val := arg.SingleVal(t)
		switch arg.Key {
		case "l0-threshold":
			opts.L0CompactionThreshold = int(parseSize(t, val))
		case "l0-file-threshold":
			opts.L0CompactionFileThreshold = int(parseSize(t, val))
		case "lbase":
			opts.LBaseMaxBytes = parseSize(t, val)
		case "multiplier":
			opts.LevelMultiplier = int(parseSize(t, val))
		case "target-file-size":
			opts.TargetFileSize = parseSize(t, val)
		case "l0-concurrency":
			opts.L0CompactionConcurrency = int(parseSize(t, val))
		case "debt-concurrency":
			opts.CompactionDebtConcurrency = parseSize(t, val)
		case "max-space-amp":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				t.Fatalf("max-space-amp=%s: %v", val, err)
			}
			opts.MaxSpaceAmp = f
		case "levels":
			if val != "static" {
				t.Fatalf("levels=%s: only levels=static is known", val)
			}
			opts.StaticLevels = true
		default:
			t.Fatalf("unknown option %q", arg.Key)
		}
	}
	return opts
}

// parseSize parses a byte count with an optional KB, MB or GB suffix.
func parseSize(t testing.TB, s string) int64 {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30} {
		if strings.HasSuffix(s, suffix) {
			s, mult = strings.TrimSuffix(s, suffix), m
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("bad size %q", s)
	}
	return n * mult
}

// parseVersion parses the level descriptions of a define command into a
// Version, built by NewVersion.
func parseVersion(t *testing.T, input string) *manifest.Version {
	var levels [NumLevels][]*FileMetadata
	level := -1
	for _, line := range strings.Split(input, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "L"):
			var err error
			if level, err = strconv.Atoi(line[1:]); err != nil || level >= manifest.NumLevels {
				t.Fatalf("bad level %q", line)
			}
		case level < 0:
			t.Fatalf("table %q before any level", line)
		default:
			levels[level] = append(levels[level], parseFile(t, line))
		}
	}
	v, err := NewVersion(nil, levels)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// parseFile parses "<filenum>:<smallest>-<largest> [size=SIZE]".
func parseFile(t *testing.T, line string) *manifest.FileMetadata {
	fields := strings.Fields(line)
	numStr, bounds, ok := strings.Cut(fields[0], ":")
	lo, hi, ok2 := strings.Cut(bounds, "-")
	num, err := strconv.ParseUint(numStr, 10, 64)
	if !ok || !ok2 || err != nil {
		t.Fatalf("bad table %q", line)
	}
	f := &manifest.FileMetadata{FileNum: base.FileNum(num), Size: 1 << 20}
	key := func(s string) base.InternalKey {
		if !strings.Contains(s, "#") {
			return base.MakeInternalKey([]byte(s), base.SeqNum(num), base.KindSet)
		}
		return itertest.ParseKey(t, s)
	}
	f.Smallest, f.Largest = key(lo), key(hi)
	largestSeq := f.Largest.SeqNum()
	if f.Largest.IsExclusiveSentinel() { // a range deletion's end: no write of its own
		largestSeq = f.Smallest.SeqNum()
	}
	f.SmallestSeqNum = min(f.Smallest.SeqNum(), largestSeq)
	f.LargestSeqNum = max(f.Smallest.SeqNum(), largestSeq)
	for _, field := range fields[1:] {
		k, val, _ := strings.Cut(field, "=")
		if k != "size" {
			t.Fatalf("bad table attribute %q", field)
		}
		f.Size = uint64(parseSize(t, val))
	}
	return f
}

// formatShape prints what Pick weighs on v with inProgress running.
func formatShape(p *Picker, v *manifest.Version, inProgress []*Compaction) string {
	var b strings.Builder
	pass := p.newPass(v, inProgress)
	shape, scores, prio := pass.shape, pass.scores, pass.prio
	fmt.Fprintf(&b, "base level: L%d\n", shape.BaseLevel)
	fmt.Fprintf(&b, "L0: %d tables, score %.2f, priority %.2f\n", len(v.Levels[0]), scores[0], prio[0])
	for level := 1; level < NumLevels; level++ {
		if level < shape.BaseLevel && len(v.Levels[level]) == 0 {
			continue
		}
		target := "none"
		if shape.MaxBytes[level] != math.MaxInt64 {
			target = fmt.Sprintf("%.2fMB", float64(shape.MaxBytes[level])/(1<<20))
		}
		fmt.Fprintf(&b, "L%d: %.2fMB, target %s, score %.2f, priority %.2f\n", level,
			float64(totalSize(v.Levels[level]))/(1<<20), target, scores[level], prio[level])
	}
	fmt.Fprintf(&b, "L0 read-amp %d, debt %.2fMB, wants another: %t\n", p.L0ReadAmp(v, inProgress),
		float64(p.Debt(v, inProgress))/(1<<20), p.WantsAnother(v, inProgress))
	return b.String()
}

func formatCompaction(c *Compaction) string {
	if c == nil {
		return "no compaction\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "L%d -> L%d", c.StartLevel, c.OutputLevel)
	if c.Manual {
		b.WriteString(", manual")
	} else {
		fmt.Fprintf(&b, ", score %.2f", c.Score)
	}
	fmt.Fprintf(&b, "\n  L%d: %s\n", c.StartLevel, formatFiles(c.Inputs[0]))
	if len(c.Middle) > 0 {
		fmt.Fprintf(&b, "  L%d: %s (middle)\n", c.StartLevel+1, formatFiles(c.Middle))
	}
	if c.OutputLevel != c.StartLevel {
		fmt.Fprintf(&b, "  L%d: %s\n", c.OutputLevel, formatFiles(c.Inputs[1]))
	}
	fmt.Fprintf(&b, "  range: [%s, %s]\n", c.Smallest, c.Largest)
	if len(c.Grandparents) > 0 {
		fmt.Fprintf(&b, "  grandparents: %s\n", formatFiles(c.Grandparents))
	}
	if c.TrivialMove() {
		b.WriteString("  trivial move\n")
	}
	return b.String()
}

// walkManual runs the Manual plan of [start, end] over v. After each step
// it installs, in place of the inputs, one output table covering the
// compaction's range, as large as its inputs, numbered *next (then
// incremented). With flush ("k-k"), it also adds an L0 table over that
// range after each step, holding later writes than any before (its
// sequence number is its file number, also taken from *next). It returns
// the steps, the final version and the last compaction.
func walkManual(t *testing.T, p *Picker, v *manifest.Version, start, end []byte, flush string, next *base.FileNum) (string, *manifest.Version, *Compaction) {
	var b strings.Builder
	var last *Compaction
	m := p.NewManual(v, start, end)
	for steps, c := 0, m.Next(v); c != nil; steps, c = steps+1, m.Next(v) {
		if steps == 50 {
			t.Fatalf("the walk does not end: %s", c)
		}
		b.WriteString(formatCompaction(c))
		edit := &manifest.VersionEdit{DeletedFiles: map[manifest.DeletedFileEntry]bool{}}
		for level, f := range c.Tables() {
			edit.DeletedFiles[manifest.DeletedFileEntry{Level: level, FileNum: f.FileNum}] = true
		}
		edit.NewFiles = []manifest.NewFileEntry{{Level: c.OutputLevel, Meta: simulatedOutput(*next, c)}}
		*next++
		if flush != "" {
			f := parseFile(t, fmt.Sprintf("%d:%s", *next, flush))
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: f})
			*next++
		}
		var err error
		if v, err = v.Apply(base.DefaultComparer.Compare, edit); err != nil {
			t.Fatal(err)
		}
		last = c
	}
	b.WriteString("done\n")
	b.WriteString(v.Describe(func(f *manifest.FileMetadata) string { return fmt.Sprintf("size=%d", f.Size) }))
	return b.String(), v, last
}

// simulatedOutput is a table numbered num standing for the output of c.
func simulatedOutput(num base.FileNum, c *Compaction) *manifest.FileMetadata {
	f := &manifest.FileMetadata{FileNum: num, Size: c.InputBytes(), SmallestSeqNum: base.SeqNum(num)}
	for _, in := range c.Tables() {
		f.SmallestSeqNum = min(f.SmallestSeqNum, in.SmallestSeqNum)
		f.LargestSeqNum = max(f.LargestSeqNum, in.LargestSeqNum)
	}
	f.Smallest = base.MakeInternalKey(c.Smallest, f.LargestSeqNum, base.KindSet)
	f.Largest = base.MakeInternalKey(c.Largest, f.SmallestSeqNum, base.KindSet)
	return f
}

// TestPicker_L0LeavesNoOlderTable checks that build refuses L0 inputs that
// would leave an older overlapping L0 table behind, and that the
// transitive choice the picker makes never needs refusing: over random L0
// layouts and ranges, overlapsL0 leaves no overlapping table out, and Pick
// finds a compaction for a due L0.
func TestPicker_L0LeavesNoOlderTable(t *testing.T) {
	p := NewPicker(&Options{L0CompactionThreshold: 1}, nil)
	v := parseVersion(t, "L0\n1:a-c\n2:b-d\n3:x-y")
	l0 := v.Levels[0]
	if c := p.build(v, 0, 1, l0[1:2], nil, false); c != nil {
		t.Fatalf("build took %s, leaving the older 000001 behind", c)
	}
	if c := p.build(v, 0, 1, l0[2:3], nil, false); c == nil {
		t.Fatal("build refused 000003, which overlaps no other table")
	}

	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	cmp := base.DefaultComparer.Compare
	letter := func() string { return string(rune('a' + rng.IntN(26))) }
	for round := range 500 {
		var b strings.Builder
		b.WriteString("L0\n")
		for n := 1; n <= 1+rng.IntN(8); n++ {
			lo, hi := letter(), letter()
			fmt.Fprintf(&b, "%d:%s-%s\n", n, min(lo, hi), max(lo, hi))
		}
		v := parseVersion(t, b.String())
		lo, hi := letter(), letter()
		start, end := []byte(min(lo, hi)), []byte(max(lo, hi))
		if in := overlapsL0(v, cmp, start, end); leavesOlderL0(v, cmp, in) {
			t.Fatalf("seed %d round %d: overlapsL0 [%s, %s] of\n%s leaves an older table behind", seed, round, start, end, b.String())
		}
		if c := p.Pick(v, nil); c == nil || c.StartLevel != 0 {
			t.Fatalf("seed %d round %d: Pick found %v for\n%s", seed, round, c, b.String())
		}
	}
}

// TestSettleInL0_TakesTwoTables: an L0 compaction of one table goes into
// the base level, however much cheaper a merge within L0 would be, since
// that merge would leave L0 as deep as it found it; of two tables lying
// one over the other it becomes the merge within L0.
func TestSettleInL0_TakesTwoTables(t *testing.T) {
	p := NewPicker(&Options{L0CompactionThreshold: 4}, nil)
	v := parseVersion(t, "L0\n  1:a-c size=64KB\n  2:b-d size=64KB\nL1\n  3:a-z size=8MB")
	into := func(l0 ...*FileMetadata) *Compaction {
		c := &Compaction{StartLevel: 0, OutputLevel: 1}
		c.Inputs[0], c.Inputs[1] = l0, v.Levels[1]
		return c
	}
	if in := p.settleInL0(v, into(v.Levels[0][0])); in != nil {
		t.Fatalf("one L0 table merged within L0: %s", in)
	}
	in := p.settleInL0(v, into(v.Levels[0]...))
	if in == nil || in.OutputLevel != 0 || len(in.Inputs[0]) != 2 {
		t.Fatalf("two L0 tables over a base level 64 times their size: %v, want a merge within L0", in)
	}
}
