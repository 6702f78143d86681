package compaction

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/bloomkv/bloomkv/sstable"
)

// TestRun_RandomModel compacts random histories, spread over several merged
// inputs, with random range tombstones, under random snapshots and
// elision, and checks that every reader (each snapshot and the latest
// state) sees exactly what it saw before, that nothing is kept that no
// reader can see, and that the tables are well formed.
func TestRun_RandomModel(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	for round := range rounds {
		ctx := fmt.Sprintf("seed %d round %d", seed, round)
		input, elide := randomHistory(rng)
		rangeDels := randomRangeDels(rng, len(input))
		snapshots := randomSnapshots(rng, base.SeqNum(2*len(input)+1))
		children := splitIntoChildren(rng, input)
		out := newMemOutputs()
		tables, stats, err := Run(NewMergingIter(bytes.Compare, children...), RunConfig{
			NewOutput:           out.newOutput,
			Snapshots:           snapshots,
			ElideTombstone:      func(k []byte) bool { return elide[string(k)] },
			RangeDels:           rangeDels,
			ElideRangeTombstone: elideRange(elide),
			TargetFileSize:      []int64{0, 1, 200, 1000}[rng.IntN(4)],
			Writer:              sstable.WriterOptions{BlockSize: 64 + rng.IntN(256)},
			StableInput:         rng.IntN(2) == 0, // the slices stay put: either way reads them
		})
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
		if stats.EntriesIn != int64(len(input)) || stats.EntriesOut != int64(len(output)) ||
			stats.Shadowed+stats.TombstonesElided+stats.RangeDeleted+stats.EntriesOut != stats.EntriesIn {
			t.Fatalf("%s: stats %+v for %d in, %d out", ctx, stats, len(input), len(output))
		}
		checkByteStats(t, ctx, stats, input, tables)
		readers := append(append([]base.SeqNum(nil), snapshots...), base.SeqNumMax)
		checkSameReads(t, ctx, history{input, rangeDels}, history{output, outRangeDels}, readers, elide)
		checkNothingUseless(t, ctx, output, readers, elide)
	}
}

// checkByteStats checks that stats count the encoded keys and values of
// the input as read and the sizes of the tables as written.
func checkByteStats(t *testing.T, ctx string, stats RunStats, input []modelEntry, tables []*manifest.FileMetadata) {
	t.Helper()
	var read, written int64
	for _, e := range input {
		read += int64(e.key.Size() + len(e.value))
	}
	for _, m := range tables {
		written += int64(m.Size)
	}
	if stats.BytesRead != read || stats.BytesWritten != written {
		t.Fatalf("%s: read %d bytes, wrote %d; want %d and %d", ctx, stats.BytesRead, stats.BytesWritten, read, written)
	}
}

// randomHistory returns the versions of up to 20 keys, in internal-key
// order, with distinct sequence numbers, and which keys nothing below the
// compaction holds.
func randomHistory(rng *rand.Rand) ([]modelEntry, map[string]bool) {
	type version struct {
		key  string
		kind base.Kind
	}
	var versions []version
	elide := map[string]bool{}
	for k := range 20 {
		key := fmt.Sprintf("k%02d", k)
		elide[key] = rng.IntN(2) == 0
		for range rng.IntN(6) {
			versions = append(versions, version{key, base.Kind(rng.IntN(2))})
		}
	}
	var history []modelEntry
	for i, p := range rng.Perm(len(versions)) {
		v := versions[i]
		// Even sequence numbers: randomRangeDels takes the odd ones.
		key := base.MakeInternalKey([]byte(v.key), base.SeqNum(2*p+2), v.kind)
		var value []byte
		if v.kind == base.KindSet {
			value = []byte(fmt.Sprintf("%s@%d", v.key, 2*p+2))
		}
		history = append(history, modelEntry{key: key, value: value})
	}
	sortModel(history)
	return history, elide
}

// randomRangeDels returns up to 4 range tombstones over the keys of
// randomHistory, with odd sequence numbers among the n versions' even
// ones, some empty.
func randomRangeDels(rng *rand.Rand, n int) []sstable.RangeTombstone {
	var ts []sstable.RangeTombstone
	for range rng.IntN(5) {
		lo := rng.IntN(21)
		hi := lo + rng.IntN(8)
		ts = append(ts, sstable.RangeTombstone{
			Start: []byte(fmt.Sprintf("k%02d", lo)),
			End:   []byte(fmt.Sprintf("k%02d", hi)),
			Seq:   base.SeqNum(2*rng.IntN(n+1) + 1),
		})
	}
	return ts
}

