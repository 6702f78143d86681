package compaction

import (
	"bytes"
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
//
// An input whose keys and values stay valid until the compaction ends (a
// memtable's; see RunConfig.StableInput) is read in place; any other has
// each key's versions copied into buf before the input moves past them.
type compactionIter struct {
	cmp       base.Compare
	equal     func(a, b []byte) bool // cmp(a, b) == 0, cheaper where it can be
	stable    bool                   // the input's memory outlives the iterator
	input     base.InternalIterator
	snapshots []base.SeqNum
	elide     func(userKey []byte) bool
	rangeDels []sstable.RangeTombstone // fragmented
	stats     *RunStats
	// zero sets the sequence number of each key's oldest kept version to
	// 0 where it is a Set of the oldest stripe (RunConfig.ZeroSeqNums).
	zero bool

	started bool
	err     error
	key     []byte        // the current user key: the input's when stable, else in buf
	buf     []byte        // unless stable: the user key, then the kept values
	kept    []keptVersion // newest first
	out     []version
}

// version is one version of a user key as yielded by nextKey. Its memory
// is valid until the next call.
type version struct {
	key   base.InternalKey
	value []byte
}

// keptVersion is a kept version's value: the input's own when stable,
// else located in compactionIter.buf, which may move while the key's
// versions are being read.
type keptVersion struct {
	trailer    uint64
	value      []byte // when stable
	start, end int    // in buf, unless stable
}

func newCompactionIter(cmp *base.Comparer, stable bool, input base.InternalIterator, snapshots []base.SeqNum,
	elide func([]byte) bool, rangeDels []sstable.RangeTombstone, stats *RunStats) *compactionIter {
	if elide == nil {
		elide = func([]byte) bool { return false }
	}
	equal := func(a, b []byte) bool { return cmp.Compare(a, b) == 0 }
	if cmp.Bytewise() {
		equal = bytes.Equal
	}
	return &compactionIter{cmp: cmp.Compare, equal: equal, stable: stable, input: input,
		snapshots: snapshots, elide: elide, rangeDels: rangeDels, stats: stats}
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
	i.key = i.input.Key().UserKey
	if !i.stable {
		i.buf = append(i.buf[:0], i.key...)
		i.key = i.buf[:len(i.key):len(i.key)] // buf's growth leaves it be
	}
	if i.key == nil {
		// The empty key, as a memtable yields it (or a copy into an empty
		// buf): the runner takes a nil key for none, so yield it non-nil.
		i.key = []byte{}
	}
	i.kept = i.kept[:0]
	lastStripe := -1
	// The first entry is the one i.key was taken from: only those after
	// it need the compare.
	for first, ok := true, true; ok; first, ok = false, i.input.Next() {
		k := i.input.Key()
		if !first && !i.equal(k.UserKey, i.key) {
			break
		}
		v := i.input.Value()
		i.stats.EntriesIn++
		i.stats.BytesRead += int64(k.Size() + len(v))
		if s := i.stripe(k.SeqNum()); s != lastStripe {
			lastStripe = s
			kv := keptVersion{trailer: k.Trailer, value: v}
			if !i.stable {
				kv.start = len(i.buf)
				i.buf = append(i.buf, v...)
				kv.value, kv.end = nil, len(i.buf)
			}
			i.kept = append(i.kept, kv)
		} else {
			i.stats.Shadowed++
		}
	}
	if i.err = i.input.Error(); i.err != nil {
		return
	}
	i.dropRangeDeleted(i.key)
	i.elideTombstones(i.key)
	if i.zero {
		i.zeroOldest()
	}
}

// zeroOldest sets the sequence number of the oldest kept version to 0
// when it is a Set that every snapshot sees. Every reader then still sees
// it: a read's sequence number is at least that of every write in the
// tables it reads, and a snapshot's at least the version's, being in its
// stripe. The version stays the oldest of its key, and so last in
// internal-key order.
func (i *compactionIter) zeroOldest() {
	n := len(i.kept)
	if n == 0 {
		return
	}
	k := base.InternalKey{Trailer: i.kept[n-1].trailer}
	if k.Kind() != base.KindSet || k.SeqNum() == 0 || i.stripe(k.SeqNum()) != 0 {
		return
	}
	i.kept[n-1].trailer = base.MakeTrailer(0, base.KindSet)
	i.stats.SeqNumsZeroed++
}

// keepsOldestStripe reports whether kept, the range tombstones written
// to the output, hold one of the oldest snapshot stripe: one that may be
// older than a version it covers, which zeroing would put under it.
func (i *compactionIter) keepsOldestStripe(kept []sstable.RangeTombstone) bool {
	for _, t := range kept {
		if i.stripe(t.Seq) == 0 {
			return true
		}
	}
	return false
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
	i.out = i.out[:0]
	for _, k := range i.kept {
		v := k.value
		if !i.stable {
			v = i.buf[k.start:k.end:k.end]
		}
		i.out = append(i.out, version{key: base.InternalKey{UserKey: i.key, Trailer: k.trailer}, value: v})
	}
	return i.out
}
