package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bloomkv/bloomkv/internal/crashtest"
	"github.com/rogpeppe/go-internal/testscript"
)

// mainEnv makes the test binary run main with its arguments, for tests
// of what only main does (the signals it handles).
const mainEnv = "BLOOMKV_TEST_MAIN"

func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(mainEnv); ok {
		main()
	}
	if _, ok := os.LookupEnv(crashtest.ChildEnv); ok {
		// A child of a crash run in this test binary (os.Executable), which
		// runs it as "crash".
		os.Exit(run(context.Background(), []string{"crash"}, os.Stdout, os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"bloomkv": func() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScript runs the end-to-end scripts in testdata/script: each runs the
// real command in a fresh directory and checks its output and exit status.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"cpglob":  cmdCpGlob,
			"corrupt": cmdCorrupt,
		},
	})
}

// cmdCpGlob copies the one file matching a glob pattern: cpglob PATTERN DST.
// Tables are named by number, which scripts cannot know in advance.
func cmdCpGlob(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: cpglob PATTERN DST")
	}
	matches, err := filepath.Glob(ts.MkAbs(args[0]))
	ts.Check(err)
	if len(matches) == 0 {
		ts.Fatalf("cpglob: no file matches %s", args[0])
	}
	data, err := os.ReadFile(matches[0])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), data, 0o644))
}

// cmdCorrupt flips every bit of one byte of a file: corrupt FILE OFFSET,
// where a negative offset counts from the end.
func cmdCorrupt(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: corrupt FILE OFFSET")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	if off < 0 {
		off += len(data)
	}
	if off < 0 || off >= len(data) {
		ts.Fatalf("corrupt: offset %s outside a file of %d bytes", args[1], len(data))
	}
	data[off] ^= 0xff
	ts.Check(os.WriteFile(path, data, 0o644))
}
