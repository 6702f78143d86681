package pebbleadapter_test

import (
	"context"
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// ExampleWaitIdle settles a Pebble store before measuring it, as
// kv.DB.WaitIdle settles a bloomkv store.
func ExampleWaitIdle() {
	db, err := pebble.Open("db", &pebble.Options{FS: vfs.NewMem(), Logger: pebbleadapter.QuietLogger{}})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("k"), []byte("v"), pebble.NoSync); err != nil {
		log.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := pebbleadapter.WaitIdle(context.Background(), db); err != nil {
		log.Fatal(err)
	}
	fmt.Println(pebbleadapter.Idle(db.Metrics()))
	// Output: true
}
