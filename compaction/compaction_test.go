package compaction

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

func TestOptions_Defaults(t *testing.T) {
	var nilOpts *Options
	if got := nilOpts.LevelMaxBytes(1); got != DefaultLBaseMaxBytes {
		t.Fatalf("L1 target %d", got)
	}
	if got := nilOpts.LevelMaxBytes(3); got != 100*DefaultLBaseMaxBytes {
		t.Fatalf("L3 target %d", got)
	}
	for _, level := range []int{0, -1, manifest.NumLevels} {
		if got := nilOpts.LevelMaxBytes(level); got != 0 {
			t.Fatalf("level %d target %d, want 0", level, got)
		}
	}
	if got := nilOpts.MaxGrandparentOverlap(); got != 10*DefaultTargetFileSize {
		t.Fatalf("grandparent overlap %d", got)
	}
	// Run's default bound is the Options' for the same table size.
	opts := &Options{TargetFileSize: 3 << 20, GrandparentOverlapFactor: 5}
	if got, want := (&RunConfig{TargetFileSize: 3 << 20}).grandparentLimit(), (&Options{TargetFileSize: 3 << 20}).MaxGrandparentOverlap(); got != want {
		t.Fatalf("Run's default grandparent bound %d, want %d", got, want)
	}
	// A picked compaction carries its Picker's bound, for Run.
	v := parseVersion(t, "L1\n1:a-b\nL2\n2:a-c")
	if c := NewPicker(opts, nil).PickManual(v, 1, nil, nil); c.MaxGrandparentOverlap != 15<<20 {
		t.Fatalf("compaction's grandparent bound %d, want %d", c.MaxGrandparentOverlap, 15<<20)
	}
	huge := &Options{LBaseMaxBytes: math.MaxInt64 / 4, LevelMultiplier: 1000}
	if got := huge.LevelMaxBytes(6); got != math.MaxInt64 {
		t.Fatalf("overflowing target %d, want saturation", got)
	}
}

func TestCompaction_Conflicts(t *testing.T) {
	f := func(num uint64, lo, hi string) *manifest.FileMetadata {
		return parseFile(t, fmt.Sprintf("%d:%s-%s", num, lo, hi))
	}
	a, b, c := f(1, "a", "c"), f(2, "d", "f"), f(3, "x", "z")
	mk := func(start, output int, smallest, largest string, inputs ...*manifest.FileMetadata) *Compaction {
		cm := &Compaction{StartLevel: start, OutputLevel: output, Smallest: []byte(smallest), Largest: []byte(largest)}
		cm.Inputs[0] = inputs
		return cm
	}
	multi := mk(1, 3, "a", "f", a) // L1 a-c carried on into L3, L2 d-f merged on the way
	multi.Middle = []*manifest.FileMetadata{b}
	for _, tc := range []struct {
		name string
		c, p *Compaction
		want bool
	}{
		{"disjoint", mk(1, 2, "a", "c", a), mk(1, 2, "d", "f", b), false},
		{"shared table", mk(1, 2, "a", "c", a), mk(2, 3, "a", "c", a), true},
		{"both from L0", mk(0, 1, "a", "c", a), mk(0, 1, "x", "z", c), true},
		{"same output, overlapping ranges", mk(1, 2, "a", "e", a), mk(1, 2, "e", "f", b), true},
		{"other output, overlapping ranges", mk(1, 2, "a", "e", a), mk(2, 3, "e", "f", b), false},
		{"shared middle table", mk(2, 3, "d", "f", b), multi, true},
		{"multi-level, same output, overlapping ranges", mk(2, 3, "e", "z", c), multi, true},
	} {
		if got := tc.c.Conflicts(bytes.Compare, []*Compaction{tc.p}); got != tc.want {
			t.Errorf("%s: Conflicts = %t, want %t", tc.name, got, tc.want)
		}
	}
	if got := mk(1, 2, "a", "c", a).Conflicts(bytes.Compare, nil); got {
		t.Error("conflict with nothing in progress")
	}
}

func TestCompaction_String(t *testing.T) {
	cm := &Compaction{StartLevel: 1, OutputLevel: 2, Smallest: []byte("a"), Largest: []byte("k")}
	cm.Inputs[0] = []*manifest.FileMetadata{parseFile(t, "4:a-c size=10")}
	cm.Inputs[1] = []*manifest.FileMetadata{parseFile(t, "7:b-e size=5"), parseFile(t, "8:f-k size=1")}
	if got, want := cm.String(), "L1->L2 [000004] + [000007 000008] range [a, k]"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	if got := cm.InputBytes(); got != 16 {
		t.Fatalf("InputBytes = %d, want 16", got)
	}
	cm.OutputLevel, cm.Middle = 3, []*manifest.FileMetadata{parseFile(t, "5:a-d size=20")}
	if got, want := cm.String(), "L1->L3 [000004] + [000005] + [000007 000008] range [a, k]"; got != want {
		t.Fatalf("multi-level String = %q, want %q", got, want)
	}
	if got := cm.InputBytes(); got != 36 {
		t.Fatalf("multi-level InputBytes = %d, want 36", got)
	}
	var tables []string
	for level, f := range cm.Tables() {
		tables = append(tables, fmt.Sprintf("L%d:%s", level, f.FileNum))
	}
	if got, want := strings.Join(tables, " "), "L1:000004 L2:000005 L3:000007 L3:000008"; got != want {
		t.Fatalf("Tables = %s, want %s", got, want)
	}
}

// TestExpandBoundaries covers neighbours sharing a boundary user key, which
// a checked Version never has but the picker does not rely on.
func TestExpandBoundaries(t *testing.T) {
	files := []*manifest.FileMetadata{
		parseFile(t, "1:a-b"), parseFile(t, "2:b-c"), parseFile(t, "3:c-d"),
		parseFile(t, "4:e-f"), parseFile(t, "5:f-g"),
	}
	for _, tc := range []struct{ lo, hi, wantLo, wantHi int }{
		{1, 2, 0, 3},
		{0, 1, 0, 3},
		{3, 4, 3, 5},
		{4, 5, 3, 5},
	} {
		if lo, hi := expandBoundaries(files, bytes.Compare, tc.lo, tc.hi); lo != tc.wantLo || hi != tc.wantHi {
			t.Errorf("expandBoundaries(%d, %d) = %d, %d, want %d, %d", tc.lo, tc.hi, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
}

// TestZeroSeqNums_NotInL0 checks that a merge within L0 zeroes no sequence
// number even with nothing below it: L0's tables are ordered by theirs.
func TestZeroSeqNums_NotInL0(t *testing.T) {
	v := parseVersion(t, "L0\n  1:a-c\n  2:b-d\n")
	c := &Compaction{StartLevel: 0, OutputLevel: 0, Inputs: [2][]*FileMetadata{v.Levels[0]},
		Smallest: []byte("a"), Largest: []byte("d")}
	if c.ZeroSeqNums(v, base.DefaultComparer.Compare) {
		t.Fatal("a merge within L0 may zero sequence numbers")
	}
	c.OutputLevel = 1 // the same inputs into an empty L1
	if !c.ZeroSeqNums(v, base.DefaultComparer.Compare) {
		t.Fatal("a compaction into an empty L1, nothing below, may not zero sequence numbers")
	}
}
