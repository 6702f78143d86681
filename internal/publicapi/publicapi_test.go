package publicapi

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// modulePath is the module the public packages belong to.
const modulePath = "github.com/bloomkv/bloomkv"

// publicPackages are the packages a user may import, relative to the module
// root.
var publicPackages = []string{
	"bloompolicy",
	"bloompolicy/pebbleadapter",
	"sstable",
	"memtable",
	"compaction",
	"kv",
}

// moduleRoot is the checkout this test runs in, two levels up.
func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := vfs.Default.PathDir(vfs.Default.PathDir(wd))
	if _, err := vfs.Default.Stat(vfs.Default.PathJoin(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at the module root %s: %v", root, err)
	}
	return root
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	f, err := vfs.Default.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return data
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatalf("writing %s: %v", name, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// sourceFile is one parsed Go file of a public package.
type sourceFile struct {
	name string // relative to the module root
	file *ast.File
}

// parsePackage parses the Go files of the package in dir (relative to root):
// the test files when tests is true, the others otherwise.
func parsePackage(t *testing.T, root, dir string, tests bool) []sourceFile {
	t.Helper()
	names, err := vfs.Default.List(vfs.Default.PathJoin(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []sourceFile
	fset := token.NewFileSet()
	for _, n := range names {
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") != tests {
			continue
		}
		name := path.Join(dir, n)
		f, err := parser.ParseFile(fset, name, readFile(t, vfs.Default.PathJoin(root, name)), parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sourceFile{name, f})
	}
	if len(out) == 0 && !tests {
		t.Fatalf("package %s has no Go files", dir)
	}
	return out
}

// internalImports maps the names under which f imports internal packages to
// their paths.
func internalImports(f *ast.File) map[string]string {
	m := make(map[string]string)
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !strings.HasPrefix(p, modulePath+"/internal/") {
			continue
		}
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		m[name] = p
	}
	return m
}

// TestExportedAPI_NamesNoInternalType checks that the exported declarations
// of the public packages (function and method signatures, exported struct
// fields and interface methods, declared types of variables and constants)
// spell no type of an internal package: each such type is re-exported by an
// alias (type InternalKey = base.InternalKey), which the signatures use, so
// a user in another module can name everything they take and return. The
// alias declarations themselves are what re-exports, so they are skipped;
// so are variables copied from internal values (var ErrCorruption =
// base.ErrCorruption), whose types the external program names.
func TestExportedAPI_NamesNoInternalType(t *testing.T) {
	root := moduleRoot(t)
	for _, pkg := range publicPackages {
		for _, sf := range parsePackage(t, root, pkg, false) {
			internal := internalImports(sf.file)
			if len(internal) == 0 {
				continue
			}
			check := func(what string, n ast.Node) {
				if n == nil {
					return
				}
				ast.Inspect(n, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if x, ok := sel.X.(*ast.Ident); ok && internal[x.Name] != "" {
						t.Errorf("%s: %s names %s.%s, which another module cannot import: use an alias of %s",
							sf.name, what, x.Name, sel.Sel.Name, pkg)
					}
					return true
				})
			}
			for _, decl := range sf.file.Decls {
				checkDecl(decl, check)
			}
		}
	}
}

// checkDecl passes the type expressions of decl that a user sees to check.
func checkDecl(decl ast.Decl, check func(what string, n ast.Node)) {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() || (d.Recv != nil && !exportedReceiver(d.Recv)) {
			return
		}
		check("func "+d.Name.Name, d.Type)
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() && !s.Assign.IsValid() {
					check("type "+s.Name.Name, exportedPart(s.Type))
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						check(n.Name, s.Type)
						break
					}
				}
			}
		}
	}
}

// exportedReceiver reports whether a method's receiver type is exported.
func exportedReceiver(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if idx, ok := t.(*ast.IndexExpr); ok {
		t = idx.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

// exportedPart returns a type expression without the unexported fields and
// methods of structs and interfaces, which users never see.
func exportedPart(typ ast.Expr) ast.Node {
	var fields *ast.FieldList
	switch t := typ.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return typ
	}
	visible := &ast.FieldList{}
	for _, f := range fields.List {
		keep := len(f.Names) == 0 // embedded
		for _, n := range f.Names {
			keep = keep || n.IsExported()
		}
		if keep {
			visible.List = append(visible.List, f)
		}
	}
	return visible
}

// TestExamples_ImportNoInternal checks that every file of Examples in the
// public packages, and the external program, imports no internal package:
// an Example shows code a user can write.
func TestExamples_ImportNoInternal(t *testing.T) {
	root := moduleRoot(t)
	files := parsePackage(t, root, "internal/publicapi/testdata/extmod", false)
	for _, pkg := range publicPackages {
		examples := 0
		for _, sf := range parsePackage(t, root, pkg, true) {
			if hasExample(sf.file) {
				files = append(files, sf)
				examples++
			}
		}
		if examples == 0 {
			t.Errorf("package %s has no Example: each public package shows its use", pkg)
		}
	}
	for _, sf := range files {
		for _, p := range internalImports(sf.file) {
			t.Errorf("%s imports %s, which a user's code cannot", sf.name, p)
		}
	}
}

func hasExample(f *ast.File) bool {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
			return true
		}
	}
	return false
}

// TestExternalModule builds testdata/extmod in a module of its own that
// requires this checkout (a replace directive), runs it and compares its
// output with testdata/extmod/want.txt. It needs the go command and the
// module cache this module builds from (no network once `go mod download`
// has run); -short skips it.
func TestExternalModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a separate module with the go command")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	root := moduleRoot(t)
	dir := t.TempDir()
	gomod := "module example.com/bloomkvuser\n\ngo 1.25.0\n\n" +
		"require " + modulePath + " v0.0.0-00010101000000-000000000000\n\n" +
		"replace " + modulePath + " => " + root + "\n"
	writeFile(t, vfs.Default.PathJoin(dir, "go.mod"), []byte(gomod))
	writeFile(t, vfs.Default.PathJoin(dir, "go.sum"), readFile(t, vfs.Default.PathJoin(root, "go.sum")))
	writeFile(t, vfs.Default.PathJoin(dir, "main.go"), readFile(t, "testdata/extmod/main.go"))

	cmd := exec.Command(goCmd, "run", ".")
	cmd.Dir = dir
	// -mod=mod lets the go command complete the new module's requirements
	// from the checkout's go.mod and go.sum; the module cache and proxy
	// settings are the environment's.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod "+os.Getenv("GOFLAGS"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go run in %s: %v\n%s", dir, err, stderr.String())
	}
	want := readFile(t, "testdata/extmod/want.txt")
	if got := stdout.Bytes(); !bytes.Equal(got, want) {
		t.Errorf("the external program printed\n%s\nwant (testdata/extmod/want.txt)\n%s", got, want)
	}
}
