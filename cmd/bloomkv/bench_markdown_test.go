package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// TestBench_Markdown runs bench --pebble --markdown on small stores and
// checks the page: the command line that makes it again, the machine and
// Go version but no load average, the headline table of each engine with
// its own filter, the report's tables as Markdown, and the write modes
// with their promises, times and ratios to Pebble.
func TestBench_Markdown(t *testing.T) {
	page := filepath.Join(t.TempDir(), "results.md")
	args := []string{"bench", "--keys", "6000", "--lookups", "1000", "--memtable", "32KiB", "--table-size", "32KiB",
		"--l1-size", "64KiB", "--cache", "1MiB", "--pebble", "--dir", t.TempDir(), "--markdown", page, "--rounds", "1"}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	f, err := vfs.Default.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	md := string(data)
	for _, want := range []string{
		"`go run ./cmd/bloomkv bench --cache 1MiB --dir ", "--keys 6000 --l1-size 64KiB --lookups 1000 --markdown ",
		"--memtable 32KiB --pebble --rounds 1 --table-size 32KiB` on ", runtime.Version(),
		"## Headline: each engine with its own filter",
		"| filter FPR, absent keys |", "| filter memory, bits per key |", "| ns per absent lookup |",
		"| config | shape | keys | ns/op |", "| --- | --- | ---: |",
		"| bloomkv, bloompolicy 1.00% | settled | 6000 |",
		"## bloomkv ÷ Pebble, ns per lookup, same filter", "## Per level, bloomkv, no filter (per lookup, absent / present keys)",
		"| settled | L0 | 3 |",
		writeModesTitle, "6000 keys NoSync, then 1000 Sync into another store", "over 1 rounds",
		"| mode | promise after a process crash | ns per NoSync Set | ÷ Pebble | ns per Sync Set | ÷ Pebble |",
		"| bloomkv, default | survives: ", "| bloomkv, BackgroundWALWrites | a prefix survives: ",
		"| Pebble v1.1.5 | a prefix survives: ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "load average") {
		t.Error("page quotes the load average, which no rerun reproduces")
	}
}

func TestTable_Markdown(t *testing.T) {
	tb := newTable("name", ">n")
	tb.add("a|b", "1")
	var b strings.Builder
	if err := tb.markdown(&b); err != nil {
		t.Fatal(err)
	}
	if want := "| name | n |\n| --- | ---: |\n| a\\|b | 1 |\n"; b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
