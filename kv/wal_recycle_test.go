package kv_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// Crash tests of WAL recycling: a workload of small memtables switched
// over and over, so that most WALs are recycled files whose earlier
// records lie past the new ones, cut by a power loss or a process crash
// at every point.

// recycleRun writes recycleKey(i) = recycleValue(i) for i = 0.. with a
// crash armed at one filesystem operation.
type recycleRun struct {
	mem   *vfs.MemFS
	fs    *crashFS
	opts  *kv.Options
	acked int // writes acknowledged
	// durable is the writes acknowledged by the last Sync write.
	durable  int
	recycled int64 // WALs recycled, when the run was not cut
}

const recycleWrites = 400

func recycleKey(i int) string { return fmt.Sprintf("r%05d", i) }

// recycleValue makes a record of about 100 bytes, so a memtable holds a
// dozen writes.
func recycleValue(i int) string { return fmt.Sprintf("%d.%s", i, strings.Repeat("v", 90)) }

func newRecycleRun(background bool, crashAt int) *recycleRun {
	r := &recycleRun{mem: vfs.NewStrictMem()}
	r.fs = newCrashFS(r.mem)
	r.fs.arm(crashAt)
	r.opts = &kv.Options{
		FS:                  r.fs,
		MemTableSize:        kv.MinMemTableSize,
		BlockSize:           256,
		TargetFileSize:      4 << 10,
		BackgroundWALWrites: background,
	}
	return r
}

// run writes until the end or the crash, and returns the number of
// filesystem changes made. Every third write is Sync, and every 97th
// write is followed by a Close and an Open.
func (r *recycleRun) run(t *testing.T) int {
	db, err := kv.Open("db", r.opts)
	for i := 0; err == nil && i < recycleWrites; i++ {
		sync := kv.NoSync
		if i%3 == 2 {
			sync = kv.Sync
		}
		if err = db.Set([]byte(recycleKey(i)), []byte(recycleValue(i)), sync); err != nil {
			break
		}
		r.acked++
		if sync.Sync {
			r.durable = r.acked
		}
		if i%97 == 96 {
			r.recycled += db.Metrics().WAL.Recycled
			if err = db.Close(); err == nil {
				r.durable = r.acked
				db, err = kv.Open("db", r.opts)
			}
		}
	}
	if err == nil {
		r.recycled += db.Metrics().WAL.Recycled
		if err = db.Close(); err == nil {
			r.durable = r.acked
		}
	} else if db != nil {
		_ = db.Close() // fails, with the filesystem refusing changes
	}
	if err != nil && !r.fs.isCrashed() {
		t.Fatalf("write %d failed with the power on: %v", r.acked, err)
	}
	return r.fs.count()
}

// check reopens the store and checks it holds writes 0..n-1 for some n
// between min and the writes attempted, and nothing else.
func (r *recycleRun) check(t *testing.T, min int, what string) {
	t.Helper()
	r.opts.FS = r.mem
	db, err := kv.Open("db", r.opts)
	if err != nil {
		t.Fatalf("%s: Open: %v\n%s", what, err, r.fs.lastOps())
	}
	defer mustClose(t, db)
	got, err := readAll(db.NewIter)
	if err != nil {
		t.Fatalf("%s: reading: %v", what, err)
	}
	n := len(got)
	if n < min || n > r.acked+1 {
		t.Fatalf("%s: %d writes recovered, want %d..%d\n%s", what, n, min, r.acked+1, r.fs.lastOps())
	}
	for i := range n {
		if v, ok := got[recycleKey(i)]; !ok || v != recycleValue(i) {
			t.Fatalf("%s: %d writes recovered but write %d is %q (present %v), not a prefix", what, n, i, v, ok)
		}
	}
	if _, err := db.Get([]byte(recycleKey(n))); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("%s: Get of the write after the prefix: %v", what, err)
	}
}

// TestCrash_RecycledWALs cuts the power, or kills the process, at points
// of the recycling workload. A power loss keeps every write acknowledged
// by a Sync write, Close included; a process crash keeps every
// acknowledged write in the default mode, and those acknowledged by a
// Sync write with BackgroundWALWrites. What recovers is always a prefix
// of the writes, never a record of a recycled file's earlier life.
func TestCrash_RecycledWALs(t *testing.T) {
	points := 300
	if testing.Short() {
		points = 30
	}
	for _, mode := range walModes {
		for _, powerLoss := range []bool{true, false} {
			t.Run(fmt.Sprintf("wal=%s/powerloss=%v", mode.name, powerLoss), func(t *testing.T) {
				dry := newRecycleRun(mode.background, -1)
				total := dry.run(t)
				if dry.recycled < 10 {
					t.Fatalf("the workload recycled %d WALs, want 10 at least", dry.recycled)
				}
				dry.check(t, recycleWrites, "without a crash")
				for _, at := range crashPoints(newRand(uint64(total)), total, points) {
					r := newRecycleRun(mode.background, at)
					r.run(t)
					min := r.durable
					if powerLoss {
						r.mem.ResetToSyncedState()
					} else if !mode.background {
						min = r.acked
					}
					r.check(t, min, fmt.Sprintf("crash at operation %d of %d (%s)", at, total, r.fs.firstRefused()))
				}
			})
		}
	}
}
