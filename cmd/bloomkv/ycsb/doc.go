// Package ycsb holds the YCSB comparison of bloomkv with Pebble v1.1.5,
// run through Pebble's own `pebble bench ycsb` driver so that both engines
// see the same workload code.
//
// The package itself has no code: it holds run.sh, which builds that
// driver from the module cache with bloomkv_db.go (the bloomkv binding,
// excluded from bloomkv's builds by the bloomkvycsb build tag) and runs
// YCSB A–F on both engines, and a test that runs run.sh on a small store
// so that the harness cannot rot. docs/ycsb-method.md has what is
// measured and the options used; --markdown writes the results page,
// docs/ycsb.md:
//
//	cmd/bloomkv/ycsb/run.sh --keys 1000000 --values 256 --threads "1 2" --rounds 3 --markdown docs/ycsb.md
//
// The binding serves the driver's reads as a bloomkv user would: the
// driver opens an iterator for every read and scan, and the binding keeps
// the iterators it closes in a pool, handing each out again moved to the
// store's current state by kv's Iterator.Refresh (and to the bounds asked
// for by SetBounds), so that a read sees every write made before it and a
// reused iterator allocates nothing. With --point-reads get, a read of a
// present key is a DB.GetAppend into the iterator's buffer instead. Its
// own tests and benchmarks (bloomkv_db_test.go, under the same build tag)
// run in the driver's module with run.sh --test-binding.
package ycsb
