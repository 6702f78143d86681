package kv

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestOptions_Defaults fills every zero field.
func TestOptions_Defaults(t *testing.T) {
	o, err := (*Options)(nil).resolve()
	if err != nil {
		t.Fatal(err)
	}
	if o.FS != vfs.Default || o.MemTableSize != DefaultMemTableSize ||
		o.BlockSize != DefaultBlockSize || o.BlockCacheSize != DefaultBlockCacheSize ||
		o.L0CompactionThreshold != 4 || o.L0StopWritesThreshold != 12 ||
		o.L0SlowdownWritesThreshold != 8 || o.LevelMultiplier != 10 ||
		o.LBaseMaxBytes != 64<<20 || o.TargetFileSize != 2<<20 ||
		o.MemTableStopWritesThreshold != 2 || o.MaxOpenFiles != DefaultMaxOpenFiles {
		t.Fatalf("defaults not applied: %+v", o)
	}
	// MaxSpaceAmp's default is applied once, by the compaction package
	// (TestOptions_WithDefaults there): kv hands the zero down.
	if o.MaxSpaceAmp != 0 || compactionOptions(o).MaxSpaceAmp != 0 {
		t.Fatalf("MaxSpaceAmp resolved to %g, want 0 for the compaction package to default", o.MaxSpaceAmp)
	}
}

// TestOptions_DefaultsFollowThresholds keeps derived defaults consistent
// with fields the user set.
func TestOptions_DefaultsFollowThresholds(t *testing.T) {
	o, err := (&Options{L0CompactionThreshold: 20}).resolve()
	if err != nil {
		t.Fatal(err)
	}
	if o.L0StopWritesThreshold != 20 || o.L0SlowdownWritesThreshold != 8 {
		t.Fatalf("stop %d slowdown %d", o.L0StopWritesThreshold, o.L0SlowdownWritesThreshold)
	}
	o, err = (&Options{L0StopWritesThreshold: 5}).resolve()
	if err != nil {
		t.Fatal(err)
	}
	if o.L0SlowdownWritesThreshold != 5 {
		t.Fatalf("slowdown %d above stop 5", o.L0SlowdownWritesThreshold)
	}
}

// splitWithoutName is a splitting comparer that forgot to name its Split.
func splitWithoutName() *sstable.Comparer {
	c := itertest.SlashComparer()
	c.SplitName = ""
	return c
}

