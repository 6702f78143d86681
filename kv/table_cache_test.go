package kv

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// openTablesFS counts the table files open through it.
type openTablesFS struct {
	vfs.FS
	open atomic.Int64
}

func (fs *openTablesFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	fs.open.Add(1)
	return &countedFile{File: f, fs: fs}, nil
}

type countedFile struct {
	vfs.File
	fs   *openTablesFS
	once sync.Once
}

func (f *countedFile) Close() error {
	f.once.Do(func() { f.fs.open.Add(-1) })
	return f.File.Close()
}

// tableCacheStore opens a store that keeps at most MinMaxOpenFiles
// tables open and flushes n tables into L0, table i holding key ki; it
// returns the store and the tables, oldest first.
func tableCacheStore(t *testing.T, n int) (*DB, *openTablesFS, []*manifest.FileMetadata) {
	t.Helper()
	return tableCacheStoreOf(t, n, MinMaxOpenFiles)
}

// tableCacheStoreOf is tableCacheStore with a cache of maxOpen tables.
func tableCacheStoreOf(t *testing.T, n, maxOpen int) (*DB, *openTablesFS, []*manifest.FileMetadata) {
	t.Helper()
	fs := &openTablesFS{FS: vfs.NewMem()}
	d, err := Open("db", &Options{FS: fs, DisableAutomaticCompactions: true, MaxOpenFiles: maxOpen})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	for i := range n {
		if err := d.Set([]byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprint(i)), NoSync); err != nil {
			t.Fatal(err)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	rs := d.loadReadState()
	defer rs.unref()
	files := rs.current.Levels[0]
	if len(files) != n {
		t.Fatalf("%d tables in L0, want %d", len(files), n)
	}
	return d, fs, files
}

// checkTable gets table i of files through the cache, checks it reads its
// key, and returns the entry, referenced.
func checkTable(t *testing.T, d *DB, files []*manifest.FileMetadata, i int) *tableEntry {
	t.Helper()
	e, err := d.tableCache.get(files[i])
	if err != nil {
		t.Fatal(err)
	}
	v, _, found, err := e.reader.Get([]byte(fmt.Sprintf("k%d", i)), base.SeqNumMax, nil)
	if err != nil || !found || string(v) != fmt.Sprint(i) {
		t.Fatalf("table %d: Get = %q, %v, %v", i, v, found, err)
	}
	return e
}

// listed reports which of files the table cache lists.
func listed(d *DB, files []*manifest.FileMetadata) []bool {
	in := make([]bool, len(files))
	for i, f := range files {
		_, in[i] = d.tableCache.listedEntry(f.FileNum)
	}
	return in
}

// listedEntry returns table num's entry, if the cache lists it.
func (c *tableCache) listedEntry(num base.FileNum) (*tableEntry, bool) {
	s := c.shard(num)
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.entries[num]
	return e, ok
}

// listedCount returns the number of tables the cache lists.
func (c *tableCache) listedCount() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.entries)
		s.mu.RUnlock()
	}
	return n
}

// TestTableCache_Capacity reads 20 tables through a cache of 8, twice
// round: no more than 8 tables are ever open, and each reads its key.
func TestTableCache_Capacity(t *testing.T) {
	d, fs, files := tableCacheStore(t, 20)
	for range 2 {
		for i := range files {
			d.tableCache.release(checkTable(t, d, files, i))
			if n := fs.open.Load(); n > MinMaxOpenFiles {
				t.Fatalf("after table %d: %d tables open, capacity %d", i, n, MinMaxOpenFiles)
			}
		}
	}
}

// TestTableCache_Shards reads 300 tables, twice round, through a cache
// of 128, which is split into two shards of 64: no more than 128 tables
// are ever open, each reads its key, no shard lists more than its share,
// and at the end both are full.
func TestTableCache_Shards(t *testing.T) {
	const maxOpen = 2 * minTablesPerShard
	if n := tableCacheShards(maxOpen); n != 2 {
		t.Fatalf("a cache of %d tables has %d shards, want 2", maxOpen, n)
	}
	if n := tableCacheShards(MinMaxOpenFiles); n != 1 {
		t.Fatalf("a cache of %d tables has %d shards, want 1", MinMaxOpenFiles, n)
	}
	d, fs, files := tableCacheStoreOf(t, 300, maxOpen)
	c := d.tableCache
	total := 0
	for i := range c.shards {
		total += c.shards[i].capacity
	}
	if len(c.shards) != 2 || total != maxOpen {
		t.Fatalf("%d shards holding %d tables, want 2 holding %d", len(c.shards), total, maxOpen)
	}
	for range 2 {
		for i := range files {
			c.release(checkTable(t, d, files, i))
			if n := fs.open.Load(); n > maxOpen {
				t.Fatalf("after table %d: %d tables open, capacity %d", i, n, maxOpen)
			}
			for j := range c.shards {
				s := &c.shards[j]
				s.mu.RLock()
				listed, capacity := len(s.entries), s.capacity
				s.mu.RUnlock()
				if listed > capacity {
					t.Fatalf("after table %d: shard %d lists %d tables, capacity %d", i, j, listed, capacity)
				}
			}
		}
	}
	if n := c.listedCount(); n != maxOpen {
		t.Fatalf("%d tables listed after reading 300, want %d", n, maxOpen)
	}
}

