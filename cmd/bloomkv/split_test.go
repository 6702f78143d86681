package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/splits"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// writeSplitStore writes keys into a new store in dir under the built-in
// Split named split, flushed to a table, and closes it.
func writeSplitStore(t *testing.T, dir, split string, keys ...string) {
	t.Helper()
	b, err := splits.Named(split)
	if err != nil {
		t.Fatal(err)
	}
	db, err := kv.Open(dir, &kv.Options{FS: vfs.Default, Comparer: b.Comparer()})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := db.Set([]byte(k), []byte("v"), kv.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSplitFlag_DB checks that db commands warn about tables whose filters
// were built under a Split they do not read with, naming the --split that
// does, and that with it they read the filters: no warning, and no table
// skipped in the lookup accounting.
func TestSplitFlag_DB(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeSplitStore(t, dir, "first-slash", "a/1", "a/2", "b/1")
	for _, tc := range []struct {
		args    []string
		warn    string // in stderr; "" for none
		skipped int64
	}{
		{nil, `1 of 1 tables have filters built under Split "bloomkv.first-slash", not on whole keys: read without their filters (--split first-slash reads them)`, 1},
		{[]string{"--split", "first-slash"}, "", 0},
		{[]string{"--split", "user"}, `not under Split "bloomkv.bench.user"`, 1},
	} {
		args := append([]string{"--json", "db", "get", "a/1", "--metrics", "--dir", dir}, tc.args...)
		stdout, stderr := runCLI(t, 0, args...)
		if tc.warn == "" && stderr != "" || !strings.Contains(stderr, tc.warn) {
			t.Errorf("%q: stderr %q, want %q", tc.args, stderr, tc.warn)
		}
		var out struct {
			Metrics dbMetricsOut `json:"metrics"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatal(err)
		}
		if c := out.Metrics.Total.Lookups; c.FilterSkipped != tc.skipped || c.TablesConsidered != 1 {
			t.Errorf("%q: lookups %+v, want %d skipped of 1 table", tc.args, c, tc.skipped)
		}
	}
	if _, stderr := runCLI(t, 2, "db", "get", "a/1", "--dir", dir, "--split", "nope"); !strings.Contains(stderr, "first-slash, user") {
		t.Errorf("unknown --split: stderr %q, want the built-in names", stderr)
	}
}

// TestSplitFlag_SSTable checks the same warning on sstable check, and
// that --split lets it verify the filters.
func TestSplitFlag_SSTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeSplitStore(t, dir, "user", "user/1/a", "user/1/b", "user/2/a")
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) != 1 {
		names, _ := os.ReadDir(dir)
		t.Fatalf("want one table in %s, found %v", dir, names)
	}
	_, stderr := runCLI(t, 0, "sstable", "check", tables[0])
	if !strings.Contains(stderr, "(--split user reads them)") {
		t.Errorf("check without --split: stderr %q, want a warning naming --split user", stderr)
	}
	if _, stderr := runCLI(t, 0, "sstable", "check", tables[0], "--split", "user"); stderr != "" {
		t.Errorf("check --split user: stderr %q, want none", stderr)
	}
}
