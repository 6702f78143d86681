// Package kv is the bloomkv engine: an embeddable, ordered key-value store
// built as a log-structured merge tree whose tables carry a Bloom filter per
// data block.
//
// # Using it
//
// Open a directory, write with Set, Delete, DeleteRange or an atomic Batch,
// read with Get, an Iterator or a Snapshot, and Close. DB and Snapshot methods are safe for
// concurrent use; an Iterator or a Batch belongs to one goroutine at a time.
// Writes take a [WriteOptions]: [Sync] waits for the WAL to reach stable
// storage, so the write survives a power loss; [NoSync] does not, but is
// written to the WAL file before it is acknowledged, so it survives a crash
// of the process (and a clean Close keeps it, in the synced WAL; see
// Recovery). Options.BackgroundWALWrites trades that for speed, as Pebble
// does: NoSync writes are acknowledged from a buffer that a goroutine
// writes to the WAL a moment later (within about a millisecond), so a
// process crash may lose the last of them: at most 256 KiB of their WAL
// records, as a commit waits before it is acknowledged rather than exceed
// that (a prefix of the acknowledged writes always survives, and Sync
// writes, Flush and Close write the buffer out first). Metrics reports
// how many tables, filters and blocks each lookup touched.
//
// The default promise costs no system call per commit on Linux, when
// Options.FS is vfs.Default and the store is on ext4, XFS or tmpfs: the
// WAL file's space is allocated ahead (fallocate, a memtable's size and a
// tenth at a time), the file is mapped, and a NoSync commit copies its
// record into the mapped pages, which are the operating system's page
// cache, so the record outlives the process as a written one would. A
// full disk fails the allocation with an error before a page is touched,
// which stops writes as a failed write would (never SIGBUS). The cost:
// each WAL file takes a chunk of disk at once (zeros past its last
// record, which recovery reads as its end), a chunk of address space
// while it is written, and a page fault per page of WAL. A Sync write's
// record is not copied: the writers waiting for a sync write theirs with
// one write(2), a store into the pages the last sync cleaned would
// fault, and the records behind one not yet written follow it, so the
// file fills in order. fdatasync covers the mapped pages too. A WAL a
// memtable switch (or Close) retires is unmapped before its last sync,
// which then writes back plain page-cache pages, as a written WAL's is:
// syncing pages still mapped costs the kernel a write-protection of each,
// on the writers' path. Elsewhere
// (another vfs.FS, file system or platform) the WAL is written with one
// write system call per commit group.
//
// For a store's files as a whole, as in Pebble: [DB.Checkpoint] copies
// the store into a new directory while it serves, [DB.Ingest] adds tables
// written outside it by sstable.Writer (a bulk load), and
// [DB.EstimateDiskUsage] tells the bytes of a key range's tables.
// [Options.ReadOnly] opens a store for reads alone, changing none of its
// files (a tool inspecting a store, a backup read).
//
// For reads and background events, as in Pebble: [DB.GetAppend]
// reads into the caller's buffer without allocating; [DB.NewIndexedBatch]
// makes a batch whose Get and NewIter see its own writes over the DB;
// [Iterator.SetBounds] and [Iterator.Clone] reuse an iterator's view,
// [Iterator.Refresh] moves it to the DB's current state (RocksDB's
// Refresh), and [Iterator.Stats] tells what it read;
// [Options.EventListener] is told of flushes, compactions, ingestions,
// files and stalls.
//
// # Prefixes
//
// A Comparer with a Split (Options.Comparer) cuts each key into a prefix
// and a suffix, as Pebble's does (for example "user/42/" of
// "user/42/name"). Filters then hold the prefixes of their blocks' keys;
// Get asks them about its key's prefix, and [Iterator.SeekPrefixGE] seeks
// within one prefix, skipping every table and block whose filter rules it
// out, then walks it with Next (prefix mode).
//
// # Failures
//
// Keys, values and batches over [MaxKeySize], [MaxValueSize] and
// [MaxBatchSize] are refused with an error. Damaged files give errors that
// wrap [ErrCorruption] and name the file. A failed WAL write or sync, or a
// failed flush, compaction or MANIFEST update, stops the DB from accepting
// writes for good (whether the failed write reached the disk is unknown, so
// nothing after it may be acknowledged); reads go on, and Close reports the
// error. A write refused once the failure is recorded never reaches the
// WAL; the failed write, and one committing alongside it when it failed,
// may (each was refused, and may be found after a reopen; a Sync write
// refused because its fsync failed was visible to reads before, being
// published before its fsync, as below). Reopening the
// store recovers every acknowledged write (with
// BackgroundWALWrites, a failed background write of the WAL loses the
// NoSync writes acknowledged after its bytes were buffered, and no Sync
// write succeeds after it).
//
// # How it works
//
// A write goes through a commit pipeline, as in Pebble. Under a short
// lock, which each writer takes for itself, it is assigned sequence
// numbers and its record is appended to the write-ahead log's (WAL's)
// buffer, in sequence order. Where the WAL is memory-mapped (vfs.Default
// on Linux) a NoSync record is encoded straight into the file's pages,
// with one copy of the batch: under the lock when writers do not
// overlap; otherwise the lock only gives the record its place, its
// writer encodes it there concurrently with the other writers, and the
// record is completed (made valid) in WAL order before its write is
// acknowledged, so the file never holds a valid record after one that is
// not. A goroutine faults the pages in ahead of the writes, and unmaps
// the chunks of the file they have left, so that neither costs the
// writers.
// Otherwise, concurrently with other writers, it waits until its record
// is in the WAL file: whichever waiting writer finds no other writing
// takes the buffer, every writer's record queued so far, and writes it
// with one write(2). Each writer then inserts its own batch into the
// memtable (which takes concurrent inserts), concurrently with the
// others, and the write is published: the sequence number readers see
// moves past a batch only once it and every batch before it are
// inserted, so readers never see a later write before an earlier one,
// and see each batch whole or not at all. Whichever writer finds the
// oldest batches inserted publishes them, without a lock; a writer whose
// batch waits behind one still being inserted waits to be published.
// Last, a Sync write waits for one fsync that serves every Sync writer
// whose record is written, and returns once it is done. Its batch is
// published before the fsync, as in Pebble: the writes after it wait for
// no fsync, and readers may see it before it is synced, as they see a
// NoSync write. An fsync may run while the next records are written, and
// before it starts it waits a little (half an fsync's time at most) for
// the Sync writers the last one released to come back, so that
// concurrent Sync writers share each fsync all together instead of
// taking turns in two halves; then, while its yields of the processor
// bring in more Sync writers, it lets them come (up to an fsync's time,
// or 100 µs where fsyncs are faster), so that fast fsyncs on few
// processors are shared too. The records of those that come meanwhile
// are written all at once, before the fsync, and their batches inserted
// while it runs. With
// BackgroundWALWrites the records go to a buffer that a goroutine of the
// WAL writes to the file, many writes in one call; a Sync write waits for
// it to catch up before the fsync.
//
// When the memtable is full it becomes immutable and a new memtable with a
// new WAL takes its place. Memtables fill at Options.MemTableSize, except
// the first ones after Open: from MemTableSize/16 (at least 256 KiB) up,
// each twice the last, flushed together once they add up to half of
// MemTableSize, as Pebble sizes and flushes them. A background goroutine
// flushes immutable memtables to L0 tables, records each flush in the
// MANIFEST and retires the WAL it no longer needs: a few such files are
// kept, and the next WAL takes one over (renamed, overwritten from the
// start), so appending to it neither grows the file nor allocates blocks,
// and a Sync write's fdatasync writes little more than the data; the WAL
// records carry their WAL's number, so recovery stops where a recycled
// file's new records end. A new WAL's space is preallocated. A flushed
// memtable is kept too, once no read holds it (a read holds its read
// state, and so the memtables it reads, until it is done): the next
// switch empties it and writes into its memory, so a steady load
// allocates no memtable memory for the garbage collector to track and
// collect. Another compacts: it asks
// the compaction picker what to do, merges the inputs into new tables of the
// output level, and retires the inputs in the same MANIFEST edit. Input files
// are deleted once no Version (held by reads, iterators and snapshots'
// iterators) refers to them, by a goroutine of their own, so that neither
// the writers, whose memtable switch waits for the compaction's MANIFEST
// edit, nor the reader that lets go of the last such Version waits for
// the file system to free them. When L0 is due and its tables hold fewer
// bytes than the base-level tables under them, they are merged within L0
// instead of into the base level, which spares rewriting the base level
// until L0 holds as much (Metrics then shows L0 BytesCompacted; see
// "Merging within L0" in the compaction package). Once every acknowledged
// write is in a table, L0 settles to one table under each key (unless
// Options.DisableL0Settling), by the same choice
// (compaction.Picker.PickSettle).
//
// Get looks in the memtable, the immutable memtables newest first, the L0
// tables newest first, and then in L1..L6 at the one table per level whose
// key range covers the key, stopping at the newest version visible at the
// read's sequence number. A read takes no lock that every read takes,
// so that readers on many cores do not queue on one: it takes the read
// state (the memtables and the Version) with an atomic load and a
// compare-and-swap on its reference count, and each table from the
// table cache, which is split into shards by file number, each with its
// own lock.
//
// # Filters
//
// Each new table gets the filter policy of the level it is written to:
// Options.Levels[level].FilterPolicy if set, else the sizing of
// Options.FilterBudget for that level if a budget is set (Monkey's rule,
// computed from the tree as it stands when the flush or compaction writes
// the table), else Options.FilterPolicy. A table records its policy's
// name; readers use the filter of every table whose policy some option
// names, and read the others without. Options.DisableFilters writes no
// filters and reads none, so the same files can be measured both ways.
//
// Under a cap on filter memory (FilterBudget{Bytes}) every table keeps
// the filter it was written with on disk, and what it holds in memory
// follows the allocation of the cap over the tree as it stands. After
// every flush and compaction a background pass weighs each table by the
// lookups that reached it and missed there (its own count, decayed with
// a half-life of 25,000 lookups, drawn toward its level's share while it
// has few), allocates the cap over the tables by bloompolicy's traffic
// rule, and gives each table a filter of the bits per key it now gets:
// its own when that is within a quarter bit of them, else one built in
// memory from the table's keys (sstable.Reader.BuildFilter: a read of the
// table, counted in Metrics.Filters.FiltersBuilt), or none when the
// allocation gives it under one bit per key. A table holding no filter is
// read as if it had none. Bytes are reserved against the cap before a
// filter is held, so the filter bytes held never exceed it; the filters
// that shrink are swapped first. A growing store thus shrinks the filters
// of its older tables rather than dropping them, and a store that sheds
// transient L0 tables gives their bytes back to the levels below. New
// tables are written with the filter a pass would give them, so a pass
// rarely builds one for a new table. A pass builds filters only when the
// plan saves at least 1% of the reads it expects lookups to waste, or
// spends more than 1% more of the cap (for a pass that lookups alone
// asked for, on a tree that has not changed: only when it saves 10%), so
// that a settled store does not read its tables again and again to move
// a few bytes between their filters. While flushes and compactions run,
// a pass plans L0 at the deepest it has stood since they last stopped,
// keeping room for the L0 tables to come, and lets a table's filter stray
// a bit per key from its share, not a quarter: a store being loaded then
// rebuilds its deeper tables as it grows, not at every swing of L0, and
// each a quarter as often, at the cost of 3–5% more false positives
// (filters spread over ±1 bit of their share) until it settles and a
// pass plans the tree as it stands. A table closed by the table cache
// loses a built filter, and rebuilds it when it is opened again.
//
// # Range deletions
//
// DeleteRange writes one range tombstone [start, end)#seq, whatever the
// number of keys it covers. The memtable keeps tombstones in a skiplist of
// their own; tables keep them, fragmented, in a block of their own that
// each open table holds in memory. A table's key range includes its
// tombstones, the last one's end entering as an exclusive bound, so that
// a lookup of a covered key reaches the table, and compactions cut
// tombstones at their output tables' boundaries, so that L1..L6 tables
// still share no user key. Each source a Get consults answers for its own
// tombstones as well as its keys; a table's filter says nothing of its
// tombstones, so a table whose filter rules the key out is still searched
// for them (LookupMetrics.RangeDelChecks), at no block read. An Iterator
// gathers the tombstones within its bounds once, when it is made (see
// [Iterator] for the cost). Compactions drop the keys a tombstone of the
// same snapshot stripe covers, and the tombstone itself once no snapshot
// needs it and no deeper level holds keys of its range.
//
// # Files
//
// A store's directory holds these files, numbered from one counter that
// never reuses a number (six digits at least, zero-padded):
//
//	000012.log      WAL: the mark of a switch (after a sealed WAL), one record per committed
//	                batch, then a seal (internal/record framing, recyclable chunks, each
//	                carrying the WAL's number)
//	000010.sst      a table (see package sstable)
//	MANIFEST-000011 log of version edits, each followed by a seal (internal/record framing)
//	CURRENT         "MANIFEST-000011\n": the manifest in use, switched atomically
//	LOCK            held while the store is open (see dirlock.go)
//	000013.tmp      a CURRENT being written (removed at Open if left behind)
//
// # Batch encoding
//
// A batch, as held in memory and as stored in one WAL record:
//
//	+-------------------+------------------+----------+-----+----------+
//	| seqnum (8 B, LE)  | count (4 B, LE)  | record 0 | ... | record n |
//	+-------------------+------------------+----------+-----+----------+
//
//	record:
//	+-------------+---------------------+-----+-----------------------+-------+
//	| kind (1 B)  | key len (uvarint)   | key | value len (uvarint)   | value |
//	+-------------+---------------------+-----+-----------------------+-------+
//
// seqnum is that of record 0; record i has seqnum+i. kind is
// [sstable.KindSet] (1), [sstable.KindDelete] (0) or
// [sstable.KindRangeDelete] (2); a DEL record has an empty value; a
// RANGEDEL record's key is the range's start and its value the end
// (exclusive).
//
// # Recovery
//
// Open reads CURRENT and replays the MANIFEST's edits into a Version. A
// directory without CURRENT opens as a new store (replaying any WAL it
// holds), unless it holds a table or a MANIFEST that records tables: that
// is a store whose CURRENT is lost, refused as corruption, since a new
// store would start without its tables and delete them. An
// edit that contradicts the ones before it (a table added twice, a
// deleted table that is absent, a file number at or above the next one,
// seqnums above the last one, overlapping tables in L1+) is corruption
// naming the MANIFEST and the edit's offset. It then replays every WAL
// numbered at or above the MANIFEST's log number, in order, into one
// memtable. Each batch must carry a sequence number above everything
// recovered before it, the MANIFEST's last sequence number included, so a
// WAL copied twice or two overlapping WALs are corruption naming the WAL
// and the record's offset, not writes applied twice.
//
// Close does not flush: as in LevelDB and Pebble, it leaves the memtable's
// writes in its WAL, synced, and the next Open replays them. When they fit
// in a memtable, Open keeps them as the mutable memtable, backed by the
// WALs they came from, and appends new writes to the last of those when
// it ends cleanly (a new WAL otherwise): opening and closing a store over
// and over, as the command-line tool does, neither adds an L0 table nor
// piles up WALs, and reopening costs no table write. Those WALs are retired
// once the memtable is flushed and the MANIFEST's log number passes them
// (a WAL of an earlier Open is deleted, one this Open created may be
// recycled; a recycled WAL is not continued at Open, its file being
// longer than its records).
// Only when the replayed writes exceed Options.MemTableSize does Open
// write tables: it writes them all out as L0 tables (every replayed WAL
// then becomes obsolete) and starts a new WAL.
//
// A WAL ends, too, at the first record of another WAL: the remains of the
// file's earlier life, when it was recycled. Those must be of a WAL below
// the MANIFEST's log number; records of a live WAL are a copy, and
// corruption. A table whose footer names a newer format version gives
// ErrNewerFormat.
//
// Recovery tells a crash from damage; the policy:
//
//   - A torn tail is a clean recovery. A log (WAL or MANIFEST) whose last
//     record is incomplete or fails its checksum, with nothing valid after
//     it (the file's end, zeros, or the remains of a recycled WAL's earlier
//     log), is what a crash in mid-append leaves: that record was never
//     acknowledged, so recovery stops at the last whole record, without an
//     error. A WAL with a torn tail is not continued: new writes go to a
//     new WAL. A WAL followed only by zeros (which a sync writes ahead of
//     the records) ends cleanly.
//   - So are pages the file system never wrote, in the WAL being written
//     at a crash of the machine: its pages not yet synced reach the disk
//     in any order, and some never do, leaving zeros (or, in a recycled
//     file, the earlier log's chunks) with valid records after them.
//     Those records were never synced, since a sync writes every page
//     before them: the replay stops at the damage, Options.Logger is
//     told, and Open writes the replayed writes to L0 and retires the
//     WAL. A WAL written after it with records of its own makes it
//     corruption, and so does a seal after the damage (a seal is written
//     only once every page before it is synced). A page never written within one
//     chunk of a record of
//     several pages, and a page of a recycled file that holds no whole
//     chunk of the earlier log, cannot be told from damage (a record may
//     hold pages of zeros), and are corruption too.
//   - Everything else is corruption: an error that wraps ErrCorruption and
//     names the file and the offset. That is damage followed by any valid
//     record of the same log; a WAL whose chunks are not in the format the
//     MANIFEST records for it; a CURRENT that does not name an existing
//     MANIFEST; a missing WAL that the MANIFEST's log number names; a table
//     block or footer that fails its checksum or does not decode (met by
//     Open, or by the read that reaches it); and contents that contradict
//     each other (see above).
//
// Two things keep one flipped bit from passing for a torn tail. First, a
// log's format never rests on a byte of the log: the MANIFEST records from
// which WAL on the store writes recyclable chunks (every WAL of a store
// this version created), and those WALs are read as such, so damage to a
// first chunk's type is corruption; WALs of older stores are read in the
// format of their first chunk that verifies. Second, logs are sealed: every
// MANIFEST edit is followed by an empty record, and a WAL by an empty batch
// at Close and when the memtable moves to a new WAL, each written once
// what it follows is synced, then synced itself (a crash during one sync
// of both could leave the seal's page on the disk without an earlier
// one, and the store would not open). Damage to any edit or batch is
// then followed by a valid record, and only damage to the seal, which
// loses nothing, reads as a torn tail. The seal is
// synced before the next WAL takes a write, so a WAL that lacks it while a
// later WAL holds records was cut short or damaged: corruption naming it,
// not a torn tail with the later WAL's writes replayed over the ones lost.
// A seal also holds the last sequence number assigned when it was
// written, and the batch replayed after it must take the next one: a WAL
// missing between a seal and a later WAL's records is corruption too, in
// a crashed store as in a closed one. Once the seal is synced, the next
// WAL starts with the mark of the switch, a copy of the seal: so though
// nothing was written after the switch, a WAL before it cut short,
// emptied, or missing between the two (its seal's number not the mark's)
// is corruption, not a crash's torn tail.
// A WAL left unsealed by a crash is continued by the next Open when it
// ends cleanly, and otherwise made obsolete by writing its writes to
// tables, so no later WAL finds it live. One case is left: the last
// records of a WAL still being written at a crash are not sealed, so
// damage to them after the crash reads as a torn tail, as it does in
// LevelDB and Pebble (so does damage to a sealed WAL whose next one lost
// its mark, which only a crash of the machine in the switch can do).
//
// A closed store's last WAL and last MANIFEST edits have nothing after
// them to vouch for them: cut short, they would read as the torn tail of
// a crash, and Open would drop synced writes, or the tables of the edits
// cut off, deleting them as a crash's leftovers. Nor would a WAL among
// others that went missing leave a trace. So Close leaves a MANIFEST of
// one edit, the whole Version, which records every WAL that holds writes
// in no table, with its length: the one Close sealed and synced last, and
// those of the memtables waiting for a flush (sealed at their rotation)
// or replayed at Open. That MANIFEST cut anywhere before its seal holds
// no edit, and Open refuses it as corruption; Open refuses a WAL it
// records missing, or ending before its seal, as corruption naming it.
// The last one's seal alone may be lost. Once an Open continues the last
// WAL, or appends edits to the MANIFEST, a crash may tear what it
// appended, as before.
package kv