// TestTableCache_SecondChance fills the cache, gets the first table again,
// then opens one more: the hand passes over the table got again and
// evicts the next one, which was got once.
func TestTableCache_SecondChance(t *testing.T) {
	d, _, files := tableCacheStore(t, MinMaxOpenFiles+1)
	for i := range MinMaxOpenFiles {
		d.tableCache.release(checkTable(t, d, files, i))
	}
	d.tableCache.release(checkTable(t, d, files, 0))
	d.tableCache.release(checkTable(t, d, files, MinMaxOpenFiles))
	in := listed(d, files)
	if !in[0] || in[1] || !in[MinMaxOpenFiles] {
		t.Fatalf("listed %v: want table 0 kept, table 1 evicted, the new one listed", in)
	}
}

// TestTableCache_EvictedInUse holds a table while 20 others push it out:
// it stays open and readable until released, and is closed then.
func TestTableCache_EvictedInUse(t *testing.T) {
	d, fs, files := tableCacheStore(t, 21)
	held := checkTable(t, d, files, 0)
	for i := 1; i < len(files); i++ {
		d.tableCache.release(checkTable(t, d, files, i))
	}
	if listed(d, files)[0] {
		t.Fatal("the held table is still listed after 20 others")
	}
	if n := fs.open.Load(); n != MinMaxOpenFiles+1 {
		t.Fatalf("%d tables open, want the cache's %d and the held one", n, MinMaxOpenFiles)
	}
	if v, _, found, err := held.reader.Get([]byte("k0"), base.SeqNumMax, nil); err != nil || !found || string(v) != "0" {
		t.Fatalf("held table after eviction: Get = %q, %v, %v", v, found, err)
	}
	d.tableCache.release(held)
	if n := fs.open.Load(); n != MinMaxOpenFiles {
		t.Fatalf("%d tables open after the release, want %d", n, MinMaxOpenFiles)
	}
}

// TestTableCache_Concurrent has 4 goroutines read 20 tables through a
// cache of 8 at once (run it under -race): every read finds its key, and
// once they are done the cache lists 8 tables, with 8 files open.
func TestTableCache_Concurrent(t *testing.T) {
	d, fs, files := tableCacheStore(t, 20)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 500 {
				i := (n*7 + g*5) % len(files)
				e, err := d.tableCache.get(files[i])
				if err != nil {
					t.Error(err)
					return
				}
				v, _, found, err := e.reader.Get([]byte(fmt.Sprintf("k%d", i)), base.SeqNumMax, nil)
				d.tableCache.release(e)
				if err != nil || !found || string(v) != fmt.Sprint(i) {
					t.Errorf("table %d: Get = %q, %v, %v", i, v, found, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := d.tableCache.listedCount(); n != MinMaxOpenFiles {
		t.Fatalf("%d tables listed, want %d", n, MinMaxOpenFiles)
	}
	if n := fs.open.Load(); n != MinMaxOpenFiles {
		t.Fatalf("%d tables open, want %d", n, MinMaxOpenFiles)
	}
}

// TestTableCache_GetOverlappingClose holds a Get between its check that
// the DB is open and its table's open (a comparer that stalls on its key,
// in the lookup's check of the table's range), closes the DB, then lets
// the Get go on: it may read the table or report ErrClosed, but it must
// leave no table file open, since nothing would close it.
func TestTableCache_GetOverlappingClose(t *testing.T) {
	stall := make(chan bool, 1) // holds true while the next compare of "k" is to stall
	stalled, resume := make(chan struct{}), make(chan struct{})
	cmp := *sstable.DefaultComparer
	compare := cmp.Compare
	cmp.Compare = func(a, b []byte) int {
		if string(a) == "k" || string(b) == "k" {
			select {
			case <-stall:
				close(stalled)
				<-resume
			default:
			}
		}
		return compare(a, b)
	}
	fs := &openTablesFS{FS: vfs.NewMem()}
	d, err := Open("db", &Options{FS: fs, Comparer: &cmp, DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Set([]byte("k"), []byte("v"), NoSync); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	rs := d.loadReadState()
	d.tableCache.evict(rs.current.Levels[0][0].FileNum)
	rs.unref()
	if n := fs.open.Load(); n != 0 {
		t.Fatalf("%d tables open before the Get, want 0", n)
	}

	stall <- true
	got := make(chan error, 1)
	go func() {
		v, err := d.Get([]byte("k"))
		if err == nil && string(v) != "v" {
			err = fmt.Errorf("Get = %q, want %q", v, "v")
		}
		got <- err
	}()
	<-stalled
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	close(resume)
	if err := <-got; err != nil && !errors.Is(err, ErrClosed) {
		t.Fatalf("Get overlapping Close: %v", err)
	}
	if n := fs.open.Load(); n != 0 {
		t.Fatalf("%d tables open after Close and the Get, want 0", n)
	}
}
