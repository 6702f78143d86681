package pebbleadapter_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// ExampleToPebble plugs a bloomkv Bloom filter into Pebble: the policy goes
// into every level's options (Pebble then also registers it by name in
// Options.Filters, so a reopened DB finds the filters again), and Pebble's
// metrics show it skipping tables.
func ExampleToPebble() {
	ours, err := bloompolicy.New(0.01)
	if err != nil {
		log.Fatal(err)
	}
	policy := pebbleadapter.ToPebble(ours)
	opts := &pebble.Options{FS: vfs.NewMem(), Levels: make([]pebble.LevelOptions, 7)}
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = policy
	}
	db, err := pebble.Open("demo", opts)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	for i := 0; i < 1000; i++ {
		if err := db.Set(fmt.Appendf(nil, "key%04d", i), []byte("v"), pebble.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil { // one L0 table, with our filter
		log.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, _, err := db.Get(fmt.Appendf(nil, "key%04d-absent", i)); !errors.Is(err, pebble.ErrNotFound) {
			log.Fatal(err)
		}
	}
	f := db.Metrics().Filter
	fmt.Println("filter queries:", f.Hits+f.Misses)
	fmt.Println("at least 95 data-block reads saved:", f.Hits >= 95)
	// Output:
	// filter queries: 100
	// at least 95 data-block reads saved: true
}
