package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

func TestDBLevel_Derive(t *testing.T) {
	l := dbLevel{Keys: 100, FilterBytes: 125,
		Lookups: lookupCounts{FilterNegatives: 99, FilterTruePositives: 7, FilterFalsePositives: 1}}
	l.derive()
	if float64(l.BitsPerKey) != 10 || math.Abs(float64(l.FPR)-0.01) > 1e-12 {
		t.Errorf("got %v bits/key and FPR %v, want 10 and 0.01", l.BitsPerKey, l.FPR)
	}

	empty := dbLevel{}
	empty.derive()
	if !math.IsNaN(float64(empty.BitsPerKey)) || !math.IsNaN(float64(empty.FPR)) {
		t.Errorf("an empty level got %v bits/key and FPR %v, want neither", empty.BitsPerKey, empty.FPR)
	}
}

// TestDBGet_ReportsEachKey runs db get over keys present and absent: the
// ones found go to stdout as KEY<tab>VALUE in the order given, each missing
// one gets its own line on stderr, and the status is 1 if any is missing.
func TestDBGet_ReportsEachKey(t *testing.T) {
	dir := vfs.Default.PathJoin(t.TempDir(), "store")
	for _, kv := range [][2]string{{"a", "1"}, {"b", "two words"}, {"c", "tab\there"}} {
		runCLI(t, 0, "db", "set", kv[0], kv[1], "--dir", dir)
	}
	tests := []struct {
		keys           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"a"}, 0, "a\t1\n", ""},
		{[]string{"c", "a", "b"}, 0, "c\t\"tab\\there\"\na\t1\nb\ttwo words\n", ""},
		{[]string{"a", "b", "missing"}, 1, "a\t1\nb\ttwo words\n", "bloomkv: get missing: not found\n"},
		{[]string{"x", "a", "y"}, 1, "a\t1\n", "bloomkv: get x: not found\nbloomkv: get y: not found\n"},
		{[]string{"x"}, 1, "", "bloomkv: get x: not found\n"},
	}
	for _, tc := range tests {
		args := append([]string{"db", "get", "--dir", dir}, tc.keys...)
		stdout, stderr := runCLI(t, tc.code, args...)
		if stdout != tc.stdout || stderr != tc.stderr {
			t.Errorf("get %q: stdout %q, stderr %q; want %q and %q", tc.keys, stdout, stderr, tc.stdout, tc.stderr)
		}
	}
}

// runCLI runs the command line args, checks its exit status and returns
// what it printed.
func runCLI(t *testing.T, wantCode int, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), args, &out, &errOut); code != wantCode {
		t.Fatalf("bloomkv %q exited %d, want %d; stderr: %s", args, code, wantCode, errOut.String())
	}
	return out.String(), errOut.String()
}

// TestDBVerbose_LogsEvents checks that db --verbose logs the store's
// events on stderr, and that without it none is logged.
func TestDBVerbose_LogsEvents(t *testing.T) {
	dir := vfs.Default.PathJoin(t.TempDir(), "store")
	_, stderr := runCLI(t, 0, "db", "set", "a", "1", "--dir", dir, "--verbose")
	if !strings.Contains(stderr, "bloomkv: event: WAL created: ") {
		t.Errorf("db set --verbose on a new store: stderr %q, want a WAL created event", stderr)
	}
	if _, stderr := runCLI(t, 0, "db", "set", "b", "2", "--dir", dir); stderr != "" {
		t.Errorf("db set without --verbose: stderr %q", stderr)
	}
}

// TestDB_ReadCommandsChangeNoFile runs get, scan, metrics, disk-usage and
// checkpoint on a store whose last writes are in its WAL alone: each
// reads them, and none changes, adds or removes a file of the store.
func TestDB_ReadCommandsChangeNoFile(t *testing.T) {
	dir := vfs.Default.PathJoin(t.TempDir(), "store")
	runCLI(t, 0, "db", "set", "a", "1", "--dir", dir)
	runCLI(t, 0, "db", "set", "b", "2", "--dir", dir)
	before := dirContents(t, dir)
	if stdout, _ := runCLI(t, 0, "db", "get", "a", "b", "--dir", dir); stdout != "a\t1\nb\t2\n" {
		t.Errorf("get: %q", stdout)
	}
	if stdout, _ := runCLI(t, 0, "db", "scan", "--dir", dir); stdout != "a\t1\nb\t2\n" {
		t.Errorf("scan: %q", stdout)
	}
	runCLI(t, 0, "db", "metrics", "--dir", dir)
	runCLI(t, 0, "db", "disk-usage", "--dir", dir)
	runCLI(t, 0, "db", "checkpoint", vfs.Default.PathJoin(t.TempDir(), "ckpt"), "--dir", dir)
	after := dirContents(t, dir)
	for name, data := range before {
		if got, ok := after[name]; !ok || got != data {
			t.Errorf("%s changed or removed by the read commands", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s created by the read commands", name)
		}
	}
}

// dirContents returns the contents of each file of dir but LOCK.
func dirContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(vfs.Default.PathJoin(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}
