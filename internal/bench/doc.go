// Package bench is bloomkv's one benchmark harness: the engines compared
// (bloomkv and Pebble v1.1.5 behind one [Engine] interface), the keys and
// values every workload writes ([KeyGen]), the workloads themselves (fills
// in batches, checked lookups of absent and present keys, prefix seeks of
// the user workload, scans), the shapes of the LSM they run on ([Loader]
// settles a store as one taking writes holds it) and the idle rule that
// decides when a store has settled ([Engine.WaitIdle]).
//
// cmd/bloomkv's bench command and kv's comparison benchmarks
// (kv/bench*_test.go) drive stores through this package, so a figure
// of one front end and a figure of another come from the same code. The
// YCSB binding (cmd/bloomkv/ycsb) builds inside a copy of Pebble's own
// command, another module, which cannot import an internal package: it
// waits for bloomkv through the public [kv.DB.WaitIdle], the rule
// [KV.WaitIdle] uses too.
//
// Configuring the two engines alike is [Sizes]: [Sizes.KVOptions] and
// [Sizes.PebbleOptions] give both the same memtable, block, table, level
// and cache sizes and the same L0 trigger, and say where the engines
// cannot be made to agree.
package bench
