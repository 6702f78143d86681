//go:build cgo

package bench

// pebbleManualOnHeap says whether Pebble v1.1.5 keeps its block cache and
// memtables on the Go heap: not with cgo, where it allocates them with
// C's malloc (its internal/manual package).
const pebbleManualOnHeap = false
