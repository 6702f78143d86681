package kv_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// writeExternal writes the keys of kvs, sorted, at sequence number 0 into
// a table at path of fs, as a user outside the store would; a value "" is
// a point tombstone.
func writeExternal(t testing.TB, fs vfs.FS, path string, kvs map[string]string, opts sstable.WriterOptions) {
	t.Helper()
	if err := fs.MkdirAll(fs.PathDir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := sstable.NewWriter(f, opts)
	for _, k := range slices.Sorted(maps.Keys(kvs)) {
		kind := sstable.KindSet
		if kvs[k] == "" {
			kind = sstable.KindDelete
		}
		if err := w.Add(sstable.MakeInternalKey([]byte(k), 0, kind), []byte(kvs[k])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// keyRange returns keys prefix+i for i in [from, to), valued tag+i.
func keyRange(prefix string, from, to int, tag string) map[string]string {
	m := map[string]string{}
	for i := from; i < to; i++ {
		m[fmt.Sprintf("%s%04d", prefix, i)] = fmt.Sprintf("%s%d", tag, i)
	}
	return m
}

// TestDB_Ingest shows ingested keys at once over the memtable's, the
// tables' and a snapshot's, shadowed by later writes, after a reopen too.
func TestDB_Ingest(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs, DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	want := keyRange("a", 0, 100, "old")
	for k, v := range want {
		if err := db.Set([]byte(k), []byte(v), kv.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("a0050"), []byte("mem"), kv.NoSync); err != nil {
		t.Fatal(err)
	}
	want["a0050"] = "mem"
	before := maps.Clone(want)
	snap := db.NewSnapshot()

	ext1 := keyRange("a", 40, 60, "ing")
	ext1["a0045"] = "" // a tombstone
	ext2 := keyRange("b", 0, 10, "ing")
	writeExternal(t, fs, "ext/1.sst", ext1, sstable.WriterOptions{})
	writeExternal(t, fs, "ext/2.sst", ext2, sstable.WriterOptions{})
	if err := db.Ingest([]string{"ext/1.sst", "ext/2.sst"}); err != nil {
		t.Fatal(err)
	}
	for k, v := range ext1 {
		if v == "" {
			delete(want, k)
		} else {
			want[k] = v
		}
	}
	maps.Copy(want, ext2)
	checkContents(t, db, want, "after Ingest")
	if m := db.Metrics().Ingest; m.Count != 1 || m.Tables != 2 || m.Bytes == 0 {
		t.Fatalf("Metrics.Ingest = %+v, want 1 ingest of 2 tables", m)
	}
	if got, err := readAll(snap.NewIter); err != nil || diffMaps(got, before) != "" {
		t.Fatalf("snapshot taken before Ingest: %v %s", err, diffMaps(got, before))
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	// The ingested files stay where they were.
	if _, err := fs.Stat("ext/1.sst"); err != nil {
		t.Fatalf("ingested file gone from its place: %v", err)
	}
	if err := db.Set([]byte("a0041"), []byte("later"), kv.NoSync); err != nil {
		t.Fatal(err)
	}
	want["a0041"] = "later"
	checkContents(t, db, want, "after a later write")
	// The tables of b.. overlap nothing: they went to the bottom.
	m := db.Metrics()
	if m.Levels[6].NumFiles != 1 {
		t.Fatalf("levels' tables %v: want the b table in L6", levelFiles(m))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = kv.Open("db", &kv.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkContents(t, db, want, "after reopening")
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	checkContents(t, db, want, "after compacting")
}

// checkReopened closes db, opens the store "db" on fs again and checks
// that it holds exactly want (see checkContents).
func checkReopened(t *testing.T, db *kv.DB, fs vfs.FS, want map[string]string) {
	t.Helper()
	must(t, db.Close())
	db, err := kv.Open("db", &kv.Options{FS: fs})
	must(t, err)
	defer mustClose(t, db)
	checkContents(t, db, want, "after reopening")
}

// checkContents fails unless db holds exactly want, through an iterator
// and through Get.
func checkContents(t *testing.T, db *kv.DB, want map[string]string, what string) {
	t.Helper()
	got, err := readAll(db.NewIter)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if d := diffMaps(got, want); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
	for k, v := range want {
		if g, err := db.Get([]byte(k)); err != nil || string(g) != v {
			t.Fatalf("%s: Get(%q) = %q, %v; want %q", what, k, g, err, v)
		}
	}
}

// TestDB_Ingest_TargetLevel places tables as Pebble does: at the deepest
// level from the base level down above every table they overlap; in L0
// when that is the base level or an L0 table overlaps them.
func TestDB_Ingest_TargetLevel(t *testing.T) {
	type step struct {
		name string
		kvs  map[string]string
		want []int
	}
	run := func(t *testing.T, static bool, steps []step) {
		fs := vfs.NewMem()
		db, err := kv.Open("db", &kv.Options{FS: fs, DisableAutomaticCompactions: true, StaticLevels: static})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, s := range steps {
			if s.name == "flush" {
				if err := db.Set([]byte("e0001"), []byte("v"), kv.NoSync); err != nil {
					t.Fatal(err)
				}
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
				continue
			}
			writeExternal(t, fs, s.name, s.kvs, sstable.WriterOptions{})
			if err := db.Ingest([]string{s.name}); err != nil {
				t.Fatal(err)
			}
			if got := levelFiles(db.Metrics()); !slices.Equal(got, s.want) {
				t.Fatalf("after ingesting %s: tables per level %v, want %v", s.name, got, s.want)
			}
			want := map[string]string{}
			for k, v := range s.kvs {
				want[k] = v
			}
			for k, v := range want {
				if g, err := db.Get([]byte(k)); err != nil || string(g) != v {
					t.Fatalf("after ingesting %s: Get(%q) = %q, %v; want %q", s.name, k, g, err, v)
				}
			}
		}
	}
	// Dynamic levels: the base level is the bottom one while only it holds
	// data, so a table overlapping it goes to L0.
	run(t, false, []step{
		{"c.sst", keyRange("c", 0, 10, "x"), []int{0, 0, 0, 0, 0, 0, 1}},
		{"c2.sst", keyRange("c", 5, 6, "y"), []int{1, 0, 0, 0, 0, 0, 1}},
		{"d.sst", keyRange("d", 0, 10, "x"), []int{1, 0, 0, 0, 0, 0, 2}},
		{"flush", nil, nil},
		{"e.sst", keyRange("e", 0, 3, "x"), []int{3, 0, 0, 0, 0, 0, 2}},
	})
	// Static levels: L1 is the base level; each overlapping table lands one
	// level above the last.
	run(t, true, []step{
		{"c.sst", keyRange("c", 0, 10, "x"), []int{0, 0, 0, 0, 0, 0, 1}},
		{"c2.sst", keyRange("c", 5, 6, "y"), []int{0, 0, 0, 0, 0, 1, 1}},
		{"c3.sst", keyRange("c", 5, 6, "z"), []int{0, 0, 0, 0, 1, 1, 1}},
		{"d.sst", keyRange("d", 0, 10, "x"), []int{0, 0, 0, 0, 1, 1, 2}},
	})
}

// TestDB_Ingest_BadInput refuses tables out of order or overlapping, a
// missing file, a table of sequence numbers, of another comparer, an
// empty one, and Ingest after Close, with an error naming the file, and
// changes nothing.
func TestDB_Ingest_BadInput(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	want := keyRange("k", 0, 20, "v")
	for k, v := range want {
		if err := db.Set([]byte(k), []byte(v), kv.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	writeExternal(t, fs, "x/a.sst", keyRange("a", 0, 10, "x"), sstable.WriterOptions{})
	writeExternal(t, fs, "x/a2.sst", keyRange("a", 5, 15, "x"), sstable.WriterOptions{})
	writeExternal(t, fs, "x/b.sst", keyRange("b", 0, 10, "x"), sstable.WriterOptions{})
	writeExternal(t, fs, "x/empty.sst", nil, sstable.WriterOptions{})
	seqFile, _ := fs.Create("x/seq.sst")
	w := sstable.NewWriter(seqFile, sstable.WriterOptions{})
	w.Add(sstable.MakeInternalKey([]byte("s"), 5, sstable.KindSet), []byte("v"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	other := *sstable.DefaultComparer
	other.Name = "other.Comparer"
	writeExternal(t, fs, "x/cmp.sst", keyRange("c", 0, 3, "x"), sstable.WriterOptions{Comparer: &other})
	// A copy of b.sst with a byte of its first data block flipped: it
	// opens (its footer, index and properties are whole), and only a read
	// of that block finds the damage.
	damaged := readFSFile(t, fs, "x/b.sst")
	damaged[0] ^= 0x55
	writeFSFile(t, fs, "x/damaged.sst", damaged)

	files := func() []string {
		names, err := fs.List("db")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		return names
	}
	before := files()
	cases := []struct {
		paths []string
		want  string // in the error
		is    error
	}{
		{[]string{"x/a.sst", "x/a2.sst"}, "x/a2.sst", kv.ErrIngestOverlap},
		{[]string{"x/b.sst", "x/a.sst"}, "x/a.sst", kv.ErrIngestOverlap},
		{[]string{"x/a.sst", "x/missing.sst"}, "x/missing.sst", nil},
		{[]string{"x/seq.sst"}, "sequence numbers", nil},
		{[]string{"x/cmp.sst"}, "other.Comparer", nil},
		{[]string{"x/empty.sst"}, "holds no keys", nil},
		{[]string{"x/damaged.sst"}, "x/damaged.sst", kv.ErrCorruption},
	}
	for _, c := range cases {
		err := db.Ingest(c.paths)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "kv: ") {
			t.Fatalf("Ingest(%v) = %v, want an error naming %q", c.paths, err, c.want)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Fatalf("Ingest(%v) = %v, want errors.Is %v", c.paths, err, c.is)
		}
		if got := files(); !slices.Equal(got, before) {
			t.Fatalf("Ingest(%v) left files %v, had %v", c.paths, got, before)
		}
		checkContents(t, db, want, fmt.Sprintf("after Ingest(%v)", c.paths))
	}
	if m := db.Metrics().Ingest; m.Count != 0 || m.Tables != 0 {
		t.Fatalf("Metrics.Ingest = %+v after refused ingests, want none", m)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Ingest([]string{"x/b.sst"}); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Ingest after Close = %v, want ErrClosed", err)
	}
}

// logRecorder is a kv.Logger keeping what it is told.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Infof(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, fmt.Sprintf(format, args...))
}

// TestDB_Ingest_Filters keeps the filters of a table built with the
// store's policy, and warns of a table whose filters the store cannot
// read or which has none; all are read right.
func TestDB_Ingest_Filters(t *testing.T) {
	fs := vfs.NewMem()
	logs := &logRecorder{}
	db, err := kv.Open("db", &kv.Options{FS: fs, Logger: logs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	policy, err := bloompolicy.New(kv.DefaultFilterFPR)
	if err != nil {
		t.Fatal(err)
	}
	foreign := pebbleadapter.FromPebble(bloom.FilterPolicy(10))
	writeExternal(t, fs, "same.sst", keyRange("a", 0, 50, "x"), sstable.WriterOptions{FilterPolicy: policy})
	writeExternal(t, fs, "foreign.sst", keyRange("b", 0, 50, "x"), sstable.WriterOptions{FilterPolicy: foreign})
	writeExternal(t, fs, "none.sst", keyRange("c", 0, 50, "x"), sstable.WriterOptions{})
	if err := db.Ingest([]string{"same.sst", "foreign.sst", "none.sst"}); err != nil {
		t.Fatal(err)
	}
	if len(logs.msgs) != 2 || !strings.Contains(logs.msgs[0], "foreign.sst") || !strings.Contains(logs.msgs[1], "none.sst") {
		t.Fatalf("warnings %q, want one for foreign.sst and one for none.sst", logs.msgs)
	}
	want := keyRange("a", 0, 50, "x")
	maps.Copy(want, keyRange("b", 0, 50, "x"))
	maps.Copy(want, keyRange("c", 0, 50, "x"))
	checkContents(t, db, want, "after Ingest")
	m0 := db.Metrics().Lookups
	for i := range 50 {
		db.Get([]byte(fmt.Sprintf("a%04dz", i))) // absent, in same.sst's range
	}
	if m := db.Metrics().Lookups; m.FilterNegatives-m0.FilterNegatives < 40 {
		t.Fatalf("%d filter negatives for 50 absent keys in the table with the store's filters",
			m.FilterNegatives-m0.FilterNegatives)
	}
}

// TestDB_Ingest_Concurrent ingests tables while writers write and readers
// iterate: a reader sees each ingested table's keys all or none, and the
// store ends with every write and every table.
func TestDB_Ingest_Concurrent(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs, MemTableSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const tables, perTable = 12, 50
	want := map[string]string{}
	var mu sync.Mutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // a writer of keys between and over the tables'
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			k, v := fmt.Sprintf("w%05d", i%3000), fmt.Sprintf("v%d", i)
			if err := db.Set([]byte(k), []byte(v), kv.NoSync); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			want[k] = v
			mu.Unlock()
		}
	}()
	var reads atomic.Int64
	go func() { // a reader counting the ingested keys it sees
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			it, err := db.NewIter(&kv.IterOptions{LowerBound: []byte("i"), UpperBound: []byte("j")})
			if err != nil {
				t.Error(err)
				return
			}
			n := 0
			for it.First(); it.Valid(); it.Next() {
				n++
			}
			if err := it.Close(); err != nil {
				t.Error(err)
				return
			}
			if n%perTable != 0 {
				t.Errorf("an iterator saw %d ingested keys, not a whole number of tables", n)
				return
			}
			reads.Add(1)
		}
	}()
	ingested := map[string]string{}
	for i := range tables {
		kvs := keyRange(fmt.Sprintf("i%02d-", i), 0, perTable, "t")
		path := fmt.Sprintf("ext/%d.sst", i)
		writeExternal(t, fs, path, kvs, sstable.WriterOptions{})
		if err := db.Ingest([]string{path}); err != nil {
			t.Fatal(err)
		}
		maps.Copy(ingested, kvs)
		// Let the reader read at least once between two ingests.
		for r, deadline := reads.Load(), time.Now().Add(5*time.Second); reads.Load() == r && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	close(done)
	wg.Wait()
	maps.Copy(want, ingested)
	checkContents(t, db, want, "after the concurrent ingests")
	if n := reads.Load(); n < tables {
		t.Fatalf("the reader read %d times, want one between each two ingests at least", n)
	}
}

// linkFailsFS is an FS whose hard links fail, as across devices.
type linkFailsFS struct{ vfs.FS }

func (linkFailsFS) Link(oldname, newname string) error {
	return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.New("cross-device link")}
}

// TestDB_FilesWithoutLinks ingests and checkpoints on an FS that cannot
// hard-link: the files are copied, and the copies are independent of the
// originals.
func TestDB_FilesWithoutLinks(t *testing.T) {
	mem := vfs.NewMem()
	fs := linkFailsFS{mem}
	db, err := kv.Open("db", &kv.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ext := keyRange("a", 0, 100, "x")
	writeExternal(t, fs, "ext/a.sst", ext, sstable.WriterOptions{})
	if err := db.Ingest([]string{"ext/a.sst"}); err != nil {
		t.Fatal(err)
	}
	// The store's copy does not depend on the original.
	if err := mem.Remove("ext/a.sst"); err != nil {
		t.Fatal(err)
	}
	checkContents(t, db, ext, "after ingesting by copy")
	if err := db.Checkpoint("ckpt"); err != nil {
		t.Fatal(err)
	}
	checkDir(t, fs, "ckpt", ext, "checkpoint made by copies")
}

// TestDB_Ingest_FilterSplit warns of a table whose filters hold whole
// keys when the store's comparer splits prefixes, and reads it right
// without them.
func TestDB_Ingest_FilterSplit(t *testing.T) {
	fs := vfs.NewMem()
	logs := &logRecorder{}
	db, err := kv.Open("db", &kv.Options{FS: fs, Logger: logs, Comparer: itertest.SlashComparer()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	policy, err := bloompolicy.New(kv.DefaultFilterFPR)
	if err != nil {
		t.Fatal(err)
	}
	ext := map[string]string{"u/1/a": "x", "u/1/b": "y", "u/2/a": "z"}
	writeExternal(t, fs, "whole.sst", ext, sstable.WriterOptions{FilterPolicy: policy})
	if err := db.Ingest([]string{"whole.sst"}); err != nil {
		t.Fatal(err)
	}
	if len(logs.msgs) != 1 || !strings.Contains(logs.msgs[0], "test.slash") {
		t.Fatalf("warnings %q, want one naming the store's split", logs.msgs)
	}
	checkContents(t, db, ext, "after Ingest")
}
