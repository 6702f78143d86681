package kv_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestPortPebbleDBSnapshot ports Pebble's TestSnapshot
// (testdata/snapshot) and the ordering TestSnapshotListToSlice checks in
// Pebble's snapshot list: snapshots taken between writes each see the
// state of their moment, in any order of closing, through Get and
// iterators, across flushes and compactions that must keep the versions
// they need.
func TestPortPebbleDBSnapshot(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	var snaps []*kv.Snapshot
	var wants []string
	for i := 1; i <= 4; i++ {
		pbMust(t, db.Set([]byte("a"), []byte(fmt.Sprint(i)), kv.NoSync))
		if i%2 == 0 {
			pbMust(t, db.Delete([]byte("b"), kv.NoSync))
		} else {
			pbMust(t, db.Set([]byte("b"), []byte(fmt.Sprint(i)), kv.NoSync))
		}
		snaps = append(snaps, db.NewSnapshot())
		if i%2 == 0 {
			wants = append(wants, fmt.Sprintf("a=%d", i))
		} else {
			wants = append(wants, fmt.Sprintf("a=%d b=%d", i, i))
		}
		if i == 2 {
			pbMust(t, db.Flush())
		}
	}
	pbMust(t, db.DeleteRange([]byte("a"), []byte("c"), kv.NoSync))
	check := func(what string, open []int) {
		for _, j := range open {
			pbWantScan(t, fmt.Sprintf("%s: snapshot %d", what, j), snaps[j], wants[j])
			gets := wants[j] + " c=-"
			if !strings.Contains(gets, "b=") {
				gets += " b=-"
			}
			pbWantGets(t, fmt.Sprintf("%s: snapshot %d", what, j), snaps[j], gets)
		}
		pbWantScan(t, what+": db", db, "")
	}
	check("memtable", []int{0, 1, 2, 3})
	pbMust(t, db.Compact([]byte("a"), []byte("c")))
	check("compacted", []int{0, 1, 2, 3})
	pbMust(t, snaps[1].Close())
	pbMust(t, snaps[3].Close())
	pbMust(t, db.Compact([]byte("a"), []byte("c")))
	check("after closing 1 and 3", []int{0, 2})
	pbMust(t, snaps[0].Close())
	pbMust(t, snaps[2].Close())
	if err := snaps[2].Close(); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("second Snapshot.Close = %v, want ErrClosed", err)
	}
	if _, err := snaps[2].Get([]byte("a")); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("closed Snapshot.Get = %v, want ErrClosed", err)
	}
}

// TestPortPebbleDBNewSnapshotRace ports Pebble's TestNewSnapshotRace: a
// snapshot taken while a writer bumps a counter sees one value for the
// counter, read twice, and never a value below one an earlier snapshot saw.
func TestPortPebbleDBNewSnapshotRace(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	n := 500
	if testing.Short() {
		n = 100
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			b := db.NewBatch()
			pbMust(t, b.Set([]byte("x"), []byte(fmt.Sprintf("%06d", i))))
			pbMust(t, b.Set([]byte("y"), []byte(fmt.Sprintf("%06d", i))))
			pbMust(t, db.Apply(b, kv.NoSync))
		}
	}()
	last := ""
	for i := 0; i < n; i++ {
		s := db.NewSnapshot()
		x, y := pbGet(t, s, "x"), pbGet(t, s, "y")
		if x != y || x < last && x != "-" || x == "-" && last != "" {
			t.Fatalf("snapshot %d: x=%s y=%s after a snapshot saw %s", i, x, y, last)
		}
		if x != "-" {
			last = x
		}
		pbMust(t, s.Close())
	}
	wg.Wait()
}

// ppEvents records an EventListener's calls as lines.
type ppEvents struct {
	mu    sync.Mutex
	lines []string
}

func (e *ppEvents) add(format string, args ...any) {
	e.mu.Lock()
	e.lines = append(e.lines, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

// listener returns a listener that records flushes, compactions and
// table creations and deletions.
func (e *ppEvents) listener() *kv.EventListener {
	return &kv.EventListener{
		FlushBegin: func(i kv.FlushInfo) { e.add("flush-begin %d", i.JobID) },
		FlushEnd: func(i kv.FlushInfo) {
			e.add("flush-end %d done=%v err=%v out=%d", i.JobID, i.Done, i.Err, len(i.Output))
		},
		CompactionBegin: func(i kv.CompactionInfo) {
			e.add("compaction-begin %d %s L%d->L%d in=%d", i.JobID, i.Reason, i.StartLevel, i.OutputLevel, len(i.Input))
		},
		CompactionEnd: func(i kv.CompactionInfo) {
			e.add("compaction-end %d done=%v err=%v out=%d", i.JobID, i.Done, i.Err, len(i.Output))
		},
		TableCreated: func(i kv.TableCreateInfo) { e.add("table-created %d %s %06d", i.JobID, i.Reason, i.FileNum) },
		TableDeleted: func(i kv.FileDeleteInfo) { e.add("table-deleted %06d err=%v", i.FileNum, i.Err) },
	}
}

// TestPortPebbleDBEventListener ports Pebble's TestEventListener
// (testdata/event_listener): a flush and a manual compaction each report
// begin, the tables they create, then end, under one job id, in that
// order; the compacted input tables are reported deleted after.
func TestPortPebbleDBEventListener(t *testing.T) {
	var ev ppEvents
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{EventListener: ev.listener(), DisableAutomaticCompactions: true})
	pbMust(t, db.Set([]byte("a"), []byte("1"), kv.NoSync))
	pbMust(t, db.Flush())
	pbMust(t, db.Set([]byte("b"), []byte("2"), kv.NoSync))
	pbMust(t, db.Flush())
	pbMust(t, db.Compact([]byte("a"), []byte("b")))
	ldbClose(t, db)
	got := strings.Join(ev.lines, "\n")
	var flushes, compactions int
	var created []string
	job, phase := -1, ""
	for _, l := range ev.lines {
		f := strings.Fields(l)
		var j int
		if len(f) > 1 {
			fmt.Sscan(f[1], &j)
		}
		switch f[0] {
		case "flush-begin", "compaction-begin":
			if phase != "" {
				t.Errorf("%s while job %d runs:\n%s", f[0], job, got)
			}
			job, phase = j, f[0]
		case "table-created":
			if phase == "" || j != job {
				t.Errorf("table created by job %d outside it (running %d):\n%s", j, job, got)
			}
			created = append(created, f[3])
		case "flush-end", "compaction-end":
			if j != job || !strings.Contains(l, "done=true err=<nil>") ||
				strings.TrimSuffix(phase, "-begin") != strings.TrimSuffix(f[0], "-end") {
				t.Errorf("%q does not end job %d (%s):\n%s", l, job, phase, got)
			}
			if f[0] == "flush-end" {
				flushes++
			} else {
				compactions++
			}
			phase = ""
		case "table-deleted":
			if !strings.HasSuffix(l, "err=<nil>") {
				t.Errorf("%s", l)
			}
		}
	}
	if flushes != 2 || compactions < 1 || len(created) < 3 {
		t.Fatalf("%d flushes, %d compactions, %d tables created:\n%s", flushes, compactions, len(created), got)
	}
	if !strings.Contains(got, "table-deleted "+created[0]) {
		t.Errorf("the first flush's table %s, compacted, was not reported deleted:\n%s", created[0], got)
	}
}
