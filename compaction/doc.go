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
// Each level has a target. L0's is a number of tables
// (Options.L0CompactionThreshold, 4 by default), because every L0 table
// costs every read a lookup. L1's is a size (Options.LBaseMaxBytes, 64 MiB),
// and each deeper level's is Options.LevelMultiplier (10) times the one
// above, so nearly all the data sits in the deepest levels and each byte is
// rewritten about LevelMultiplier times per level it descends:
//
//	level   target (defaults)
//	L0      4 tables
//	L1      64 MiB
//	L2      640 MiB
//	L3      6.25 GiB
//	L4      62.5 GiB
//	L5      625 GiB
//	L6      6.1 TiB (reported only: L6 has nowhere to compact to)
//
// A level's score is its table count (L0) or size (deeper) divided by its
// target; [Picker.Scores] reports them. [Picker.Pick] compacts the level of
// L0..L5 with the highest score of 1 or more into the level below it (L0
// on a tie, since L0 tables slow every read). Tables already being
// compacted count for nothing.
//
// Comparing L0 with the deeper levels by score, rather than always taking
// L0 first once due, is what keeps L1 bounded under sustained writes: were
// L0 always first, a writer that keeps L0 due would leave L1 to grow with
// the store, and each L0 compaction would rewrite all of it. The store
// stalls writers at a bound on L0's table count (kv's
// L0StopWritesThreshold), which bounds L0's score, so L1 goes down before
// it grows past that many times its target.
//
// # Choosing the inputs
//
// The versions of one user key must never be split between tables that a
// compaction moves down and tables that stay: the stayers would then hold
// an older version above a newer one.
//
//   - From L0, the oldest table seeds the inputs, and every L0 table
//     overlapping them joins, repeatedly, until no L0 table outside shares
//     a key with them. One L0 compaction runs at a time.
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
// Finally the tables of the level below the output overlapping the whole
// range are noted as grandparents: [Run] cuts an output table once it
// overlaps more than Options.GrandparentOverlapFactor × TargetFileSize bytes
// of them, so that no later compaction of that table has to rewrite a huge
// part of the level below. A compaction whose one input table overlaps
// nothing in the output level and little of the grandparents is a
// [Compaction.TrivialMove]: the table can change level without being
// rewritten.
//
// A [Manual] walk, from [Picker.NewManual], serves DB.Compact: it pushes
// the tables of a key range down one level at a time ([Picker.PickManual]),
// from L0 to the deepest level holding keys of the range, and rewrites
// them in place there when nothing was pushed into it.
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
// Run writes the kept entries through sstable.Writer, each table with its
// own per-block filters, and cuts tables at RunConfig.TargetFileSize and
// along the grandparents, always between two user keys: a key's versions
// never span two tables, which keeps the levels free of shared boundary
// keys.
package compaction
