package kv_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestDB_WaitIdle_Settles writes enough to flush and compact many times
// and checks that once WaitIdle returns nothing runs or is due: one
// memtable, no compaction, every level above the last under its target.
func TestDB_WaitIdle_Settles(t *testing.T) {
	opts := &kv.Options{FS: vfs.NewMem(), MemTableSize: kv.MinMemTableSize,
		TargetFileSize: 32 << 10, LBaseMaxBytes: 64 << 10}
	db, err := kv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	value := make([]byte, 100)
	for i := range 20_000 {
		if err := db.Set(fmt.Appendf(nil, "%08d", i*7919%20_000), value, kv.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.Flush.Count == 0 || m.Compact.Count == 0 {
		t.Fatalf("the load ran %d flushes and %d compactions: it tests nothing", m.Flush.Count, m.Compact.Count)
	}
	if m.Compact.InProgress != 0 || m.MemTable.Count != 1 {
		t.Fatalf("after WaitIdle: %d compactions running, %d memtables", m.Compact.InProgress, m.MemTable.Count)
	}
	for level, l := range m.Levels[:len(m.Levels)-1] {
		if l.Score >= 1 {
			t.Errorf("after WaitIdle: L%d scores %.2f, a compaction is due\n%s", level, l.Score, m)
		}
	}
}

// blockingFS holds every table's creation until release is closed, so a
// flush stays running for as long as a test wants; held says a creation
// is being held.
type blockingFS struct {
	vfs.FS
	held, release chan struct{}
}

func (fs blockingFS) Create(name string) (vfs.File, error) {
	if strings.HasSuffix(name, ".sst") {
		select {
		case fs.held <- struct{}{}:
		default:
		}
		<-fs.release
	}
	return fs.FS.Create(name)
}

// TestDB_WaitIdle_Context checks that WaitIdle gives up with the context's
// error while a flush runs, returns nil once it ends, and ErrClosed after
// Close.
func TestDB_WaitIdle_Context(t *testing.T) {
	fs := blockingFS{FS: vfs.NewMem(), held: make(chan struct{}, 1), release: make(chan struct{})}
	db, err := kv.Open("db", &kv.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("k"), []byte("v"), kv.NoSync); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- db.Flush() }()
	<-fs.held
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := db.WaitIdle(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitIdle during a held flush: %v, want %v", err, context.DeadlineExceeded)
	}
	close(fs.release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := db.WaitIdle(context.Background()); err != nil {
		t.Fatalf("WaitIdle after the flush: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.WaitIdle(context.Background()); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("WaitIdle after Close: %v, want %v", err, kv.ErrClosed)
	}
}

func ExampleDB_WaitIdle() {
	db, err := kv.Open("demo", &kv.Options{FS: vfs.NewMem(), MemTableSize: 64 << 10})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for i := range 5_000 {
		if err := db.Set(fmt.Appendf(nil, "key%05d", i), make([]byte, 100), kv.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		log.Fatal(err)
	}
	// Wait for the compactions the load made due, for at most a minute.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.WaitIdle(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("compactions running:", db.Metrics().Compact.InProgress)
	// Output:
	// compactions running: 0
}
