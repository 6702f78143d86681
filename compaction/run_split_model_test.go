package compaction

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/bloomkv/bloomkv/sstable"
)

// TestRun_RandomModelSplitAndZero is TestRun_RandomModel with what that
// test leaves out: cuts along random grandparents (aligned cuts and the
// overlap bound) and split boundaries, tiny target sizes, snapshots at,
// just below and just above the sequence numbers of the input, and, at
// the bottom (nothing below holds a key), ZeroSeqNums. Every reader must
// read the same from the output tables as from the input; no user key may
// appear in two tables; and each range tombstone written must be a part
// of an input tombstone of the same sequence number, so that one cut in
// two covers its keys in both tables and nothing more; and no file may be
// created that does not become a table (an empty output).
func TestRun_RandomModelSplitAndZero(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	ran := map[string]int{}
	for round := range rounds {
		ctx := fmt.Sprintf("seed %d round %d", seed, round)
		input, elide := randomHistory(rng)
		zero := rng.IntN(2) == 0
		if zero {
			for k := range elide {
				elide[k] = true // ZeroSeqNums: nothing below holds a key
			}
		}
		rangeDels := randomRangeDels(rng, len(input))
		snapshots := snapshotsNearVersions(rng, input)
		out := newMemOutputs()
		cfg := RunConfig{
			NewOutput:           out.newOutput,
			Snapshots:           snapshots,
			ElideTombstone:      func(k []byte) bool { return elide[string(k)] },
			RangeDels:           rangeDels,
			ElideRangeTombstone: elideRange(elide),
			ZeroSeqNums:         zero,
			TargetFileSize:      []int64{0, 1, 60, 150, 400}[rng.IntN(5)],
			Writer:              sstable.WriterOptions{BlockSize: 64 + rng.IntN(256)},
			StableInput:         rng.IntN(2) == 0,
		}
		if rng.IntN(3) == 0 {
			// Range tombstones kept though nothing below needs them, as
			// a nil ElideRangeTombstone asks: the oldest stripe's may
			// then span versions they do not delete.
			cfg.ElideRangeTombstone = nil
		}
		if rng.IntN(2) == 0 {
			cfg.Grandparents = randomLevel(rng, 500)
			cfg.MaxGrandparentOverlap = []int64{0, 1, 300, 1000}[rng.IntN(4)]
		}
		if rng.IntN(2) == 0 {
			cfg.SplitBoundaries = randomLevel(rng, 1)
			cfg.SplitBytes = []int64{1, 100, 400}[rng.IntN(3)]
		}
		var in InternalIterator = NewMergingIter(bytes.Compare, splitIntoChildren(rng, input)...)
		if !cfg.StableInput {
			in = &clobberIter{InternalIterator: in}
		}
		tables, stats, err := Run(in, cfg)
		if err != nil {
			t.Fatalf("%s: %v", ctx, err)
		}
		checkBoundaries(t, tables)
		var output []modelEntry
		var outRangeDels []sstable.RangeTombstone
		for _, m := range tables {
			output = append(output, out.readTable(t, m)...)
			outRangeDels = append(outRangeDels, out.rangeDels(t, m)...)
		}
		if stats.EntriesOut != int64(len(output)) || stats.Tables != len(tables) || int(out.next) != len(tables) {
			t.Fatalf("%s: stats %+v for %d entries in %d tables, %d files created", ctx, stats, len(output), len(tables), out.next)
		}
		checkRangeDelParts(t, ctx, rangeDels, outRangeDels)
		readers := append(append([]base.SeqNum(nil), snapshots...), base.SeqNumMax)
		checkSameReads(t, ctx, history{input, rangeDels}, history{output, outRangeDels}, readers, elide)
		checkNothingUseless(t, ctx, output, readers, elide)
		if len(tables) > 1 {
			ran["several tables"]++
		}
		if len(tables) > 1 && len(outRangeDels) > 0 {
			ran["tombstones in several tables"]++
		}
		if stats.SeqNumsZeroed > 0 {
			ran["zeroed"]++
		}
	}
	// The cases the test exists for must have run.
	for _, what := range []string{"several tables", "tombstones in several tables", "zeroed"} {
		if ran[what] == 0 {
			t.Fatalf("seed %d: no round with %s", seed, what)
		}
	}
}

// snapshotsNearVersions returns up to 5 ascending snapshots, each at the
// sequence number of a random input version, one below or one above it.
func snapshotsNearVersions(rng *rand.Rand, input []modelEntry) []base.SeqNum {
	var s []base.SeqNum
	for range rng.IntN(6) {
		if len(input) == 0 {
			break
		}
		seq := input[rng.IntN(len(input))].key.SeqNum()
		s = append(s, seq+base.SeqNum(rng.IntN(3))-1)
	}
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// randomLevel returns up to 8 tables, in key order and disjoint, over the
// keys of randomHistory (and between them), each of up to maxSize bytes.
func randomLevel(rng *rand.Rand, maxSize int) []*manifest.FileMetadata {
	var files []*manifest.FileMetadata
	lo := rng.IntN(4)
	for n := range rng.IntN(9) {
		hi := lo + rng.IntN(4)
		if hi > 21 {
			break
		}
		// Bounds "k05" or "k05+": the latter falls between k05 and k06.
		bound := func(k int) []byte {
			s := fmt.Sprintf("k%02d", k)
			if rng.IntN(3) == 0 {
				s += "+"
			}
			return []byte(s)
		}
		start, end := bound(lo), bound(hi)
		if bytes.Compare(start, end) > 0 {
			start, end = end, start
		}
		files = append(files, &manifest.FileMetadata{
			FileNum:  base.FileNum(1000 + n),
			Size:     uint64(1 + rng.IntN(maxSize)),
			Smallest: base.MakeInternalKey(start, 1, base.KindSet),
			Largest:  base.MakeInternalKey(end, 1, base.KindSet),
		})
		lo = hi + 1 + rng.IntN(3)
	}
	return files
}

// checkRangeDelParts checks that every range tombstone written is a part
// of an input tombstone with its sequence number.
func checkRangeDelParts(t *testing.T, ctx string, input, output []sstable.RangeTombstone) {
	t.Helper()
	for _, o := range output {
		found := false
		for _, in := range input {
			found = found || (in.Seq == o.Seq && bytes.Compare(in.Start, o.Start) <= 0 && bytes.Compare(o.End, in.End) <= 0)
		}
		if !found {
			t.Fatalf("%s: range tombstone %s written is no part of an input one\ninput %v\noutput %v", ctx, o, input, output)
		}
	}
}

// clobberIter hands out its input's keys and values in buffers of its own
// and overwrites them at every move, as a table iterator may reuse its
// block's memory: what Run reads of an input that is not stable must be
// copied before the input moves.
type clobberIter struct {
	InternalIterator
	key, value []byte
}

func (c *clobberIter) clobber(ok bool) bool {
	for i := range c.key {
		c.key[i] = '!'
	}
	for i := range c.value {
		c.value[i] = '!'
	}
	if ok {
		c.key = append(c.key[:0], c.InternalIterator.Key().UserKey...)
		c.value = append(c.value[:0], c.InternalIterator.Value()...)
	}
	return ok
}

func (c *clobberIter) First() bool { return c.clobber(c.InternalIterator.First()) }
func (c *clobberIter) Next() bool  { return c.clobber(c.InternalIterator.Next()) }
func (c *clobberIter) Key() base.InternalKey {
	return base.InternalKey{UserKey: c.key, Trailer: c.InternalIterator.Key().Trailer}
}
func (c *clobberIter) Value() []byte { return c.value }
