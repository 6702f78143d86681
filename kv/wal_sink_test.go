package kv_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// slowSyncFS makes each SyncData of its WAL files take delay, as a disk's
// would: long against the time a writer takes to come back for its next
// write.
type slowSyncFS struct {
	vfs.FS
	delay time.Duration
}

func (fs slowSyncFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return slowSyncFile{File: f, delay: fs.delay}, nil
}

type slowSyncFile struct {
	vfs.File
	delay time.Duration
}

func (f slowSyncFile) SyncData() error {
	time.Sleep(f.delay)
	return f.File.SyncData()
}

// TestWALSink_SyncWritersShareEachSync checks that concurrent Sync
// writers which take a while to come back for their next write (here a
// millisecond, against syncs of 40) still share each sync all together:
// the sync waits for the writers the last one released (see
// walSink.gatherLocked). Without that, the writers that arrive while a
// sync runs are synced at once when it ends, without those it released,
// and the two groups take turns: about half the writers per sync.
func TestWALSink_SyncWritersShareEachSync(t *testing.T) {
	const (
		writers = 4
		rounds  = 8
		think   = time.Millisecond
	)
	db, err := kv.Open("db", &kv.Options{FS: slowSyncFS{FS: vfs.NewMem(), delay: 40 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := db.Metrics().WAL.Syncs
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				if err := db.Set(fmt.Appendf(nil, "w%d-%d", w, i), []byte("v"), kv.Sync); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(think)
			}
		}()
	}
	wg.Wait()
	syncs := db.Metrics().WAL.Syncs - before
	// All together, each round takes one sync; the first two may not
	// (no sync's duration is known before the first ends).
	if syncs > rounds+2 {
		t.Fatalf("%d Sync writes by %d writers took %d syncs (%.1f writes each); want at most %d",
			writers*rounds, writers, syncs, float64(writers*rounds)/float64(syncs), rounds+2)
	}
	t.Logf("%d Sync writes by %d writers, %d syncs", writers*rounds, writers, syncs)
}
