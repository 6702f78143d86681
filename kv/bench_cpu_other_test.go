//go:build !linux

package kv_test

// threadCPU reports that this system gives no per-thread CPU time, so
// the benchmarks report wall time only.
func threadCPU() (ns int64, ok bool) { return 0, false }
