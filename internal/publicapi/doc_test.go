package publicapi

import (
	"go/ast"
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

// TestAliasDocs_NameEveryField checks that the documentation of every alias
// by which a public package re-exports a struct of an internal package
// (type Comparer = base.Comparer) names each exported field of the struct:
// go doc on the public name shows the alias's comment alone, and a user
// must not have to read an internal package to learn the fields.
func TestAliasDocs_NameEveryField(t *testing.T) {
	root := moduleRoot(t)
	fields := internalStructFields(t, root)
	checked := 0
	for _, pkg := range publicPackages {
		for _, sf := range parsePackage(t, root, pkg, false) {
			internal := internalImports(sf.file)
			for _, decl := range sf.file.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					sel, ok := ts.Type.(*ast.SelectorExpr)
					if !ts.Assign.IsValid() || !ok {
						continue
					}
					pkgIdent, ok := sel.X.(*ast.Ident)
					if !ok || internal[pkgIdent.Name] == "" {
						continue
					}
					names := fields[internal[pkgIdent.Name]+"."+sel.Sel.Name]
					if len(names) == 0 {
						continue
					}
					doc := gd.Doc.Text() + ts.Doc.Text()
					for _, f := range names {
						if !containsWord(doc, f) {
							t.Errorf("%s: the documentation of %s.%s does not name its field %s",
								sf.name, pkg, ts.Name.Name, f)
						}
					}
					checked++
				}
			}
		}
	}
	// sstable, memtable and compaction re-export base.Comparer and
	// base.InternalKey at least.
	if checked < 4 {
		t.Fatalf("checked %d aliases of internal structs, want at least 4", checked)
	}
}

// internalStructFields returns the exported field names of every struct
// type of the internal packages, keyed "import/path.Type".
func internalStructFields(t *testing.T, root string) map[string][]string {
	t.Helper()
	dirs, err := vfs.Default.List(vfs.Default.PathJoin(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range dirs {
		dir := "internal/" + d
		if info, err := vfs.Default.Stat(vfs.Default.PathJoin(root, dir)); err != nil || !info.IsDir() {
			continue
		}
		for _, sf := range parsePackage(t, root, dir, false) {
			ast.Inspect(sf.file, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok || !ts.Name.IsExported() {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return true
				}
				key := modulePath + "/" + dir + "." + ts.Name.Name
				for _, f := range st.Fields.List {
					for _, name := range f.Names {
						if name.IsExported() {
							out[key] = append(out[key], name.Name)
						}
					}
				}
				return true
			})
		}
	}
	return out
}

// containsWord reports whether word appears in text as a whole word.
func containsWord(text, word string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], word)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(word)
		if (start == 0 || !isIdentByte(text[start-1])) && (end == len(text) || !isIdentByte(text[end])) {
			return true
		}
		i = end
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
