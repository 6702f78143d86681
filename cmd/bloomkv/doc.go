// Command bloomkv benchmarks bloomkv's per-block Bloom filters and inspects
// stores, tables and filters.
//
// Usage:
//
//	bloomkv bench [--keys N] [--value-size B] [--lookups N] [--fpr P] [--cache SIZE]
//	              [--dir D] [--keep] [--pebble] [--plot FILE.svg|FILE.png] [--seed S] [--json]
//	bloomkv db get KEY... --dir D [--metrics]
//	bloomkv db set KEY VALUE --dir D
//	bloomkv db delete KEY --dir D
//	bloomkv db delete-range START END --dir D
//	bloomkv db scan --dir D [--start K] [--end K] [--limit N]
//	bloomkv db metrics --dir D
//	bloomkv sstable dump FILE
//	bloomkv sstable check FILE
//	bloomkv filter [--fpr P] [--keys N] [--queries N] [--seed S]
//
// Every command takes --json to print machine-readable output on stdout.
//
// # bench
//
// bench loads the same data into several stores and measures point lookups
// in each. By default: 1,000,000 keys of 16 bytes (hex digits) with 100-byte
// values, written in random order in NoSync batches of 1000; then Flush,
// Compact over the whole key range, and a wait for the background
// compactions that follow (the LSM the lookups meet is printed); then
// 1,000,000 lookups of absent keys and 1,000,000 of present keys, each in
// random order, with an 8 MiB block cache (smaller than the data, so block
// reads are real). The stores are:
//
//   - bloomkv without filters (kv.Options.DisableFilters);
//   - bloomkv with bloompolicy.New(--fpr);
//   - bloomkv with Pebble's bloom.FilterPolicy at the nearest whole number of
//     the bits per key bloompolicy chose, through pebbleadapter.FromPebble;
//   - with --pebble, Pebble v1.1.5 itself with the same two filters
//     (pebbleadapter.ToPebble for ours), on every level including L6:
//     Pebble's DB.Get never reads L6 filters, so its lookups go through an
//     iterator opened with UseL6Filters, by SeekPrefixGE. Pebble charges its
//     memtables to the block cache, so its cache gets room for them on top.
//
// For each it prints ns per lookup (absent, present), tables considered,
// data-block reads and reads saved per lookup, the observed false-positive
// rate against the target, and the filters' bits per key and bytes. The
// counters come from kv's DB.Metrics (Pebble's Metrics for Pebble rows),
// differenced around each phase. The stores live in a new temporary
// directory, or in --dir, and are removed afterwards unless --keep.
//
// --plot FILE draws two panels: the false-positive rate against bits per key
// of standalone filters (ours, Pebble's, the textbook e^(-ln²2·b) and the
// limit 2^(-b)) with the rates observed in the stores, and the reads saved
// per lookup of each store.
//
// # db
//
// db works on a store on disk: get, set (synced), delete (synced),
// delete-range (synced: every key k with START <= k < END, as one range
// tombstone; START >= END deletes nothing), scan a key range, and metrics, the per-level table of tables, bytes, keys,
// filter bytes and lookup counters.
//
// # sstable
//
// sstable dump prints a table's properties, its index and, per data block,
// the filter's size, bits, probes, bits set and the number of keys estimated
// from them, n ≈ −(m/k)·ln(1 − X/m) for m bits, k probes and X bits set.
// sstable check reads every block and verifies checksums and decoding.
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