// TestOptions_Invalid rejects each kind of bad value with a message naming
// the field.
func TestOptions_Invalid(t *testing.T) {
	tests := []struct {
		opts Options
		want string
	}{
		{Options{MemTableSize: -1}, "MemTableSize is negative"},
		{Options{MemTableSize: 100}, "MemTableSize 100 outside"},
		{Options{MemTableSize: 8 << 30}, "MemTableSize 8589934592 outside"},
		{Options{BlockSize: -4}, "BlockSize is negative"},
		{Options{BlockSize: 1 << 30}, "BlockSize 1073741824 over"},
		{Options{BlockCacheSize: -1}, "BlockCacheSize is negative"},
		{Options{MaxOpenFiles: 2}, "MaxOpenFiles 2 under"},
		{Options{L0CompactionThreshold: 10, L0StopWritesThreshold: 5}, "L0StopWritesThreshold 5 below L0CompactionThreshold 10"},
		{Options{L0SlowdownWritesThreshold: 13}, "L0SlowdownWritesThreshold 13 above L0StopWritesThreshold 12"},
		{Options{LevelMultiplier: 1}, "LevelMultiplier 1 under 2"},
		{Options{MaxSpaceAmp: 0.5}, "MaxSpaceAmp 0.5 under 1"},
		{Options{MaxSpaceAmp: math.NaN()}, "MaxSpaceAmp NaN under 1"},
		{Options{TargetFileSize: -1}, "TargetFileSize is negative"},
		{Options{LBaseMaxBytes: -1}, "LBaseMaxBytes is negative"},
		{Options{MemTableStopWritesThreshold: -1}, "MemTableStopWritesThreshold is negative"},
		{Options{ExtraFilterPolicies: []bloompolicy.FilterPolicy{nil}}, "ExtraFilterPolicies[0]"},
		{Options{ErrorIfExists: true, ErrorIfNotExists: true}, "ErrorIfExists and ErrorIfNotExists are both set"},
		{Options{Comparer: &sstable.Comparer{Name: "c"}}, `Comparer "c" needs Compare`},
		{Options{Comparer: splitWithoutName()}, "Split and SplitName must be set together"},
		{Options{Levels: make([]LevelOptions, 8)}, "Levels has 8 entries for 7 levels"},
		{Options{Levels: []LevelOptions{{}, {FilterPolicy: &unnamedPolicy{}}}}, "Levels[1].FilterPolicy has an empty name"},
		{Options{FilterBudget: &bloompolicy.Budget{BitsPerKey: 10, FalsePositives: 0.1}}, "FilterBudget: bloompolicy: budget sets more than one"},
		{Options{FilterBudget: &bloompolicy.Budget{}}, "FilterBudget: bloompolicy: budget sets none"},
		{Options{FilterBudget: &bloompolicy.Budget{Bytes: -1}}, "FilterBudget: bloompolicy: budget Bytes is negative"},
		{Options{FilterBudget: &bloompolicy.Budget{Bytes: 1 << 20}, Levels: []LevelOptions{{}, {FilterPolicy: &exactPolicy{}}}},
			"Levels[1].FilterPolicy fixes the level's filters, which a FilterBudget.Bytes cap must size"},
	}
	for _, tc := range tests {
		_, err := tc.opts.resolve()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "kv: invalid options: ") {
			t.Errorf("%+v: err = %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// unnamedPolicy is a policy with an empty name, which Open rejects.
type unnamedPolicy struct{ exactPolicy }

func (*unnamedPolicy) Name() string { return "" }

// TestOptions_ResolveCopies pins what resolve owns: the resolved options
// keep their own Levels, FilterBudget and ExtraFilterPolicies, so a caller
// that changes its Options after Open does not change the store's, and a
// nil Comparer becomes the bytewise default.
func TestOptions_ResolveCopies(t *testing.T) {
	p, err := bloompolicy.New(0.05)
	if err != nil {
		t.Fatal(err)
	}
	q, err := bloompolicy.NewBitsPerKey(4)
	if err != nil {
		t.Fatal(err)
	}
	in := &Options{
		Levels:              []LevelOptions{{FilterPolicy: p}},
		FilterBudget:        &bloompolicy.Budget{BitsPerKey: 10},
		ExtraFilterPolicies: []bloompolicy.FilterPolicy{p},
	}
	o, err := in.resolve()
	if err != nil {
		t.Fatal(err)
	}
	in.Levels[0].FilterPolicy = q
	in.FilterBudget.BitsPerKey = 2
	in.ExtraFilterPolicies[0] = q
	switch {
	case o.Levels[0].FilterPolicy != p:
		t.Fatalf("Levels[0].FilterPolicy follows the caller's change")
	case o.FilterBudget == in.FilterBudget || o.FilterBudget.BitsPerKey != 10:
		t.Fatalf("FilterBudget shared with the caller: %+v", *o.FilterBudget)
	case o.ExtraFilterPolicies[0] != p:
		t.Fatalf("ExtraFilterPolicies[0] follows the caller's change")
	case o.Comparer != sstable.DefaultComparer:
		t.Fatalf("a nil Comparer resolves to %q, want the default", o.Comparer.Name)
	}
}

// TestOptions_HugeMemTableStopWritesThreshold sets
// MemTableStopWritesThreshold to the largest int, as a caller who never
// wants writers to stall on memtables might: writes that fill several
// memtables go through, as with any threshold they do not reach, and
// the flushed memtables' WALs are recycled.
func TestOptions_HugeMemTableStopWritesThreshold(t *testing.T) {
	d, _ := openMem(t, &Options{MemTableStopWritesThreshold: math.MaxInt, MemTableSize: 64 << 10})
	defer mustClose(t, d)
	done := make(chan error, 1)
	go func() {
		for i := range 5000 {
			if err := d.Set(fmt.Appendf(nil, "k%06d", i), make([]byte, 100), NoSync); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	if err := waitFor(t, done, 30*time.Second, "writes filling memtables"); err != nil {
		t.Fatal(err)
	}
	// The WALs recycled are as many as there may be memtables: all of
	// them, not none (the threshold plus one overflowed).
	if n := d.commit.recycler.limit; n != math.MaxInt {
		t.Fatalf("WAL recycler keeps %d files, want math.MaxInt", n)
	}
}
