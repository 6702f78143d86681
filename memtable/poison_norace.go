//go:build !race

package memtable

// poison does nothing outside race builds (see poison_race.go).
func poison([]byte) {}
