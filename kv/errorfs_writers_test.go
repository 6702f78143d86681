package kv_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestErrorFS_ConcurrentWriters fails one file operation, chosen at
// random, while four writers commit batches at once, a third of them
// Sync, in both WAL modes: no writer and no Close hangs, a write after
// the failure is refused, and after a reopen each writer's batch is there
// whole, and, in the default mode, no older than its last acknowledged
// one.
func TestErrorFS_ConcurrentWriters(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 20
	}
	fired := 0
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		for _, bg := range []bool{false, true} {
			if concurrentFaultRun(t, seed, bg) {
				fired++
			}
		}
	})
	if fired < seeds {
		t.Fatalf("the fault fired in %d runs of %d", fired, 2*seeds)
	}
}

// concurrentFaultRun is one run of TestErrorFS_ConcurrentWriters; it
// reports whether the fault fired.
func concurrentFaultRun(t *testing.T, seed uint64, bg bool) bool {
	const writers, keys, batches = 4, 3, 150
	mem := vfs.NewMem()
	inj := &faultInjector{}
	opts := faultOpts(wrapFaults(mem, inj))
	opts.BackgroundWALWrites = bg
	d, err := kv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	rng := newRand(seed)
	inj.arm(rng.IntN(3000))
	var acked [writers]atomic.Int64
	var stopped [writers]error
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := newRand(seed + uint64(w) + 1)
			b := d.NewBatch()
			for i := 1; i <= batches; i++ {
				b.Reset()
				val := binary.BigEndian.AppendUint64(nil, uint64(i))
				val = append(val, make([]byte, rng.IntN(200))...)
				for k := range keys {
					b.Set(fmt.Appendf(nil, "w%d/k%d", w, k), val)
				}
				if err := d.Apply(b, &kv.WriteOptions{Sync: rng.IntN(3) == 0}); err != nil {
					stopped[w] = err
					return
				}
				acked[w].Store(int64(i))
			}
		}()
	}
	within := func(what string, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { fn(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("background WAL %t: %s hung (fault: %s)", bg, what, inj.firedOp())
		}
	}
	within("the writers", wg.Wait)
	if errors.Join(stopped[:]...) != nil {
		if err := d.Set([]byte("late"), []byte("x"), kv.NoSync); err == nil {
			t.Fatalf("background WAL %t: a write after the failure (%v) succeeded", bg, stopped)
		}
	}
	within("Close", func() { d.Close() })
	inj.disarm()
	fault := inj.firedOp()

	d, err = kv.Open("db", faultOpts(mem))
	if err != nil {
		t.Fatalf("background WAL %t: reopen after the fault %s: %v", bg, fault, err)
	}
	defer d.Close()
	for w := range writers {
		at := int64(-1)
		for k := range keys {
			v, err := d.Get(fmt.Appendf(nil, "w%d/k%d", w, k))
			var i int64
			switch {
			case errors.Is(err, kv.ErrNotFound):
			case err != nil:
				t.Fatal(err)
			default:
				i = int64(binary.BigEndian.Uint64(v))
			}
			if at >= 0 && at != i {
				t.Fatalf("background WAL %t, fault %s: writer %d's batches %d and %d are each partly there", bg, fault, w, at, i)
			}
			at = i
		}
		if at < acked[w].Load() && !bg {
			t.Fatalf("fault %s: writer %d's batch %d is there, %d was acknowledged (the writer stopped on %v)",
				fault, w, at, acked[w].Load(), stopped[w])
		}
	}
	return fault != ""
}

// TestCrash_ConcurrentSync crashes the machine (vfs.NewStrictMem) while
// four writers set their keys, a third of the writes Sync, and Flush
// runs in a loop, in both WAL modes: after a reopen each writer's key
// holds its last Sync-acknowledged value before the crash, or a later one.
func TestCrash_ConcurrentSync(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 6
	}
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		for _, bg := range []bool{false, true} {
			concurrentSyncCrash(t, seed, bg)
		}
	})
}

// concurrentSyncCrash is one run of TestCrash_ConcurrentSync.
func concurrentSyncCrash(t *testing.T, seed uint64, bg bool) {
	const writers = 4
	fs := vfs.NewStrictMem()
	d, err := kv.Open("db", &kv.Options{FS: fs, MemTableSize: 16 << 10, BackgroundWALWrites: bg})
	if err != nil {
		t.Fatal(err)
	}
	var syncAcked [writers]atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := newRand(seed + uint64(w) + 1)
			for i := int64(1); !stop.Load(); i++ {
				sync := rng.IntN(3) == 0
				val := binary.BigEndian.AppendUint64(nil, uint64(i))
				val = append(val, make([]byte, rng.IntN(300))...)
				if err := d.Set(fmt.Appendf(nil, "w%d", w), val, &kv.WriteOptions{Sync: sync}); err != nil {
					return
				}
				if sync {
					syncAcked[w].Store(i)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			d.Flush()
			time.Sleep(time.Millisecond)
		}
	}()
	time.Sleep(time.Duration(5+seed%10) * time.Millisecond)
	fs.SetIgnoreSyncs(true) // the crash: nothing synced from here on survives
	var want [writers]int64
	for w := range writers {
		want[w] = syncAcked[w].Load()
	}
	stop.Store(true)
	wg.Wait()
	d.Close()
	fs.ResetToSyncedState()
	fs.SetIgnoreSyncs(false)

	d, err = kv.Open("db", &kv.Options{FS: fs, MemTableSize: 16 << 10})
	if err != nil {
		t.Fatalf("background WAL %t: reopen after the crash: %v", bg, err)
	}
	defer d.Close()
	synced := false
	for w := range writers {
		synced = synced || want[w] > 0
		v, err := d.Get(fmt.Appendf(nil, "w%d", w))
		var got int64
		switch {
		case errors.Is(err, kv.ErrNotFound):
		case err != nil:
			t.Fatal(err)
		default:
			got = int64(binary.BigEndian.Uint64(v))
		}
		if got < want[w] {
			t.Fatalf("background WAL %t: writer %d's key holds write %d after the crash; write %d was acknowledged Sync before it",
				bg, w, got, want[w])
		}
	}
	if !synced {
		t.Fatalf("background WAL %t: no Sync write was acknowledged before the crash", bg)
	}
}
