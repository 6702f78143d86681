//go:build !cgo

package bench

// pebbleManualOnHeap says whether Pebble v1.1.5 keeps its block cache and
// memtables on the Go heap: it does without cgo (its internal/manual
// package then allocates with make).
const pebbleManualOnHeap = true
