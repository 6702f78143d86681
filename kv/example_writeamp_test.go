package kv_test

import (
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// Each level's BytesFlushed and BytesCompacted say which work wrote its
// tables, so a store's write amplification can be traced to the levels
// that cause it: here three flushes wrote L0, and the compaction of L0
// rewrote their keys into the bottom level.
func ExampleLevelMetrics_bytesCompacted() {
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for i := range 3 {
		for j := range 100 {
			db.Set(fmt.Appendf(nil, "key%03d", j), fmt.Appendf(nil, "version %d", i), kv.NoSync)
		}
		db.Flush()
	}
	if err := db.Compact(nil, nil); err != nil {
		log.Fatal(err)
	}
	m := db.Metrics()
	for i, l := range m.Levels {
		if l.BytesWritten > 0 {
			fmt.Printf("L%d: flushed %t, compacted %t\n", i, l.BytesFlushed > 0, l.BytesCompacted > 0)
		}
	}
	total := m.WAL.BytesIn + m.Flush.BytesWritten + m.Compact.BytesWritten
	fmt.Println("write-amp adds up:", m.WriteAmp == float64(total)/float64(m.WAL.BytesIn))
	// Output:
	// L0: flushed true, compacted false
	// L6: flushed false, compacted true
	// write-amp adds up: true
}
