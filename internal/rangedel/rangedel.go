package rangedel

import (
	"fmt"
	"slices"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Tombstone deletes the user keys in [Start, End) at sequence number Seq.
type Tombstone struct {
	Start, End []byte
	Seq        base.SeqNum
}

// String formats the tombstone as "[start, end)#seq".
func (t Tombstone) String() string { return fmt.Sprintf("[%s, %s)#%d", t.Start, t.End, t.Seq) }

// Key returns the internal key a tombstone is stored under: its start, its
// sequence number and base.KindRangeDelete. Its value is End.
func (t Tombstone) Key() base.InternalKey {
	return base.MakeInternalKey(t.Start, t.Seq, base.KindRangeDelete)
}

// Fragment returns the fragmented form of ts (see the package
// documentation), which it does not modify. The fragments share the key
// bytes of ts. Empty spans are dropped; a sequence number given twice for
// the same span is kept once. The result can be O(n²) long for n deeply
// nested tombstones, as every fragmented representation can.
func Fragment(cmp base.Compare, ts []Tombstone) []Tombstone {
	var bounds [][]byte
	for _, t := range ts {
		if cmp(t.Start, t.End) < 0 {
			bounds = append(bounds, t.Start, t.End)
		}
	}
	if len(bounds) == 0 {
		return nil
	}
	slices.SortFunc(bounds, func(a, b []byte) int { return cmp(a, b) })
	bounds = slices.CompactFunc(bounds, func(a, b []byte) bool { return cmp(a, b) == 0 })
	// stacks[i] collects the sequence numbers covering [bounds[i], bounds[i+1]).
	stacks := make([][]base.SeqNum, len(bounds)-1)
	for _, t := range ts {
		if cmp(t.Start, t.End) >= 0 {
			continue
		}
		lo := searchBound(cmp, bounds, t.Start)
		hi := searchBound(cmp, bounds, t.End)
		for i := lo; i < hi; i++ {
			stacks[i] = append(stacks[i], t.Seq)
		}
	}
	var out []Tombstone
	for i, seqs := range stacks {
		slices.Sort(seqs)
		slices.Reverse(seqs) // newest first
		for _, s := range slices.Compact(seqs) {
			out = append(out, Tombstone{Start: bounds[i], End: bounds[i+1], Seq: s})
		}
	}
	return out
}

// searchBound returns the index of key in the sorted, distinct bounds.
func searchBound(cmp base.Compare, bounds [][]byte, key []byte) int {
	return sort.Search(len(bounds), func(i int) bool { return cmp(bounds[i], key) >= 0 })
}

// CheckFragmented reports, as an error naming the offending pair, whether
// frags breaks the fragmented order: every span non-empty, spans sorted
// and either equal or disjoint, sequence numbers strictly descending
// within a span. Decoders use it on bytes read from disk.
func CheckFragmented(cmp base.Compare, frags []Tombstone) error {
	for i, t := range frags {
		if cmp(t.Start, t.End) >= 0 {
			return fmt.Errorf("range tombstone %s is empty", t)
		}
		if i == 0 {
			continue
		}
		p := frags[i-1]
		if cmp(p.Start, t.Start) == 0 && cmp(p.End, t.End) == 0 {
			if p.Seq <= t.Seq {
				return fmt.Errorf("range tombstone %s follows %s: sequence numbers must descend", t, p)
			}
		} else if cmp(p.End, t.Start) > 0 {
			return fmt.Errorf("range tombstone %s overlaps %s", t, p)
		}
	}
	return nil
}

// Covering returns the largest sequence number at or below readSeq among
// the fragments of frags whose span holds key; ok is false when none does.
// A version of key with a smaller sequence number is deleted for a reader
// at readSeq.
func Covering(cmp base.Compare, frags []Tombstone, key []byte, readSeq base.SeqNum) (seq base.SeqNum, ok bool) {
	// i is one past the last fragment starting at or before key: the end
	// of key's span, if any span holds it.
	i := sort.Search(len(frags), func(i int) bool { return cmp(frags[i].Start, key) > 0 })
	if i == 0 || cmp(key, frags[i-1].End) >= 0 {
		return 0, false
	}
	// Sequence numbers ascend walking back from the span's end.
	start := frags[i-1].Start
	for j := i - 1; j >= 0 && cmp(frags[j].Start, start) == 0 && frags[j].Seq <= readSeq; j-- {
		seq, ok = frags[j].Seq, true
	}
	return seq, ok
}

// Deletes reports whether a fragment of frags visible at readSeq deletes
// key for a reader at readSeq: it covers key and is newer than the
// version of key the reader found (found, numbered pointSeq), or covers
// key and the reader found no version.
func Deletes(cmp base.Compare, frags []Tombstone, key []byte, readSeq base.SeqNum, found bool, pointSeq base.SeqNum) bool {
	tseq, ok := Covering(cmp, frags, key, readSeq)
	return ok && (!found || pointSeq < tseq)
}

// Truncate returns the parts of the fragments of frags inside
// [lower, upper) (nil: unbounded), in order. It shares key bytes with frags
// and the bounds.
func Truncate(cmp base.Compare, frags []Tombstone, lower, upper []byte) []Tombstone {
	var out []Tombstone
	for _, t := range frags {
		if lower != nil && cmp(t.Start, lower) < 0 {
			t.Start = lower
		}
		if upper != nil && cmp(t.End, upper) > 0 {
			t.End = upper
		}
		if cmp(t.Start, t.End) < 0 {
			out = append(out, t)
		}
	}
	return out
}

// Bounds returns the smallest and largest keys of a table holding the
// fragments frags (non-empty): the first fragment's key and the sentinel
// of the last fragment's end.
func Bounds(frags []Tombstone) (smallest, largest base.InternalKey) {
	return frags[0].Key(), base.MakeRangeDeleteSentinel(frags[len(frags)-1].End)
}
