package kv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/pebble/vfs"
)

// removeGateFS holds each removal of a table until release is closed,
// telling held once it holds one; with panics set, it panics instead.
type removeGateFS struct {
	vfs.FS
	held, release chan struct{}
	panics        bool
}

func (fs removeGateFS) Remove(name string) error {
	if strings.HasSuffix(name, ".sst") {
		if fs.panics {
			panic("Remove panics on " + name)
		}
		select {
		case fs.held <- struct{}{}:
		default:
		}
		<-fs.release
	}
	return fs.FS.Remove(name)
}

// obsoleteUnderIterator writes three L0 tables, opens an iterator, and
// compacts them into one under it: it returns the iterator, whose Close
// makes the three obsolete, and their numbers.
func obsoleteUnderIterator(t *testing.T, d *DB) (*Iterator, []base.FileNum) {
	t.Helper()
	for i := range 3 {
		must(t, d.Set(fmt.Appendf(nil, "k%d", i), []byte("v"), NoSync))
		must(t, d.Flush())
	}
	var old []base.FileNum
	for _, f := range d.mu.versions.current.Levels[0] {
		old = append(old, f.FileNum)
	}
	it, err := d.NewIter(nil)
	must(t, err)
	must(t, d.Compact(nil, nil)) // deletes nothing: the iterator holds the tables
	return it, old
}

// within runs fn in a goroutine and fails the test unless it returns
// within a generous deadline: what fn does must not wait for a held
// removal.
func within(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	must(t, waitFor(t, done, 30*time.Second, what+" waited for the deletion of an obsolete table"))
}

// TestCleaner_RemovalHoldsUpNothing holds the deletion of obsolete tables
// and checks that nobody waits for it: not the reader whose Close made
// them obsolete, nor the writes, a memtable switch and a flush, which
// need d.mu; and that the tables are gone once it is let go.
func TestCleaner_RemovalHoldsUpNothing(t *testing.T) {
	fs := removeGateFS{FS: vfs.NewMem(), held: make(chan struct{}, 1), release: make(chan struct{})}
	d, err := Open("db", &Options{FS: fs, DisableAutomaticCompactions: true})
	must(t, err)
	defer mustClose(t, d)
	it, old := obsoleteUnderIterator(t, d)
	within(t, "Iterator.Close", it.Close)
	<-fs.held
	within(t, "a write and a flush", func() error {
		if err := d.Set([]byte("k9"), []byte("v"), NoSync); err != nil {
			return err
		}
		return d.Flush()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := d.WaitIdle(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitIdle with a deletion held: %v, want %v", err, context.DeadlineExceeded)
	}
	close(fs.release)
	must(t, d.WaitIdle(context.Background()))
	for _, num := range old {
		if _, err := fs.Stat("db/" + base.MakeFilename(base.FileTypeTable, num)); err == nil {
			t.Errorf("obsolete table %s still on disk once the store is idle", num)
		}
	}
	if got := d.Metrics().TablesDeleted; got != int64(len(old)) {
		t.Errorf("TablesDeleted %d, want %d", got, len(old))
	}
}

// TestCleaner_CloseDeletesWhatIsQueued checks that Close, with deletions
// queued and one held, returns only once they are done and reported to
// the listener.
func TestCleaner_CloseDeletesWhatIsQueued(t *testing.T) {
	fs := removeGateFS{FS: vfs.NewMem(), held: make(chan struct{}, 1), release: make(chan struct{})}
	deleted := make(map[uint64]bool)
	var closed bool
	opts := &Options{FS: fs, DisableAutomaticCompactions: true, EventListener: &EventListener{
		TableDeleted: func(info FileDeleteInfo) {
			if closed {
				t.Errorf("table %d reported deleted after Close returned", info.FileNum)
			}
			deleted[info.FileNum] = info.Err == nil
		},
	}}
	d, err := Open("db", opts)
	must(t, err)
	it, old := obsoleteUnderIterator(t, d)
	must(t, it.Close())
	<-fs.held
	closeErr := make(chan error, 1)
	go func() { closeErr <- d.Close() }()
	close(fs.release)
	must(t, <-closeErr)
	closed = true
	for _, num := range old {
		if _, err := fs.Stat("db/" + base.MakeFilename(base.FileTypeTable, num)); err == nil {
			t.Errorf("obsolete table %s still on disk after Close", num)
		}
		if !deleted[uint64(num)] {
			t.Errorf("table %s not reported deleted by Close", num)
		}
	}
}

// TestCleaner_RemovePanics checks that a file system whose Remove panics
// stops the store as a panic in a flush or a compaction does: a
// background error wrapping compaction.ErrCallbackPanic, reported by
// WaitIdle, later writes and Close.
func TestCleaner_RemovePanics(t *testing.T) {
	fs := removeGateFS{FS: vfs.NewMem(), panics: true}
	d, err := Open("db", &Options{FS: fs, DisableAutomaticCompactions: true})
	must(t, err)
	it, _ := obsoleteUnderIterator(t, d)
	must(t, it.Close())
	err = d.WaitIdle(context.Background())
	if !errors.Is(err, compaction.ErrCallbackPanic) || !strings.Contains(err.Error(), "Remove panics") {
		t.Fatalf("WaitIdle after Remove panicked: %v, want an error wrapping ErrCallbackPanic", err)
	}
	if err := d.Set([]byte("k"), []byte("v"), NoSync); !errors.Is(err, compaction.ErrCallbackPanic) {
		t.Errorf("Set after Remove panicked: %v", err)
	}
	if err := d.Close(); !errors.Is(err, compaction.ErrCallbackPanic) {
		t.Errorf("Close after Remove panicked: %v", err)
	}
}
