//go:build !race

package sstable

// raceEnabled is set when the race detector is on: it adds allocations of
// its own and makes sync.Pool drop items at random.
const raceEnabled = false
