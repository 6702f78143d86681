//go:build !linux

package kv_test

// processCPU reports that this system's process CPU time is not read
// here, so BenchmarkBulkLoad reports wall time only.
func processCPU() (ns int64, ok bool) { return 0, false }
