package compaction

import (
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
)

// compactionIter reads an input in internal-key order and yields, one user
// key at a time, the versions of that key some reader can still see.
//
// The open snapshots cut the sequence numbers into stripes: stripe j holds
// the versions with snapshots[j-1] < seq <= snapshots[j], and the last
// stripe those newer than every snapshot, seen by reads at the latest
// state. Every reader sees, of each stripe, at most the newest version, so
// that one is kept and the older versions of the stripe are dropped as
// shadowed. Then, when elide reports that nothing below the output holds
// the key, tombstones at the old end of the kept versions are dropped too:
// with nothing older left anywhere, a reader that would have met such a
// tombstone finds no version at all instead, which reads the same.
//
// Range tombstones cut the same way: a kept version is dropped when a
// range tombstone of its own stripe, newer than it, covers it, since every
// reader that sees the version sees the tombstone too.
type compactionIter struct {
	cmp       base.Compare
	input     base.InternalIterator
	snapshots []base.SeqNum
	elide     func(userKey []byte) bool
	rangeDels []sstable.RangeTombstone // fragmented
	stats     *RunStats

	started bool
	err     error
	buf     []byte        // the user key, then the kept values
	keyLen  int           // length of the user key at the start of buf
	kept    []keptVersion // newest first
	out     []version
}

// version is one version of a user key as yielded by nextKey. Its memory
// is valid until the next call.
type version struct {
	key   base.InternalKey
	value []byte
}

// keptVersion locates a kept version's value in compactionIter.buf, which
// may move while the key's versions are being read.
type keptVersion struct {
	trailer    uint64
	start, end int
}

func newCompactionIter(cmp base.Compare, input base.InternalIterator, snapshots []base.SeqNum,
	elide func([]byte) bool, rangeDels []sstable.RangeTombstone, stats *RunStats) *compactionIter {
	if elide == nil {
		elide = func([]byte) bool { return false }
	}
	return &compactionIter{cmp: cmp, input: input, snapshots: snapshots, elide: elide,
		rangeDels: rangeDels, stats: stats}
}

// nextKey returns the kept versions of the next user key that has any,
// newest first, or false at the end of the input or on an input error
// (see Error). The returned memory is valid until the next call.
func (i *compactionIter) nextKey() ([]version, bool) {
	for i.err == nil {
		var ok bool
		if !i.started {
			ok, i.started = i.input.First(), true
		} else {
			ok = i.input.Valid()
		}
		if !ok {
			i.err = i.input.Error()
			return nil, false
		}
		i.readKey()
		if i.err == nil && len(i.kept) > 0 {
			return i.versions(), true
		}
	}
	return nil, false
}

// Error returns the input's error, if reading it failed.
func (i *compactionIter) Error() error { return i.err }

// readKey reads every version of the input's current user key, keeping the
// newest of each snapshot stripe, then elides the tombstones that no reader
// needs. It leaves the input at the next user key.
func (i *compactionIter) readKey() {
	first := i.input.Key()
	i.buf = append(i.buf[:0], first.UserKey...)
	i.keyLen = len(i.buf)
	i.kept = i.kept[:0]
	lastStripe := -1
	for ok := true; ok; ok = i.input.Next() {
		k := i.input.Key()
		if i.cmp(k.UserKey, i.buf[:i.keyLen]) != 0 {
			break
		}
		v := i.input.Value()
		i.stats.EntriesIn++
		i.stats.BytesRead += int64(k.Size() + len(v))
		if s := i.stripe(k.SeqNum()); s != lastStripe {
			lastStripe = s
			start := len(i.buf)
			i.buf = append(i.buf, v...)
			i.kept = append(i.kept, keptVersion{trailer: k.Trailer, start: start, end: len(i.buf)})
		} else {
			i.stats.Shadowed++
		}
	}
	if i.err = i.input.Error(); i.err != nil {
		return
	}
	i.dropRangeDeleted(i.buf[:i.keyLen])
	i.elideTombstones(i.buf[:i.keyLen])
}

// dropRangeDeleted drops the kept versions that a range tombstone of their
// own stripe, newer than them, deletes.
func (i *compactionIter) dropRangeDeleted(userKey []byte) {
	if len(i.rangeDels) == 0 {
		return
	}
	n := 0
	for _, k := range i.kept {
		seq := base.InternalKey{Trailer: k.trailer}.SeqNum()
		top := base.SeqNumMax
		if s := i.stripe(seq); s < len(i.snapshots) {
			top = i.snapshots[s]
		}
		if tseq, ok := rangedel.Covering(i.cmp, i.rangeDels, userKey, top); ok && tseq > seq {
			i.stats.RangeDeleted++
			continue
		}
		i.kept[n] = k
		n++
	}
	i.kept = i.kept[:n]
}

// keptRangeDels returns the range tombstones of frags some reader needs:
// of each fragment, the newest tombstone of each snapshot stripe, minus
// those of the oldest stripe where elide allows (they have deleted all
// they cover in the input, and nothing below the output meets them).
func (i *compactionIter) keptRangeDels(frags []sstable.RangeTombstone, elide func(start, end []byte) bool) []sstable.RangeTombstone {
	var out []sstable.RangeTombstone
	for j, t := range frags {
		sameSpan := j > 0 && i.cmp(frags[j-1].Start, t.Start) == 0
		s := i.stripe(t.Seq)
		if sameSpan && i.stripe(frags[j-1].Seq) == s {
			i.stats.RangeDelsElided++ // shadowed by a newer one of its stripe
			continue
		}
		if s == 0 && elide != nil && elide(t.Start, t.End) {
			i.stats.RangeDelsElided++
			continue
		}
		out = append(out, t)
	}
	return out
}

// elideTombstones drops the tombstones at the old end of the kept versions
// when nothing below the output holds userKey.
func (i *compactionIter) elideTombstones(userKey []byte) {
	n := len(i.kept)
	for n > 0 && (base.InternalKey{Trailer: i.kept[n-1].trailer}).Kind() == base.KindDelete {
		n--
	}
	if n < len(i.kept) && i.elide(userKey) {
		i.stats.TombstonesElided += int64(len(i.kept) - n)
		i.kept = i.kept[:n]
	}
}

// stripe returns the index of the snapshot stripe holding seq: the first
// snapshot that sees it, or len(snapshots) when none does.
func (i *compactionIter) stripe(seq base.SeqNum) int {
	return sort.Search(len(i.snapshots), func(j int) bool { return i.snapshots[j] >= seq })
}

// versions materializes the kept versions over the settled buffer.
func (i *compactionIter) versions() []version {
	userKey := i.buf[:i.keyLen:i.keyLen]
	i.out = i.out[:0]
	for _, k := range i.kept {
		i.out = append(i.out, version{
			key:   base.InternalKey{UserKey: userKey, Trailer: k.trailer},
			value: i.buf[k.start:k.end:k.end],
		})
	}
	return i.out
}
