// Package compaction decides what to compact in a bloomkv store and carries
// compactions out.
//
// It has two parts: a [Picker] that chooses compactions under a leveled
// scheme, and [Run], which drains a sorted input (several tables or
// memtables merged by [NewMergingIter]), drops what no reader can see any
// more and writes the rest as new tables. The kv package uses Run for
// flushes too (a memtable iterator in, L0 tables out). The merging iterator
// itself lives with the read path's other iterators in internal/iterator;
// NewMergingIter offers it to users of Run.
//
// # The leveled scheme
//
// A store has seven levels. Flushes write tables to L0, where tables may
// overlap one another. Each of L1..L6 is a sorted run: its tables do not
// overlap, so at most one of them can hold a given key. Data moves down one
// level per compaction, so for any key the newest versions are in the
// highest levels.
//
// Each level has a target. L0's is a read amplification
// (Options.L0CompactionThreshold, 4 by default): the most L0 tables that
// hold one user key ([Picker.L0ReadAmp], Pebble's L0 sublevel count),
// since those are the L0 tables a lookup may have to consult. It is not
// L0's table count: flushes split along the base level's tables (see
// "Flush splits") make several narrow tables each, side by side, which
// raise the count much faster than the read amplification. The deeper levels' targets are sizes, and
// each byte is rewritten about as many times per level it descends as
// the next level is larger than its own, so the targets grow by about
// Options.LevelMultiplier (10) per level, leaving nearly all the data in
// the deepest level.
//
// # Level sizes
//
// By default the targets are derived from the bottom level up, as Pebble
// and RocksDB's level_compaction_dynamic_level_bytes do ([Picker.Shape]).
// The bottom level, L6, is to hold all but a LevelMultiplier-th of the
// store. The base level, the one L0 compacts into, is the deepest level
// whose share (dividing by LevelMultiplier per level up from L6) stays
// within Options.LBaseMaxBytes (64 MiB), but never below the shallowest
// level holding data; the targets from the base level down grow from
// LBaseMaxBytes by one ratio per level, so that they end at L6's. Levels
// above the base level stay empty. A store of 1 GiB, say:
//
//	level   target (defaults, 1 GiB in L1..L6)
//	L0      read-amp 4
//	L1-L3   none: above the base level, empty
//	L4      64 MiB  (base level)
//	L5      243 MiB (64 MiB × 3.8)
//	L6      922 MiB (the store less a tenth)
//
// A new store writes L0 straight into L6; as it grows, the base level
// moves up one level each time L6's share outgrows another
// LevelMultiplier. Compared with fixed targets from L1 down (LevelDB's
// scheme, kept as Options.StaticLevels: L1 64 MiB, L2 640 MiB, ...), a
// small store has fewer levels for its data to pass through, and a level
// is never far larger than the data below it, so each byte is rewritten
// fewer times. The base level moving changes only where compactions
// write; data already in a level stays there until compacted down, and a
// store reopened after a crash derives its base level anew from where its
// data lies.
//
// A level's score is its read amplification (L0) or size (deeper)
// divided by its target; [Picker.Scores] reports them. L0 also scores its
// table count over Options.L0CompactionFileThreshold (500) when that is
// higher, as Pebble does, so tables that never overlap do not pile up
// without bound. Its priority is its score, divided,
// when 1 or more, by the score of the level it compacts into (L0's by the
// base level's; at least 0.01): a level over its target waits while the
// level below is further over its own, so data moves down the tree before
// more piles onto it (Pebble's score ratio; [Picker.Priorities]).
// [Picker.Pick] compacts the level of L0 and the base level..L5 with the
// highest priority of 1 or more (L0 on a tie, since L0 tables slow every
// read), L0 into the base level, the others into the level below. Tables
// already being compacted count for nothing.
//
// Weighing L0 against the deeper levels, rather than always taking L0
// first once due, is what keeps the base level bounded under sustained
// writes: were L0 always first, a writer that keeps L0 due would leave the
// base level to grow with the store, and each L0 compaction would rewrite
// all of it. The store stalls writers at a bound on L0's read
// amplification (kv's L0StopWritesThreshold), which bounds L0's score, so the base level goes
// down before it grows past that many times its target.
//
// # Space amplification
//
// Sized by their shares alone, the levels above L6 may hold up to a
// LevelMultiplier-th of L6 each, and the base level at least
// LBaseMaxBytes: on a store about twice LBaseMaxBytes, L5 is the base
// level with a target of half the live data. Under a workload that
// overwrites its keys, each version in L5 replaces one in L6, so the
// store then takes up to 1.5 times its live data on disk (Pebble v1.1.5
// too). Options.MaxSpaceAmp (1.2) bounds that: the picker estimates what
// share of the data above L6 replaces data in it, the overwrite ratio,
// from the last 16 compactions into L6 (the entries each dropped over
// those it moved down: [Picker.RecordBottomCompaction]), and lowers L5's
// target until the levels from the base level to L5, that share of each
// taken as replacing data, free at most MaxSpaceAmp-1 times the live data
// when compacted into L6:
//
//	live    = size(L1..L6) - ratio × size(base..L5)
//	L5 max  = ((MaxSpaceAmp-1) × live - ratio × size(base..L4)) / ratio
//
// never below TargetFileSize nor above its share. A store that only grows
// drops nothing in L6, its ratio stays 0 and its shape is as above; one
// that overwrites everything keeps L5 near a fifth of L6 once the ratio
// reaches 1. A smaller L5 makes each L0 compaction rewrite less of it
// and each L5 compaction rewrite more of L6: on the overwrite benchmark
// (1M keys rewritten three times, 126MB live, LBaseMaxBytes 64 MiB) space
// amplification fell from 1.53 to 1.20, and write amplification from 7.3
// to 6.8. L0 is left out of the estimate: its own trigger bounds it, and
// a store whose writes stop settles it. The estimate starts at 0 when a
// store opens.
//
// # Merging within L0
//
// An L0 compaction into the base level rewrites the base-level tables
// under its L0 tables. Under random keys every flush spans the whole key
// space, so each L0 compaction rewrites the whole base level, and that
// rewrite, not the L0 bytes, is most of what a growing store writes. So
// when the L0 tables that [Picker.Pick] or [Picker.PickSettle] would
// compact hold fewer bytes than the base-level tables under them, they
// are merged into new L0 tables instead (a compaction from L0 to L0), cut
// along the base level's tables: one L0 table then lies under each key,
// as the compaction into the base level would leave it, for the L0 bytes
// alone. The next time L0 is due, the merged tables join the new flushes
// in its column, and so on, until L0 holds as many bytes as the base
// level under it; then L0 goes down, and the base level is rewritten once
// for all the flushes it gathered rather than once for each few. Each
// merge writes its L0 bytes once more, and bounding them by the base
// level's bytes makes that cost less than the base-level rewrite it
// replaces. (A lower bound, L0 merged within itself only up to half the
// base level, writes more on kv's BenchmarkWriteAmpFill.) The merged
// tables lie side by side, so L0's read amplification, which stalls
// writers, is one more than after a compaction into the base level, not
// more; lookups consult them as any L0 table.
// Pebble v1.1.5 merges within L0 only when a compaction into the base
// level cannot be picked.
//
// It does not when no key lies in two L0 tables or L0's table count
// scores higher than its read amplification (an L0 due by its table count
// would stay as due: the merge leaves as many tables side by side), nor
// when an L0 table left out overlaps the inputs and has sequence numbers
// among theirs: L0 is read newest table first, by largest sequence
// number, and outputs spanning the inputs' numbers could not be ordered
// with it; nor when the compaction takes one L0 table, which a merge
// would leave where it was, L0 as deep as before.
//
// # Settling L0
//
// L0 is due at read amplification L0CompactionThreshold, as Pebble
// documents its option of that name; Pebble v1.1.5 itself scores L0 at
// 2 × read amplification / L0CompactionThreshold, so it compacts L0 from
// half the threshold on, and a store whose writes stop settles with at
// most one L0 table under each key. Doing the same while writes flow
// costs write amplification: each L0 compaction takes half as many
// flushes down into the same base-level tables, so a writer slower than
// the compactions pays up to twice the base level's rewrites (Pebble pays
// it too; its L0 piles up beyond the trigger only while compactions lag).
// So [Picker.Pick] holds to the threshold, and [Picker.PickSettle]
// compacts L0 from half of it, when no level is due, for a store whose
// writes have stopped (kv: once every acknowledged write is in a table),
// by the cheaper of the two ways above. Lookups on the settled store
// consult one L0 table at most, as Pebble's.
//
// # Concurrent compactions
//
// Compactions that share no table, are not both from L0, and do not write
// overlapping key ranges into the same level may run at once
// ([Compaction.Conflicts]); Pick takes the compactions running into
// account. [Picker.WantsAnother] says when a store should run one more
// beside them, Pebble's rule: one more for each Options.L0CompactionConcurrency
// of L0 read amplification ([Picker.L0ReadAmp], the most L0 tables holding
// one key) or each Options.CompactionDebtConcurrency bytes of estimated
// compaction debt ([Picker.Debt]).
//
// # Flush splits
//
// A flush cuts its L0 table, once it holds Options.FlushSplitBytes, just
// past the end of a table of the base level ([Picker.FlushSplit],
// RunConfig.SplitBoundaries): the flushes' L0 tables then line up with
// the base level's tables, so an L0 compaction can take the slice of L0
// above a few of them rather than every L0 table.
//
// # Choosing the inputs
//
// The versions of one user key must never be split between tables that a
// compaction moves down and tables that stay: the stayers would then hold
// an older version above a newer one.
//
//   - From L0, the column of L0 tables holding the user key where L0 is
//     deepest seeds the inputs (of points equally deep, the one whose
//     oldest table is oldest), as Pebble's base compactions seed from its
//     deepest interval; then every L0 table overlapping an input and
//     holding older versions joins, repeatedly. Newer overlapping tables
//     may stay: they stay above what goes down. One L0 compaction runs at
//     a time; when a column is blocked by a compaction running, the next
//     deepest point outside it goes.
//   - From L1..L5, one table is chosen: the one that overlaps the fewest
//     bytes of the next level for its own size, which moves data down for
//     the least rewriting. Its neighbours join while they share a boundary
//     user key (a level that passes Version.CheckOrdering has none).
//
// Then the tables of the output level overlapping the inputs join. If the
// start level has more tables inside the range now covered that would pull
// in no further output-level tables, they join too, up to
// Options.ExpandedCompactionFactor × TargetFileSize bytes: merging them now
// is nearly free, later it would rewrite the same output tables again.
// From L0 the tables that join so are those lying inside the range, with
// the older tables they overlap: an L0 compaction takes the slice of L0
// above the base-level tables under its column, cut along their
// boundaries, not all of L0 with all of the base level when flushes are
// split.
// Finally the tables of the level below the output overlapping the whole
// range are noted as grandparents: [Run] cuts an output table once it
// overlaps more than Options.GrandparentOverlapFactor × TargetFileSize bytes
// of them, so that no later compaction of that table has to rewrite a huge
// part of the level below. A compaction whose one input table overlaps
// nothing in the output level and little of the grandparents is a
// [Compaction.TrivialMove]: the table can change level without being
// rewritten.
//
// # Multi-level compactions
//
// A compaction from L1..L4 may carry on one level further, as Pebble
// v1.1.5's do by default: its output level's tables become the middle
// level of a compaction into the level below, which merges the start
// level's inputs, the middle level's and the tables under them there, so
// the middle level's bytes are written once, into the deeper level, rather
// than into their own level now and again on the way down later. The
// picker extends a compaction so when that writes no more per byte moved
// down (Pebble's WriteAmpHeuristic): (upper + middle + lower) / (upper +
// middle) against (upper + middle) / upper, in bytes of the start, middle
// and deeper level's inputs. It does not when the deeper level holds
// nothing under the range (the outputs could then move down unchanged
// later), when the compaction already reads ExpandedCompactionFactor ×
// TargetFileSize bytes, or from L0.
//
// A [Manual] walk, from [Picker.NewManual], serves DB.Compact: it pushes
// the tables of a key range down one level at a time ([Picker.PickManual]),
// from L0 (into the base level) to the deepest level holding keys of the
// range, and rewrites them in place there when nothing was pushed into
// it.
//
// # What Run drops
//
// A read at sequence number s sees, for each key, the newest version
// numbered s or lower. The open snapshots cut the sequence numbers into
// stripes; within a stripe every reader sees either all versions or none,
// so only the newest version of each stripe can ever be seen:
//
//	seqnum   1   2   3 | 4   5 | 6   7     snapshots at 3 and 5
//	a        .   S   D | .   S | S   S     S: set  D: delete
//	kept             D |     S |     S     newest of each stripe
//
// Run keeps exactly those versions and drops the others as shadowed. A kept
// tombstone still hides what lies below the output level; when no level
// below holds the key (RunConfig.ElideTombstone, built by
// [Compaction.ElideTombstone]) the tombstones at the old end of the key's
// kept versions are dropped too: with nothing older left anywhere, a reader
// that met such a tombstone now meets no version at all, which reads the
// same. A tombstone with a value kept below it (for an older snapshot)
// stays, or that value would reappear. In the example, with elision
// allowed, the kept D goes: the snapshot at 3 then finds nothing, as
// before.
//
// Where no level below the output holds any key of the compaction's range
// and the output is not L0 ([Compaction.ZeroSeqNums]), Run also sets to 0
// the sequence number of each key's oldest kept version when it is a Set
// of the oldest stripe (RunConfig.ZeroSeqNums), as Pebble and RocksDB do:
// every reader sees it, before and after, and the tables' trailers then
// repeat from key to key, so blocks compress better. It zeroes nothing
// when it keeps a range tombstone of the oldest stripe, which may be
// older than a version it spans. In the example, the S at 5 stays (the
// snapshot at 3 must not see it), and with no snapshot the kept S at 7
// would be written as a#0.
//
// Run writes the kept entries through sstable.Writer, each table with its
// own per-block filters, and cuts tables near RunConfig.TargetFileSize,
// where a grandparent starts when there are grandparents (between half
// and twice the target, as Pebble and RocksDB cut), so that a level's
// tables line up with those of the level below and a later compaction of
// one rewrites whole tables of that level, not one more at each end; it
// also cuts once a table overlaps too many grandparent bytes, and at
// RunConfig.SplitBoundaries, always between
// two user keys: a key's versions
// never span two tables, which keeps the levels free of shared boundary
// keys.
package compaction
