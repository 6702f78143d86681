package kv_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// readOnlyFixture leaves a closed store in db of fs with tables in L0
// and below, and writes in its WAL alone past many memtables of
// kv.MinMemTableSize, and returns its contents.
func readOnlyFixture(t *testing.T, fs vfs.FS) map[string]string {
	t.Helper()
	d, err := kv.Open("db", &kv.Options{FS: fs, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	set := func(from, to int, tag string) {
		for i := from; i < to; i++ {
			k, v := fmt.Sprintf("k%05d", i), fmt.Sprintf("%s%d-%0100d", tag, i, i)
			if err := d.Set([]byte(k), []byte(v), kv.NoSync); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
	}
	set(0, 2000, "a")
	if err := d.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	set(1000, 3000, "b")
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	set(2500, 9000, "c") // in the WAL alone
	if err := d.DeleteRange([]byte("k00100"), []byte("k00200"), kv.NoSync); err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 200; i++ {
		delete(want, fmt.Sprintf("k%05d", i))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

// storeFiles returns the contents of every file of dir but LOCK.
func storeFiles(t *testing.T, fs vfs.FS, dir string) map[string]string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, name := range names {
		if name == "LOCK" {
			continue
		}
		f, err := fs.Open(fs.PathJoin(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	return files
}

// TestOpen_ReadOnly opens a store with Options.ReadOnly whose WAL holds
// more than its memtables take: every write reads back, every write and
// Flush, Compact and Ingest fail with ErrReadOnly, WaitIdle returns, a
// checkpoint opens with the store's contents, a second DB cannot open the
// store meanwhile, and no file of the store changed, byte for byte.
func TestOpen_ReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	want := readOnlyFixture(t, fs)
	before := storeFiles(t, fs, "db")

	d, err := kv.Open("db", &kv.Options{FS: fs, ReadOnly: true, MemTableSize: kv.MinMemTableSize})
	if err != nil {
		t.Fatal(err)
	}
	if n := d.Metrics().MemTable.Count; n < 4 {
		t.Fatalf("the WAL's writes fill %d memtables, want several", n)
	}
	got, err := readAll(d.NewIter)
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffMaps(got, want); diff != "" {
		t.Fatalf("read-only store: %s", diff)
	}
	for _, k := range []string{"k00000", "k00150", "k02999", "k08999"} {
		v, err := d.Get([]byte(k))
		if w, ok := want[k]; ok != (err == nil) || (ok && string(v) != w) {
			t.Fatalf("Get(%s) = %.20q, %v; want %.20q (present %t)", k, v, err, w, ok)
		}
	}

	b := d.NewBatch()
	if err := b.Set([]byte("x"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	ib := d.NewIndexedBatch()
	if err := ib.Set([]byte("k00000"), []byte("batch")); err != nil {
		t.Fatal(err)
	}
	if v, err := ib.Get([]byte("k00000")); err != nil || string(v) != "batch" {
		t.Fatalf("indexed batch Get = %q, %v", v, err)
	}
	writeTable(t, fs, "ext.sst", "x")
	for name, err := range map[string]error{
		"Set":                       d.Set([]byte("x"), []byte("1"), kv.Sync),
		"Delete":                    d.Delete([]byte("k00000"), kv.NoSync),
		"DeleteRange":               d.DeleteRange([]byte("a"), []byte("z"), kv.NoSync),
		"Apply":                     d.Apply(b, kv.NoSync),
		"Apply of an indexed batch": d.Apply(ib, kv.NoSync),
		"Flush":                     d.Flush(),
		"Compact":                   d.Compact(nil, nil),
		"Ingest":                    d.Ingest([]string{"ext.sst"}),
	} {
		if !errors.Is(err, kv.ErrReadOnly) {
			t.Errorf("%s on a read-only DB: %v, want ErrReadOnly", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle on a read-only DB: %v", err)
	}
	if _, err := kv.Open("db", &kv.Options{FS: fs}); err == nil {
		t.Fatal("a second DB opened the store the read-only DB holds")
	}
	if err := d.Checkpoint("ckpt"); err != nil {
		t.Fatal(err)
	}
	if m := d.Metrics(); m.Flush.Count != 0 || m.Compact.Count != 0 {
		t.Fatalf("a read-only DB flushed %d times and compacted %d times", m.Flush.Count, m.Compact.Count)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	after := storeFiles(t, fs, "db")
	for name := range before {
		if after[name] != before[name] {
			t.Errorf("%s changed under the read-only DB", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s created under the read-only DB", name)
		}
	}
	for _, dir := range []string{"ckpt", "db"} {
		checkDir(t, fs, dir, want, dir+" opened for writes after the read-only DB")
	}
}

// TestOpen_ReadOnly_NoStore opens, read-only, a directory that does not
// exist and one that holds no store: ErrDBDoesNotExist, nothing created.
// ReadOnly with ErrorIfExists is refused, naming both.
func TestOpen_ReadOnly_NoStore(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("empty", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"missing", "empty"} {
		if _, err := kv.Open(dir, &kv.Options{FS: fs, ReadOnly: true}); !errors.Is(err, kv.ErrDBDoesNotExist) {
			t.Fatalf("read-only Open of %s: %v, want ErrDBDoesNotExist", dir, err)
		}
	}
	if _, err := fs.Stat("missing"); err == nil {
		t.Fatal("read-only Open created the directory")
	}
	if names, _ := fs.List("empty"); len(names) != 0 {
		t.Fatalf("read-only Open wrote %v", names)
	}
	_, err := kv.Open("empty", &kv.Options{FS: fs, ReadOnly: true, ErrorIfExists: true})
	if err == nil || !containsAll(err.Error(), "ErrorIfExists", "ReadOnly") {
		t.Fatalf("ReadOnly with ErrorIfExists: %v, want an error naming both", err)
	}
}

// containsAll reports whether s contains every one of subs.
func containsAll(s string, subs ...string) bool {
	return !slices.ContainsFunc(subs, func(sub string) bool { return !strings.Contains(s, sub) })
}

// writeTable writes a table holding keys to name in fs.
func writeTable(t *testing.T, fs vfs.FS, name string, keys ...string) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{})
	for _, k := range keys {
		if err := w.Add(sstable.MakeInternalKey([]byte(k), 0, sstable.KindSet), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpen_ReadOnly_AfterCrash opens, read-only, a store that a machine
// crash left with Sync writes in its WAL and NoSync ones lost past them:
// it reads every Sync write, and changes no file, so that the store
// opened for writes afterwards recovers the same writes.
func TestOpen_ReadOnly_AfterCrash(t *testing.T) {
	mem := vfs.NewStrictMem()
	d, err := kv.Open("db", &kv.Options{FS: mem, MemTableSize: kv.MinMemTableSize << 4})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 3000 {
		k, v := fmt.Sprintf("k%05d", i), fmt.Sprintf("v%d", i)
		opts := kv.NoSync
		if i%10 == 9 {
			opts = kv.Sync
		}
		if err := d.Set([]byte(k), []byte(v), opts); err != nil {
			t.Fatal(err)
		}
		if i < 2990 {
			want[k] = v // synced by the Sync write after it
		}
	}
	mem.SetIgnoreSyncs(true)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	mem.ResetToSyncedState()
	mem.SetIgnoreSyncs(false)
	before := storeFiles(t, mem, "db")

	ro, err := kv.Open("db", &kv.Options{FS: mem, ReadOnly: true, MemTableSize: kv.MinMemTableSize})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(ro.NewIter)
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	for k, v := range got {
		if want[k] != v && k < "k02990" {
			t.Fatalf("read-only after the crash: %s = %q, want %q", k, v, want[k])
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Fatalf("read-only after the crash: synced %s missing", k)
		}
	}
	after := storeFiles(t, mem, "db")
	if len(after) != len(before) {
		t.Fatalf("the read-only DB left %d files, found %d", len(after), len(before))
	}
	for name, data := range before {
		if after[name] != data {
			t.Fatalf("%s changed under the read-only DB", name)
		}
	}
	checkDir(t, mem, "db", got, "opened for writes after the read-only DB")
}

// TestCheckpoint_ReadOnly_ManifestNum checkpoints a read-only DB: the
// checkpoint's MANIFEST takes the number of the one the store's CURRENT
// names, as Pebble's does, not 0, a number no file of a store takes.
func TestCheckpoint_ReadOnly_ManifestNum(t *testing.T) {
	fs := vfs.NewMem()
	readOnlyFixture(t, fs)
	d, err := kv.Open("db", &kv.Options{FS: fs, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Checkpoint("ckpt"); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	store, ckpt := storeFiles(t, fs, "db")["CURRENT"], storeFiles(t, fs, "ckpt")["CURRENT"]
	if ckpt != store {
		t.Fatalf("the checkpoint's CURRENT names %q, the store's %q", strings.TrimSpace(ckpt), strings.TrimSpace(store))
	}
}
