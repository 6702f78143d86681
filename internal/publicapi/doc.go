// Package publicapi holds no code: its tests check that bloomkv's public
// packages (bloompolicy, bloompolicy/pebbleadapter, sstable, memtable,
// compaction and kv) can be used from another module. Their exported
// declarations may name no type of an internal package except through an
// alias of their own, their Examples import no internal package, and
// testdata/extmod, a program that writes, reads, iterates and compacts
// tables through them, builds and runs in a module of its own.
package publicapi
