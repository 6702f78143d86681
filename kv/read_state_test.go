package kv

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestReadState_ReleasedIsNotRevived checks that a read state whose last
// reference is gone takes no new one: its memtables and Version are
// released already.
func TestReadState_ReleasedIsNotRevived(t *testing.T) {
	var rs readState
	rs.refs.Store(1)
	if !rs.tryRef() || rs.refs.Load() != 2 {
		t.Fatalf("tryRef of a held state: refs %d, want 2", rs.refs.Load())
	}
	rs.refs.Store(0)
	if rs.tryRef() || rs.refs.Load() != 0 {
		t.Fatalf("tryRef revived a released state: refs %d", rs.refs.Load())
	}
}

// TestReadState_LoadsWhileReplaced loads read states from several
// goroutines while writes and flushes replace the current one: every
// state loaded is still held, with its memtables, until its reader lets
// go, and every reader sees each write acknowledged before its load.
func TestReadState_LoadsWhileReplaced(t *testing.T) {
	d, _ := openMem(t, nil)
	defer d.Close()
	const readers, flushes = 4, 40
	var written atomic.Int64 // keys 0..written-1 are acknowledged
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for loads := 0; !stop.Load() || loads == 0; loads++ {
				n := written.Load()
				rs := d.loadReadState()
				if r := rs.refs.Load(); r < 1 {
					errs <- fmt.Errorf("loaded a released read state (refs %d)", r)
					return
				}
				if r := rs.mem.refs.Load(); r < 1 {
					errs <- fmt.Errorf("loaded a read state whose memtable is released (refs %d)", r)
					return
				}
				rs.unref()
				if n > 0 {
					key := fmt.Appendf(nil, "k%06d", n-1)
					if _, err := d.Get(key); err != nil {
						errs <- fmt.Errorf("key %s, acknowledged before the read: %v", key, err)
						return
					}
				}
			}
		}()
	}
	for i := range flushes {
		for j := range 50 {
			n := int64(i*50 + j)
			if err := d.Set(fmt.Appendf(nil, "k%06d", n), []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
			written.Store(n + 1)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
