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
package ycsb