// elideRange allows a range tombstone to go when every key of
// randomHistory it covers is one nothing below holds.
func elideRange(elide map[string]bool) func(start, end []byte) bool {
	return func(start, end []byte) bool {
		for k, el := range elide {
			if !el && bytes.Compare(start, []byte(k)) <= 0 && bytes.Compare([]byte(k), end) < 0 {
				return false
			}
		}
		return true
	}
}

// randomSnapshots returns up to 5 ascending sequence numbers in [0, max+1].
func randomSnapshots(rng *rand.Rand, max base.SeqNum) []base.SeqNum {
	var s []base.SeqNum
	for range rng.IntN(6) {
		s = append(s, base.SeqNum(rng.IntN(int(max)+2)))
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

// splitIntoChildren deals the entries out to 1-4 sorted iterators.
func splitIntoChildren(rng *rand.Rand, entries []modelEntry) []base.InternalIterator {
	children := make([]*itertest.SliceIter, 1+rng.IntN(4))
	for i := range children {
		children[i] = itertest.NewSliceIter(bytes.Compare, nil, nil)
	}
	for _, e := range entries {
		c := children[rng.IntN(len(children))]
		c.Keys = append(c.Keys, e.key)
		c.Vals = append(c.Vals, e.value)
	}
	iters := make([]base.InternalIterator, len(children))
	for i, c := range children {
		iters[i] = c
	}
	return iters
}

// history is a compaction's input or output: point entries in
// internal-key order and range tombstones.
type history struct {
	entries   []modelEntry
	rangeDels []sstable.RangeTombstone
}

// read returns what a read of key at seq finds in h: its value,
// "<deleted>" (a tombstone, or a range tombstone newer than the version
// found), or, when no version is visible, "<below>" for a key the levels
// under the compaction may hold and "<absent>" otherwise.
func read(h history, key string, seq base.SeqNum, elide bool) string {
	var tseq base.SeqNum
	for _, t := range h.rangeDels {
		if t.Seq <= seq && t.Seq > tseq && string(t.Start) <= key && key < string(t.End) {
			tseq = t.Seq
		}
	}
	for _, e := range h.entries {
		if string(e.key.UserKey) == key && e.key.Visible(seq) {
			if e.key.Kind() == base.KindDelete || e.key.SeqNum() < tseq {
				return "<deleted>"
			}
			return string(e.value)
		}
	}
	if tseq > 0 {
		return "<deleted>"
	}
	if elide {
		return "<absent>"
	}
	return "<below>"
}

// checkSameReads checks that every reader finds the same in output as in
// input, a deleted key and an absent one counting as the same.
func checkSameReads(t *testing.T, ctx string, input, output history, readers []base.SeqNum, elide map[string]bool) {
	for key, el := range elide {
		for _, seq := range readers {
			want, got := read(input, key, seq, el), read(output, key, seq, el)
			if want == "<deleted>" && el {
				want = "<absent>"
			}
			if got == "<deleted>" && el {
				got = "<absent>"
			}
			if got != want {
				t.Fatalf("%s: read of %s at %d: got %s, want %s\ninput %v\noutput %v",
					ctx, key, seq, got, want, input, output)
			}
		}
	}
}

// checkNothingUseless checks that each output entry is what some reader
// sees, and that no tombstone is kept where eliding it would read the same.
func checkNothingUseless(t *testing.T, ctx string, output []modelEntry, readers []base.SeqNum, elide map[string]bool) {
	for i, e := range output {
		seen := false
		for _, seq := range readers {
			seen = seen || (e.key.Visible(seq) && (i == 0 || !bytes.Equal(output[i-1].key.UserKey, e.key.UserKey) ||
				!output[i-1].key.Visible(seq)))
		}
		if !seen {
			t.Fatalf("%s: %s kept but no reader sees it\noutput %v", ctx, e.key, output)
		}
		last := i == len(output)-1 || !bytes.Equal(output[i+1].key.UserKey, e.key.UserKey)
		if last && e.key.Kind() == base.KindDelete && elide[string(e.key.UserKey)] {
			t.Fatalf("%s: tombstone %s kept with nothing older to hide\noutput %v", ctx, e.key, output)
		}
	}
}

func (e modelEntry) String() string { return fmt.Sprintf("%s:%s", e.key, e.value) }
