package compaction

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/cockroachdb/datadriven"
)

// TestPicker runs testdata/picker. Commands:
//
//	define [l0-threshold=N] [lbase=SIZE] [multiplier=N] [target-file-size=SIZE]
//	L<n>
//	  <filenum>:<smallest>-<largest> [size=SIZE]   (key "a" means a#<filenum>,SET)
//	scores
//	pick [keep]          picks against the compactions kept so far; keep adds the result
//	clear                forgets the kept compactions
//	manual level=N [start=K] [end=K] [keep]
//	elide                one user key per line: may the last compaction drop its tombstones?
func TestPicker(t *testing.T) {
	var (
		v          *manifest.Version
		p          *Picker
		inProgress []*Compaction
		last       *Compaction
	)
	datadriven.RunTest(t, "testdata/picker", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			p = NewPicker(parsePickerOptions(t, d), nil)
			v = parseVersion(t, d.Input)
			inProgress, last = nil, nil
			return v.Describe(func(f *manifest.FileMetadata) string { return fmt.Sprintf("size=%d", f.Size) })
		case "scores":
			var b strings.Builder
			for level, s := range p.Scores(v) {
				fmt.Fprintf(&b, "L%d: %.2f\n", level, s)
			}
			return b.String()
		case "pick":
			last = p.Pick(v, inProgress)
			if last != nil && d.HasArg("keep") {
				inProgress = append(inProgress, last)
			}
			return formatCompaction(last)
		case "clear":
			inProgress = nil
			return ""
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
		case "elide":
			elide := last.ElideTombstone(v, base.DefaultComparer.Compare)
			var b strings.Builder
			for _, k := range strings.Fields(d.Input) {
				fmt.Fprintf(&b, "%s: %t\n", k, elide([]byte(k)))
			}
			return b.String()
		default:
			return fmt.Sprintf("unknown command %q", d.Cmd)
		}
	})
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
		case "lbase":
			opts.LBaseMaxBytes = parseSize(t, val)
		case "multiplier":
			opts.LevelMultiplier = int(parseSize(t, val))
		case "target-file-size":
			opts.TargetFileSize = parseSize(t, val)
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
// Version, ordered and checked as Version.Apply does.
func parseVersion(t *testing.T, input string) *manifest.Version {
	var edit manifest.VersionEdit
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
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: level, Meta: parseFile(t, line)})
		}
	}
	v, err := (&manifest.Version{}).Apply(base.DefaultComparer.Compare, &edit)
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
	f.SmallestSeqNum = min(f.Smallest.SeqNum(), f.Largest.SeqNum())
	f.LargestSeqNum = max(f.Smallest.SeqNum(), f.Largest.SeqNum())
	for _, field := range fields[1:] {
		k, val, _ := strings.Cut(field, "=")
		if k != "size" {
			t.Fatalf("bad table attribute %q", field)
		}
		f.Size = uint64(parseSize(t, val))
	}
	return f
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
