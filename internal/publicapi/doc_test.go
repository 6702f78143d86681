package publicapi

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// TestDocFiles_AllShown checks that every doc.go of the module is one
// package comment: a comment after the package clause (a format drawing,
// say) is not part of the package documentation, so go doc never shows it.
func TestDocFiles_AllShown(t *testing.T) {
	root := moduleRoot(t)
	checked := 0
	var walk func(dir string)
	walk = func(dir string) {
		names, err := vfs.Default.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			p := vfs.Default.PathJoin(dir, name)
			if name == "doc.go" {
				checkDocFile(t, root, p)
				checked++
				continue
			}
			if strings.HasPrefix(name, ".") || name == "testdata" {
				continue
			}
			if info, err := vfs.Default.Stat(p); err == nil && info.IsDir() {
				walk(p)
			}
		}
	}
	walk(root)
	// bloompolicy, pebbleadapter, sstable, memtable, compaction, kv,
	// cmd/bloomkv and the internal packages each have one.
	if checked < 10 {
		t.Fatalf("checked %d doc.go files, want at least 10", checked)
	}
}

// checkDocFile fails the test when the file at p holds a comment outside
// its package comment.
func checkDocFile(t *testing.T, root, p string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, readFile(t, p), parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	rel := strings.TrimPrefix(p, root+"/")
	if f.Doc == nil {
		t.Errorf("%s: no package comment", rel)
		return
	}
	for _, c := range f.Comments {
		if c != f.Doc {
			t.Errorf("%s:%d: a comment outside the package comment, which go doc does not show",
				rel, fset.Position(c.Pos()).Line)
		}
	}
}
