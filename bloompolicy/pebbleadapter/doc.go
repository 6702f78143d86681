// Package pebbleadapter connects bloomkv filter policies with Pebble
// (github.com/cockroachdb/pebble v1.1.5) in both directions, so the two
// engines' filters can be compared on equal terms.
//
// # Directions
//
// [ToPebble] turns a [bloompolicy.FilterPolicy] (such as the one
// bloompolicy.New builds) into a pebble.FilterPolicy: Pebble tables then
// carry bloomkv filters, and Pebble's own accounting (Metrics().Filter)
// measures them. Pebble v1 filters are per table (pebble.TableFilter): the
// policy builds one large filter of all the keys of a table, where bloomkv
// builds one per data block.
//
// [FromPebble] turns a pebble.FilterPolicy, typically Pebble's own
// bloom.FilterPolicy(bitsPerKey), into a bloompolicy.FilterPolicy: bloomkv
// tables then carry Pebble's filters, one per data block. Pebble's Bloom
// decoder trusts its input (it divides by a line count read from the
// filter's tail), so the adapter checks that count and the filter's length
// before every query and answers true for bytes that do not decode, as the
// bloompolicy contract requires. The format it checks, the RocksDB
// full-filter format, is:
//
//	+---------------------------------+----------+---------------------+
//	| bit array                       | probes   | lines               |
//	| lines × L bytes (L = 64 in      | 1 byte   | 4 bytes, uint32,    |
//	| Pebble: one CPU cache line)     |          | little-endian       |
//	+---------------------------------+----------+---------------------+
//
// Each key sets probes bits, all inside the one line its 32-bit hash picks.
// The adapter accepts 1 <= lines <= len(bit array), a bit array that is a
// whole number of lines and under 512 MiB.
//
// Round trips are exact: ToPebble(FromPebble(pp)) is pp and
// FromPebble(ToPebble(p)) is p.
//
// # What Pebble does with a filter policy
//
// These facts are checked against the Pebble v1.1.5 source and, where
// marked, pinned by this package's tests.
//
// Writing. Options.Levels[i].FilterPolicy chooses the policy for the tables
// written to level i; for levels past the end of Levels, Options.Level(i)
// copies the last entry (doubling its TargetFileSize), so setting all seven
// entries is the clear way. The table
// writer adds key[:Comparer.Split(key)] for every point key it writes (every
// version, tombstones included); with a nil Split, as in
// pebble.DefaultComparer, it adds the whole user key. The filter is stored
// in the table's meta block "fullfilter.<Name()>" and the name is recorded
// in the table's properties.
//
// Reading. Pebble finds a filter by name: when it opens a table it looks for
// "fullfilter.<name>" for each policy in Options.Filters, which
// Options.EnsureDefaults (called by pebble.Open) fills from
// Options.Levels[i].FilterPolicy. A table whose policy is not registered is
// read without its filter: still correct, only slower, and not counted in
// the filter metrics. So a reopened DB needs the policy registered again,
// through Levels or, for a policy no longer written but still present in
// old tables, through Options.Filters (tested).
//
// Lookups. DB.Get and Iterator.SeekPrefixGE query the filter with
// key[:Comparer.Split(key)] (the whole key when Split is nil; SeekPrefixGE
// requires a non-nil Split). Other seeks never consult filters. A Get
// consults, in each L0 sublevel and in each level L1–L5, the one table
// whose largest key is at or after the key, without first checking that
// table's smallest key (tested).
//
// The bottom level. Pebble v1.1.5 reads no L6 filter for DB.Get: the table
// cache uses a table's filter only if its level is not 6 or the iterator's
// IterOptions.UseL6Filters is set, and DB.Get never sets it. There is no
// Options, LevelOptions or Experimental setting for it; UseL6Filters exists
// only in IterOptions and only helps Iterator.SeekPrefixGE (tested).
// Levels[6].FilterPolicy still decides whether L6 tables carry a filter (for
// such iterators). A store whose data sits in L6 therefore gains nothing
// from filters on DB.Get.
//
// Budgets per level. [SetLevelFilters] fills Options.Levels[i].FilterPolicy
// with Bloom policies that divide a filter budget among the levels of
// Pebble's target shape by Monkey's rule (bloompolicy.Allocate): more bits
// per key for L0 and the upper levels, fewer for L6 — or, with
// LevelBudget.NoL6Filter, none for L6, whose filters DB.Get never reads.
//
// Accounting. DB.Metrics().Filter counts each filter query: Hits when the
// filter said absent (a data block read avoided) and Misses when it said
// maybe. When every looked-up key is absent, the observed false-positive
// rate is Misses / (Hits + Misses).
package pebbleadapter
