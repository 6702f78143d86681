// Command bloomkv benchmarks bloomkv's per-block Bloom filters, inspects
// stores, tables and filters, and checks what stores keep when the
// process writing them is killed.
//
// Usage:
//
//	bloomkv bench [--keys N] [--value-size B] [--lookups N] [--fpr P] [--cache SIZE]
//	              [--memtable SIZE] [--table-size SIZE] [--l1-size SIZE] [--growth]
//	              [--dir D] [--keep] [--pebble] [--plot FILE.svg|FILE.png] [--markdown FILE]
//	              [--seed S] [--rounds N] [--json]
//	bloomkv bench --prefix [--keys N] [--lookups N] [--pebble] [...]
//	bloomkv bench --filter-memory [--keys N] [--lookups N] [--zipf-rankings N] [--plot FILE] [--markdown FILE]
//	bloomkv bench --writers N,N,... [--keys N] [--memtable SIZE] [--pebble] [--rounds N] [--markdown FILE]
//	bloomkv bench --growth --filter-cap-bits B [--keys N] [--growth-from N] [--markdown FILE]
//	bloomkv crash [--duration D | --kills N] [--writers N,N,...] [--sync P,P,...] [--memtable SIZE,...]
//	              [--background-wal] [--kill-within D] [--dir D] [--keep] [--seed S] [--markdown FILE]
//	bloomkv db get KEY... --dir D [--metrics] [--split NAME]
//	bloomkv db set KEY VALUE --dir D
//	bloomkv db delete KEY --dir D
//	bloomkv db delete-range START END --dir D
//	bloomkv db scan --dir D [--start K] [--end K] [--limit N]
//	bloomkv db metrics --dir D
//	bloomkv db checkpoint DEST --dir D
//	bloomkv db ingest FILE... --dir D
//	bloomkv db disk-usage --dir D [--start K] [--end K]
//	bloomkv sstable dump FILE [--split NAME]
//	bloomkv sstable check FILE [--split NAME]
//	bloomkv filter [--fpr P] [--keys N] [--queries N] [--seed S]
//
// Every command takes --json to print machine-readable output on stdout.
//
// # bench
//
// bench loads the same data into several stores and measures point lookups
// in each, in three shapes of the LSM, one after the other on the same
// store. By default: 500,000 keys of 16 bytes (hex digits) with 100-byte
// values, written in random order in NoSync batches of 1000, into stores
// with a 1 MiB memtable, 1 MiB tables and a base level (the level L0
// compacts into) of at most 4 MiB (--l1-size): levels are sized from the
// bottom up, each a tenth of the one below, so the data (about 60 MiB)
// settles into L0 and three levels below it; an 8 MiB block cache,
// smaller than the data, so block reads are real. The shapes:
//
//   - settled: the load and its background compactions, no manual
//     compaction. The last keys are flushed in chunks after a wait, so that
//     L0 holds three tables (one short of the L0 compaction trigger), as a
//     store taking writes does between its L0 compactions;
//   - write-heavy: a quarter more keys written in batches of 1000, each
//     followed by a share of the lookups, while flushes and compactions go
//     on; how many tables L0 held meanwhile is printed;
//   - compacted: Flush, Compact over the whole key range and a wait: one
//     level, one table per lookup.
//
// In each, 50,000 lookups of absent keys and 50,000 of present keys (keys
// loaded before the shape), each in random order; every answer is checked.
// The stores are a table of configurations (benchConfigs), each a change
// to the bench's kv.Options or pebble.Options:
//
//   - bloomkv without filters (kv.Options.DisableFilters);
//   - bloomkv with bloompolicy.New(--fpr);
//   - bloomkv with the same bits per key divided among the runs of the LSM
//     by Monkey's rule (kv.Options.FilterBudget): more bits for L0 tables
//     and upper levels, fewer for the bottom one;
//   - bloomkv with Pebble's bloom.FilterPolicy at the nearest whole number of
//     the bits per key bloompolicy chose, through pebbleadapter.FromPebble;
//   - with --pebble, Pebble v1.1.5 itself with the same two filters
//     (pebbleadapter.ToPebble for ours), on every level including L6:
//     Pebble's DB.Get never reads L6 filters, so its lookups go through an
//     iterator opened with UseL6Filters, by SeekPrefixGE, reopened between
//     the write-heavy batches. Pebble gets the same sizes, an
//     L0CompactionThreshold that compacts L0 at the same four tables (it
//     scores 2 × sublevels), no read-triggered compactions, and room in its
//     block cache for the memtables it charges to it.
//
// For each store and shape it prints ns per lookup, tables considered,
// block reads and reads saved (filter negatives) per lookup, absent and
// present, and the observed false-positive rate; the LSM the lookups met;
// and, for bloomkv, the same per level from DB.Metrics' per-level
// LookupMetrics. Pebble counts lookups per DB, not per level: its rows
// count filter checks as tables, filter hits as negatives, misses less the
// keys found as false positives, and every block-cache access as a block
// read. The counters are differenced around each run of lookups. The stores
// live in a new temporary directory, or in --dir, and are removed
// afterwards unless --keep.
//
// Last come the write modes (--rounds 0 skips them): each WAL mode's
// promise for an acknowledged NoSync write after a crash of the process,
// beside what a write costs in it. bloomkv by default, bloomkv with
// kv.Options.BackgroundWALWrites and, with --pebble, Pebble with its
// default WAL each fill an empty store with the bench's sizes, one Set
// per write from one writer: --keys keys NoSync, then in another store a
// 500th as many (at least 1000, at most --keys) Sync. The modes take
// turns over --rounds rounds (2); each mode's best round counts, in ns
// per Set and as a ratio to Pebble's.
//
// --growth loads in doubling steps up to --keys (from --keys/64, or the
// smallest step of at least 1000 keys) and measures the settled shape after
// each, the last being the settled shape above.
//
// --plot FILE draws the false-positive rate against bits per key of
// standalone filters (ours, Pebble's, the textbook e^(-ln²2·b) and the
// limit 2^(-b)) with the rates observed in the stores, and the reads saved
// per lookup of each filtered store in each shape; with --growth, also the
// tables considered and the reads saved per lookup against the number of
// keys in the store; the right panel's legend sits under it, clear of the
// bars.
//
// --markdown FILE also writes the report as a Markdown page: the command
// line that makes it, the machine, the Go version and the date, a headline
// table of bloomkv with bloompolicy against Pebble with its own bloom (with
// --pebble), and every table. docs/results.md is such a page, regenerated
// rather than edited.
//
// bench --prefix runs the prefix-scan workload instead: --keys keys
// "user/<id>/<field>", three fields per user, under comparers that split
// them after "user/<id>/" (kv.Options.Comparer with a Split; the same Split
// in Pebble), so the filters hold users; then --lookups SeekPrefixGE calls
// for absent users and as many for present ones (each read through its
// fields with Next), on bloomkv without and with bloompolicy.New(--fpr)
// and, with --pebble, Pebble without and with its bloom (UseL6Filters).
// It prints ns per seek, tables considered, block reads per seek and the
// observed false-positive rate.
//
// bench --filter-memory runs the filter-memory study instead
// (internal/bench.FilterMemStudy): wasted data-block reads per lookup at 2
// to 16 bits per key, for uniform filters, no bottom-level filters,
// Monkey's budget and the traffic-aware cap in bloomkv, and Pebble with its
// own bloom and with pebbleadapter.SetLevelFilters, on all-absent, 90%
// present and Zipfian lookups: a table per mix, with --plot a panel per
// mix, with --markdown the page docs/filter-memory.md is.
//
// bench --writers 1,4,16 runs the write modes' fills alone, from each of
// these counts of writers at once (writer w writes the keys i ≡ w mod the
// count): per count and mode the time per Set, its ratio to Pebble's at
// the same count (with --pebble), and the mode's throughput over its own
// with one writer. Memtables of --memtable that hold a whole fill leave
// the commit path alone measured.
//
// bench --growth --filter-cap-bits B grows one store instead, from
// --growth-from keys to --keys by doublings, under a filter cap
// (FilterBudget{Bytes}) of B bits per key of --keys
// (internal/bench.CapGrowth): the filter bytes held are sampled every
// 10,000 writes and after every flush and compaction, and absent lookups
// measure the wasted reads after each step. A sample above the cap makes
// the command fail, after its report. docs/filter-cap-growth.md is its
// page.
//
// # crash
//
// crash checks the store's promises after a crash of the process on the
// machine's own disk and file system (internal/crashtest), for --duration
// (1m) or until --kills children were killed. In rounds, each a new
// store: a child process (this program again) writes from several
// goroutines (Set, Delete, DeleteRange, batches, big values, Flush; each
// round picks its count of writers from --writers, its share of Sync
// writes from --sync and its memtable size from --memtable) and prints
// each write once it is acknowledged; it is killed with SIGKILL at a
// random moment within --kill-within (2s): in Open, while it checks the
// store, while it writes, in Close or after it. The next child reopens
// the store, checks it and writes on, one to four times a round; last
// the parent checks the store, writes, closes it and checks it again
// after an Open. The store must hold every acknowledged write (with
// --background-wal, kv.Options.BackgroundWALWrites: a prefix of the
// acknowledged history, missing no Sync write and at most 256 KiB of
// the others), batches whole, and no value that was never written.
//
// It prints a line per round (its seed, writers, Sync share, memtable,
// where the kills landed, the acknowledged writes checked and, with
// --background-wal, the most one kill lost) and a summary. A failed round
// keeps its store, prints the error and the command that replays the
// round (--seed), and makes the exit status 1. The stores go in a new
// directory under --dir (default: the system's temporary directory),
// removed afterwards unless a round failed or --keep. --markdown FILE
// writes the results as a page, as docs/crash.md is.
//
// # db
//
// db works on a store on disk: get, set (synced), delete (synced),
// delete-range (synced: every key k with START <= k < END, as one range
// tombstone; START >= END deletes nothing), scan a key range, metrics,
// the per-level table of tables, bytes, keys, filter bytes and lookup
// counters, checkpoint (a consistent copy in the new directory DEST,
// DB.Checkpoint), ingest (tables written by sstable.Writer, DB.Ingest)
// and disk-usage (DB.EstimateDiskUsage over [--start, --end], both
// inclusive). set and ingest create the store when --dir holds none; the
// other commands fail on such a directory and create nothing, and get,
// scan, metrics, checkpoint and disk-usage open the store read-only,
// changing none of its files. With --verbose,
// every db command logs the store's background events on stderr, one
// line each ("bloomkv: event: ..."): WALs and tables created and deleted,
// flushes and compactions begun and ended, write stalls, background
// errors (kv.MakeLoggingEventListener).
//
// The metrics table counts, per level, the filters' verdicts: negatives,
// true positives, false positives and prefix matches (under a Split, a
// "maybe" for a block that holds the key's prefix but not the key: the
// filter was right, so it is no false positive), and the tables read
// without their filter (filter skipped: another policy or Split). Its FPR
// is false positives / (false positives + negatives), the filter's own
// rate, comparable with the policy's target.
//
// Every db and sstable command takes --split NAME, a built-in Split
// (first-slash: the key up to its first '/'; user: "user/<id>/" of
// "user/<id>/<field>", bench --prefix's), to read tables whose filters
// hold prefixes under it with those filters. Without it, or with another,
// such tables are read without their filters, correctly, and the command
// warns on stderr, naming the --split that reads them when one is built
// in. A store written under an application's own Split has to be read
// with its filters by that application.
//
// get and scan print one entry per line, "KEY<tab>VALUE", each quoted when
// it is not printable text. get prints the keys found in the order given
// and reports each key not found on its own line on stderr ("bloomkv: get
// KEY: not found"); the exit status is then 1.
//
// # sstable
//
// sstable dump prints a table's properties, its index and, per data block,
// the filter's size, bits, probes, bits set and the number of keys estimated
// from them, n ≈ −(m/k)·ln(1 − X/m) for m bits, k probes and X bits set.
// sstable check reads every block and verifies checksums and decoding,
// and that each block's filter holds its keys (their prefixes under
// --split); its line says when a table has no filters, or filters it
// does not read, so that none were verified.
//
// # filter
//
// filter builds one standalone filter with bloompolicy.New(--fpr) and
// measures its bits per key, probes, false-positive rate and build and query
// times, next to the same policy and Pebble's bloom at the nearest whole
// number of bits per key.
//
// # Errors
//
// A failure prints one line, "bloomkv: ...", on stderr and exits with
// status 1; a wrong command line exits with status 2.
package main
