package pebbleadapter_test

import (
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// ExampleSetLevelFilters sizes a Pebble store's filters per level for 100
// million entries of about 100 bytes: 10 bits per key on average, the
// upper levels getting more and L6 fewer. Read by DB.Get alone, the store
// would gain nothing from L6's filters (Pebble v1.1.5 skips them there):
// NoL6Filter leaves them out and applies the budget to L0–L5's keys alone,
// about a fifth of the memory (Pebble's targets for 10 GB put a fifth of
// the data above L6: a 64 MiB base level at L3 and two levels growing from
// it to L6's 9 GB).
func ExampleSetLevelFilters() {
	for _, noL6 := range []bool{false, true} {
		opts := &pebble.Options{FS: vfs.NewMem()}
		err := pebbleadapter.SetLevelFilters(opts, pebbleadapter.LevelBudget{
			Budget:      bloompolicy.Budget{BitsPerKey: 10},
			Keys:        100_000_000,
			BytesPerKey: 100,
			NoL6Filter:  noL6,
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("NoL6Filter=%v:", noL6)
		for i, l := range opts.Levels {
			bits := 0.0
			if b, ok := pebbleadapter.FromPebble(l.FilterPolicy).(*bloompolicy.Bloom); ok {
				bits = b.BitsPerKey()
			}
			fmt.Printf(" L%d %.2f", i, bits)
		}
		fmt.Println()
		db, err := pebble.Open("demo", opts)
		if err != nil {
			log.Fatal(err)
		}
		db.Close()
	}
	// Output:
	// NoL6Filter=false: L0 30.62 L1 21.81 L2 21.81 L3 21.81 L4 16.88 L5 12.62 L6 9.06
	// NoL6Filter=true: L0 25.50 L1 17.56 L2 17.56 L3 17.56 L4 13.06 L5 9.19 L6 0.00
}
