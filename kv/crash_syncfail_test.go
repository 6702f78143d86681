package kv_test

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// syncFailer fails the n-th sync (of a file or a directory, counted from
// 0) and every one after it with errorfs.ErrInjected, as a disk that has
// gone bad would; a negative n fails none. A failed sync does not reach
// the filesystem below, so what it should have made durable is not.
type syncFailer struct {
	mu    sync.Mutex
	n     int
	syncs int
	fired string
}

func (s *syncFailer) MaybeError(op errorfs.Op, path string) error {
	if op != errorfs.OpFileSync {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncs++
	if s.n < 0 || s.syncs-1 < s.n {
		return nil
	}
	if s.fired == "" {
		s.fired = path
	}
	return errorfs.ErrInjected
}

// syncFailOpts are the options of the sync-failure sweep: memtables of
// a few writes, so that WALs rotate, are flushed and recycled.
func syncFailOpts(fs vfs.FS, bgWAL bool) *kv.Options {
	return &kv.Options{
		FS: fs, MemTableSize: 2 << 10, BackgroundWALWrites: bgWAL, DisableAutomaticCompactions: true,
	}
}

// syncFailRun writes Sync writes through a store over mem whose syncs
// fail from the n-th on, until one fails, then tries a few more, which
// must fail too. It returns the contents acknowledged and, if a write
// failed, the contents with that write too.
func syncFailRun(t *testing.T, mem *vfs.MemFS, inj *syncFailer, bgWAL bool, what string) (acked, withFailed map[string]string) {
	t.Helper()
	db, err := kv.Open("db", syncFailOpts(wrapFaults(mem, inj), bgWAL))
	if err != nil {
		return nil, nil // the Open's own syncs failed: nothing acknowledged
	}
	defer db.Close() // fails after a failed sync
	acked = map[string]string{}
	val := strings.Repeat("s", 60)
	for i := range 120 {
		k, v := fmt.Sprintf("k%04d", i%50), fmt.Sprintf("v%d.%s", i, val)
		if err := db.Set([]byte(k), []byte(v), kv.Sync); err != nil {
			withFailed = maps.Clone(acked)
			withFailed[k] = v
			for j := range 3 {
				if err := db.Set([]byte(fmt.Sprintf("after%d", j)), []byte("x"), kv.Sync); err == nil {
					t.Fatalf("%s: a Sync write succeeded after write %d failed (%v)", what, i, err)
				}
			}
			return acked, withFailed
		}
		acked[k] = v
	}
	return acked, nil
}

// TestCrash_SyncFailure fails every sync from the n-th on, for each n of
// a workload of Sync writes across WAL rotations, flushes and WAL
// recycling, in both WAL modes, then cuts the power: a write is
// acknowledged only once synced, so the reopened store holds every
// acknowledged write (and perhaps the one that failed), and a failed
// sync stops the writes.
func TestCrash_SyncFailure(t *testing.T) {
	for _, bgWAL := range []bool{false, true} {
		t.Run(fmt.Sprintf("BackgroundWALWrites=%t", bgWAL), func(t *testing.T) {
			inj := &syncFailer{n: -1}
			mem := vfs.NewStrictMem()
			acked, failed := syncFailRun(t, mem, inj, bgWAL, "no failure")
			if failed != nil || len(acked) == 0 {
				t.Fatalf("without failures: %d keys acknowledged, a write failed: %t", len(acked), failed != nil)
			}
			total := inj.syncs
			stopped := 0
			for n := range total {
				inj := &syncFailer{n: n}
				mem := vfs.NewStrictMem()
				what := fmt.Sprintf("syncs failing from %d of %d", n, total)
				acked, failed := syncFailRun(t, mem, inj, bgWAL, what)
				if failed != nil {
					stopped++
				}
				mem.ResetToSyncedState()
				got, err := readDirOpts(mem, "db", syncFailOpts(mem, bgWAL))
				if err != nil {
					if acked == nil {
						continue // the first Open failed; perhaps nothing is there
					}
					t.Fatalf("%s (first failed: %s): reopen: %v", what, inj.fired, err)
				}
				if diffMaps(got, acked) != "" && (failed == nil || diffMaps(got, failed) != "") {
					t.Fatalf("%s (first failed: %s): %s", what, inj.fired, diffMaps(got, acked))
				}
			}
			if stopped == 0 {
				t.Fatalf("%d sync failures, none stopped a write", total)
			}
			t.Logf("%d syncs; a failure stopped a write %d times", total, stopped)
		})
	}
}
