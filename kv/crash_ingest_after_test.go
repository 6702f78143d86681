package kv_test

import (
	"fmt"
	"maps"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestCrash_WritesAfterIngest cuts the power after Sync writes that
// follow an Ingest, into a store whose memtable held writes (the Ingest
// flushes it) or was empty, in both WAL modes: the reopened store holds
// the ingested keys and every write, before and after.
func TestCrash_WritesAfterIngest(t *testing.T) {
	for _, bgWAL := range []bool{false, true} {
		for _, memWrites := range []bool{false, true} {
			t.Run(fmt.Sprintf("BackgroundWALWrites=%t/memtable=%t", bgWAL, memWrites), func(t *testing.T) {
				mem := vfs.NewStrictMem()
				fs := newCrashFS(mem)
				opts := reopenOpts(fs)
				opts.BackgroundWALWrites = bgWAL
				db, err := kv.Open("db", opts)
				must(t, err)
				want := map[string]string{}
				set := func(k, v string, o *kv.WriteOptions) {
					t.Helper()
					must(t, db.Set([]byte(k), []byte(v), o))
					want[k] = v
				}
				for i := range 30 {
					set(fmt.Sprintf("k%04d", i), "before", kv.Sync)
				}
				if !memWrites {
					must(t, db.Flush())
				}
				ext := keyRange("k", 20, 40, "ing")
				writeExternal(t, mem, "ext/t.sst", ext, sstable.WriterOptions{})
				syncMemDir(t, mem, "ext")
				must(t, db.Ingest([]string{"ext/t.sst"}))
				maps.Copy(want, ext)
				for i := range 10 {
					set(fmt.Sprintf("k%04d", 25+i*3), "after", kv.NoSync)
				}
				set("k0100", "after", kv.Sync)
				fs.arm(fs.count()) // the machine goes down, the store open
				_ = db.Close()     // fails: the power is off
				mem.ResetToSyncedState()
				opts.FS = mem
				for pass := range 2 {
					got, err := readDirOpts(mem, "db", opts)
					if err != nil {
						t.Fatalf("pass %d: reopen: %v", pass, err)
					}
					if d := diffMaps(got, want); d != "" {
						t.Fatalf("pass %d: %s", pass, d)
					}
				}
			})
		}
	}
}

// TestCrash_IngestThenWrites cuts the power at every filesystem change
// of an Ingest into a store whose memtable holds writes and of the Sync
// writes after it: the reopened store holds the state after the last
// call acknowledged, or after the one in flight.
func TestCrash_IngestThenWrites(t *testing.T) {
	run := func(fs *crashFS, db *kv.DB, want map[string]string) []map[string]string {
		states := []map[string]string{maps.Clone(want)}
		next := maps.Clone(want)
		maps.Copy(next, keyRange("k", 20, 40, "ing"))
		states = append(states, next)
		if db.Ingest([]string{"ext/t.sst"}) != nil {
			return states
		}
		for i := range 10 {
			next := maps.Clone(states[len(states)-1])
			k := fmt.Sprintf("k%04d", 25+i*3)
			next[k] = "after"
			states = append(states, next)
			if db.Set([]byte(k), []byte("after"), kv.Sync) != nil {
				return states
			}
		}
		return states
	}
	fixture := func() (*crashFS, *kv.DB, int, map[string]string) {
		fs := newCrashFS(vfs.NewStrictMem())
		db, err := kv.Open("db", reopenOpts(fs))
		must(t, err)
		want := keyRange("k", 0, 30, "before")
		for k, v := range want {
			must(t, db.Set([]byte(k), []byte(v), kv.Sync))
		}
		writeExternal(t, fs, "ext/t.sst", keyRange("k", 20, 40, "ing"), sstable.WriterOptions{})
		syncMemDir(t, fs, "ext")
		return fs, db, fs.count(), want
	}
	fs, db, base, want := fixture()
	if states := run(fs, db, want); len(states) != 12 {
		t.Fatalf("without a crash: %d states, want 12", len(states))
	}
	total := fs.count() - base
	must(t, db.Close())
	for k := range total {
		fs, db, base, want := fixture()
		fs.arm(base + k)
		states := run(fs, db, want)
		_ = db.Close() // fails: the power is off
		crashAndCheck(t, fs, fmt.Sprintf("crash %d of %d operations into the Ingest and writes", k, total),
			states[max(0, len(states)-2):]...)
	}
	t.Logf("%d crash points", total)
}

// TestCrash_IngestUnsyncedTable ingests a table whose writer never
// synced it (its file's Sync does nothing), then cuts the power: Ingest
// synced the table it linked, so the reopened store holds its keys.
func TestCrash_IngestUnsyncedTable(t *testing.T) {
	mem := vfs.NewStrictMem()
	opts := reopenOpts(mem)
	db, err := kv.Open("db", opts)
	must(t, err)
	must(t, db.Set([]byte("a"), []byte("before"), kv.Sync))
	ext := keyRange("k", 0, 50, "ing")
	writeExternal(t, noSyncFS{mem}, "ext/t.sst", ext, sstable.WriterOptions{})
	syncMemDir(t, mem, "ext")
	must(t, db.Ingest([]string{"ext/t.sst"}))
	mem.SetIgnoreSyncs(true) // the machine goes down, the store open
	_ = db.Close()
	mem.ResetToSyncedState()
	mem.SetIgnoreSyncs(false)
	want := maps.Clone(ext)
	want["a"] = "before"
	got, err := readDirOpts(mem, "db", opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if d := diffMaps(got, want); d != "" {
		t.Fatal(d)
	}
}

// noSyncFS creates files whose Sync does nothing, as a writer that never
// syncs leaves them.
type noSyncFS struct{ vfs.FS }

type noSyncFile struct{ vfs.File }

func (noSyncFile) Sync() error { return nil }

func (fs noSyncFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}
