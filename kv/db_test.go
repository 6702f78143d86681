package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/pebble/vfs"
)

// openMem opens a DB in a fresh in-memory filesystem.
func openMem(t testing.TB, o *Options) (*DB, vfs.FS) {
	t.Helper()
	fs := vfs.NewMem()
	if o == nil {
		o = &Options{}
	}
	o.FS = fs
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	return d, fs
}

// waitIdle waits until no flush or compaction runs or is due
// (DB.WaitIdle), to see the shape background work settles on, and fails
// the test on a background error.
func waitIdle(t testing.TB, d *DB) {
	t.Helper()
	if err := d.WaitIdle(context.Background()); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
}

func mustGet(t testing.TB, d *DB, key, want string) {
	t.Helper()
	v, err := d.Get([]byte(key))
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if string(v) != want {
		t.Fatalf("Get(%q) = %q, want %q", key, v, want)
	}
}

func mustNotFind(t testing.TB, d *DB, key string) {
	t.Helper()
	if v, err := d.Get([]byte(key)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
	}
}

// TestOpen_InvalidOptions rejects bad options before touching the disk.
func TestOpen_InvalidOptions(t *testing.T) {
	fs := vfs.NewMem()
	_, err := Open("db", &Options{FS: fs, MemTableSize: -5})
	if err == nil || !strings.Contains(err.Error(), "MemTableSize") {
		t.Fatalf("err = %v", err)
	}
	if _, err := fs.Stat("db"); err == nil {
		t.Fatal("Open with invalid options created the directory")
	}
}

// TestOpen_CreatesDir creates missing parent directories.
func TestOpen_CreatesDir(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("a/b/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	if _, err := fs.Stat("a/b/db/CURRENT"); err != nil {
		t.Fatal(err)
	}
}

// TestOpen_EmptyDirname refuses an empty directory name with a clear
// error and creates nothing.
func TestOpen_EmptyDirname(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("", &Options{FS: fs})
	if err == nil || !strings.Contains(err.Error(), "kv: Open: empty directory name") {
		t.Fatalf("Open(\"\") = %v, %v; want an error naming the empty directory name", d, err)
	}
	if names, err := fs.List(""); err == nil && len(names) != 0 {
		t.Fatalf("Open(\"\") created %v", names)
	}
}

// TestOpen_Twice refuses a second Open of a directory in use, and allows it
// after Close.
func TestOpen_Twice(t *testing.T) {
	d, fs := openMem(t, nil)
	_, err := Open("db", &Options{FS: fs})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open: err = %v", err)
	}
	if err := d.Set([]byte("k"), []byte("v"), NoSync); err != nil {
		t.Fatalf("first DB broken by second Open: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	mustGet(t, d, "k", "v")
}

// TestOpen_TwiceUnderAnotherPath opens a store on the disk, then again
// through a symbolic link to its directory, from the same process: the
// second Open is refused (the LOCK file's fcntl lock does not conflict
// within a process, and vfs.Default tells locks by path), the first DB
// keeps working, and after its Close the link opens the store.
func TestOpen_TwiceUnderAnotherPath(t *testing.T) {
	dir := t.TempDir()
	path, link := filepath.Join(dir, "db"), filepath.Join(dir, "link")
	d, err := Open(path, &Options{FS: vfs.Default})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	for _, p := range []string{link, path} {
		if d2, err := Open(p, &Options{FS: vfs.Default}); err == nil || !strings.Contains(err.Error(), "in use") {
			if err == nil {
				d2.Close()
			}
			t.Fatalf("second Open through %s: err = %v", p, err)
		}
	}
	if err := d.Set([]byte("k"), []byte("v"), Sync); err != nil {
		t.Fatalf("first DB broken by the second Opens: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = Open(link, &Options{FS: vfs.Default})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	mustGet(t, d, "k", "v")
}

// TestDB_ErrClosed checks every method after Close.
func TestDB_ErrClosed(t *testing.T) {
	d, _ := openMem(t, nil)
	must(t, d.Set([]byte("a"), []byte("1"), NoSync))
	it, _ := d.NewIter(nil)
	s := d.NewSnapshot()
	// Close closes the store and reports what was left open.
	if err := d.Close(); !errors.Is(err, ErrLeaked) || !strings.Contains(err.Error(), "(iterators: 1, snapshots: 1)") {
		t.Fatalf("Close with an iterator and a snapshot open: %v, want ErrLeaked", err)
	}
	b := d.NewBatch()
	must(t, b.Set([]byte("x"), nil))
	_, getErr := d.Get([]byte("a"))
	_, iterErr := d.NewIter(nil)
	_, snapGetErr := s.Get([]byte("a"))
	_, snapIterErr := s.NewIter(nil)
	_, lateSnapErr := d.NewSnapshot().Get([]byte("a"))
	errs := map[string]error{
		"Set":             d.Set([]byte("a"), nil, Sync),
		"Delete":          d.Delete([]byte("a"), Sync),
		"DeleteRange":     d.DeleteRange([]byte("a"), []byte("b"), Sync),
		"Apply":           d.Apply(b, NoSync),
		"Get":             getErr,
		"NewIter":         iterErr,
		"Flush":           d.Flush(),
		"Compact":         d.Compact(nil, nil),
		"Close":           d.Close(),
		"Snapshot.Get":    snapGetErr,
		"Snapshot.Iter":   snapIterErr,
		"Snapshot.Close":  s.Close(),
		"late snapshot":   lateSnapErr,
		"Iterator.Error":  func() error { it.First(); return it.Error() }(),
		"Iterator.Close":  it.Close(),
		"Iterator.Close2": it.Close(),
	}
	for name, err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if it.Valid() {
		t.Error("iterator valid after Close")
	}
	_ = d.Metrics() // must not panic
}

// TestDB_ErrClosed_PositionedIterator checks an iterator left on a key
// at Close: its Error says ErrClosed at once, as Error's documentation
// promises, where it used to say nothing until the next move; it still
// shows the key it was at (from a table and from the memtable), and its
// next move finds nothing.
func TestDB_ErrClosed_PositionedIterator(t *testing.T) {
	d, _ := openMem(t, nil)
	must(t, d.Set([]byte("a"), []byte("1"), NoSync))
	must(t, d.Flush())
	must(t, d.Set([]byte("b"), []byte("2"), NoSync))
	fromTable, err := d.NewIter(nil)
	must(t, err)
	fromMem, err := d.NewIter(nil)
	must(t, err)
	if !fromTable.First() || !fromMem.Last() {
		t.Fatalf("First %v, Last %v before Close", fromTable.Error(), fromMem.Error())
	}
	if err := d.Close(); !errors.Is(err, ErrLeaked) {
		t.Fatalf("Close with two iterators open: %v, want ErrLeaked", err)
	}
	for _, tc := range []struct {
		it         *Iterator
		key, value string
		next       func(*Iterator) bool
	}{{fromTable, "a", "1", (*Iterator).Next}, {fromMem, "b", "2", (*Iterator).Prev}} {
		if !errors.Is(tc.it.Error(), ErrClosed) {
			t.Errorf("at %q: Error after the DB's Close = %v, want ErrClosed", tc.key, tc.it.Error())
		}
		if !tc.it.Valid() || string(tc.it.Key()) != tc.key || string(tc.it.Value()) != tc.value {
			t.Errorf("at %q: after the DB's Close shows %v %q=%q", tc.key, tc.it.Valid(), tc.it.Key(), tc.it.Value())
		}
		if tc.next(tc.it) || tc.it.Valid() || tc.it.Key() != nil {
			t.Errorf("at %q: a move after the DB's Close found %q", tc.key, tc.it.Key())
		}
		if !errors.Is(tc.it.Error(), ErrClosed) || !errors.Is(tc.it.Close(), ErrClosed) {
			t.Errorf("at %q: after a move, Error %v, Close %v, want ErrClosed", tc.key, tc.it.Error(), tc.it.Close())
		}
	}
}

// TestDB_Limits refuses oversized writes without losing anything.
func TestDB_Limits(t *testing.T) {
	d, _ := openMem(t, nil)
	defer mustClose(t, d)
	must(t, d.Set([]byte("keep"), []byte("me"), Sync))
	if err := d.Set(make([]byte, MaxKeySize+1), nil, Sync); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("big key: %v", err)
	}
	if err := d.Delete(make([]byte, MaxKeySize+1), Sync); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("big key delete: %v", err)
	}
	if err := d.Set([]byte("k"), make([]byte, MaxValueSize+1), Sync); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("big value: %v", err)
	}
	b := d.NewBatch()
	must(t, b.Set([]byte("partial"), []byte("no")))
	if err := b.Set(make([]byte, MaxKeySize+1), nil); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("big key in a batch: %v", err)
	}
	if err := d.Apply(b, Sync); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("spoiled batch: %v", err)
	}
	mustNotFind(t, d, "partial")
	mustGet(t, d, "keep", "me")
	if err := d.Apply(nil, Sync); err == nil {
		t.Fatal("Apply(nil) succeeded")
	}
	big := make([]byte, MaxKeySize)
	if err := d.Set(big, []byte("edge"), NoSync); err != nil {
		t.Fatalf("key of MaxKeySize: %v", err)
	}
	mustGet(t, d, string(big), "edge")
}

// TestDB_GetReturnsCopy lets the caller modify what Get returned.
func TestDB_GetReturnsCopy(t *testing.T) {
	d, _ := openMem(t, nil)
	defer mustClose(t, d)
	must(t, d.Set([]byte("k"), []byte("value"), NoSync))
	v, _ := d.Get([]byte("k"))
	copy(v, "XXXXX")
	mustGet(t, d, "k", "value")
	must(t, d.Flush())
	v, _ = d.Get([]byte("k"))
	copy(v, "YYYYY")
	mustGet(t, d, "k", "value")
}

// TestDB_Reopen keeps Sync writes, and NoSync writes across a clean Close,
// including writes spread over flushed tables and several WALs.
func TestDB_Reopen(t *testing.T) {
	for _, wo := range []*WriteOptions{Sync, NoSync} {
		t.Run(fmt.Sprintf("sync=%v", wo.Sync), func(t *testing.T) {
			o := &Options{MemTableSize: 8 << 10}
			d, _ := openMem(t, o)
			for i := 0; i < 2000; i++ {
				if err := d.Set(fmt.Appendf(nil, "key%05d", i), fmt.Appendf(nil, "v%d", i), wo); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 2000; i += 3 {
				must(t, d.Delete(fmt.Appendf(nil, "key%05d", i), wo))
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			for round := 0; round < 2; round++ {
				d, err := Open("db", o)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 2000; i++ {
					k := fmt.Sprintf("key%05d", i)
					if i%3 == 0 {
						mustNotFind(t, d, k)
					} else {
						mustGet(t, d, k, fmt.Sprintf("v%d", i))
					}
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestDB_SequenceNumbersSurviveReopen keeps new writes newer than
// recovered ones, also after the WAL was flushed away.
func TestDB_SequenceNumbersSurviveReopen(t *testing.T) {
	o := &Options{DisableAutomaticCompactions: true}
	d, _ := openMem(t, o)
	must(t, d.Set([]byte("k"), []byte("old"), Sync))
	must(t, d.Flush())
	must(t, d.Close())
	d, _ = Open("db", o)
	must(t, d.Set([]byte("k"), []byte("new"), Sync))
	must(t, d.Flush())
	mustGet(t, d, "k", "new")
	must(t, d.Close())
	d, _ = Open("db", o)
	defer mustClose(t, d)
	mustGet(t, d, "k", "new")
}

// TestRecovery_TornTail drops a torn last WAL record and keeps the rest.
func TestRecovery_TornTail(t *testing.T) {
	fs := vfs.NewStrictMem()
	o := &Options{FS: fs}
	d, err := Open("db", o)
	must(t, err)
	must(t, d.Set([]byte("a"), []byte("1"), Sync))
	must(t, d.Set([]byte("b"), bytes.Repeat([]byte("2"), 100), Sync))
	log := d.commit.log.name
	// The process crashes before Close: nothing Close writes survives.
	fs.SetIgnoreSyncs(true)
	must(t, d.Close())
	fs.ResetToSyncedState()
	fs.SetIgnoreSyncs(false)
	// The crash tore "b"'s record.
	truncateFile(t, fs, "db/"+log, 10)
	d, err = Open("db", o)
	if err != nil {
		t.Fatalf("Open after torn tail: %v", err)
	}
	defer mustClose(t, d)
	mustGet(t, d, "a", "1")
	mustNotFind(t, d, "b")
}

// TestRecovery_Corruption reports damage followed by valid records as
// corruption naming the WAL.
func TestRecovery_Corruption(t *testing.T) {
	o := &Options{}
	d, fs := openMem(t, o)
	must(t, d.Set([]byte("a"), bytes.Repeat([]byte("1"), 50), Sync))
	must(t, d.Set([]byte("b"), []byte("2"), Sync))
	log := d.commit.log.name
	must(t, d.Close())
	data := readFile(t, fs, "db/"+log)
	i := bytes.Index(data, []byte("11111"))
	data[i] ^= 0xff
	writeFile(t, fs, "db/"+log, data)
	_, err := Open("db", o)
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), log) {
		t.Fatalf("Open of a damaged WAL: %v", err)
	}
}

// TestRecovery_MissingTable names a table the MANIFEST needs that is gone.
func TestRecovery_MissingTable(t *testing.T) {
	o := &Options{}
	d, fs := openMem(t, o)
	must(t, d.Set([]byte("a"), []byte("1"), Sync))
	must(t, d.Flush())
	f := d.mu.versions.current.Levels[0][0]
	must(t, d.Close())
	name := base.MakeFilename(base.FileTypeTable, f.FileNum)
	fs.Remove("db/" + name)
	_, err := Open("db", o)
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Open without a table: %v", err)
	}
}

// TestRecovery_ObsoleteFilesDeleted removes leftovers at Open.
func TestRecovery_ObsoleteFilesDeleted(t *testing.T) {
	o := &Options{}
	d, fs := openMem(t, o)
	must(t, d.Set([]byte("a"), []byte("1"), Sync))
	must(t, d.Flush()) // WAL 000001.log is obsolete from here on
	must(t, d.Close())
	for _, name := range []string{"000900.sst", "000901.tmp", "MANIFEST-000902", "000001.log"} {
		writeFile(t, fs, "db/"+name, []byte("junk"))
	}
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	names, _ := fs.List("db")
	for _, name := range names {
		switch name {
		case "000900.sst", "000901.tmp", "MANIFEST-000902", "000001.log":
			t.Errorf("%s survived Open", name)
		}
	}
	mustGet(t, d, "a", "1")
}

func readFile(t testing.TB, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, f)
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// writeFile creates name in fs holding data. It writes a copy: under
// -race, vfs.File.Write may scribble over what it was given to write.
func writeFile(t testing.TB, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Clone(data)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// truncateFile cuts the last drop bytes of the records of the log file
// name, and the zeros a WAL may hold past them.
func truncateFile(t *testing.T, fs vfs.FS, name string, drop int) {
	t.Helper()
	data := readFile(t, fs, name)
	writeFile(t, fs, name, data[:logEnd(t, fs, name)-int64(drop)])
}

// TestRecovery_BadCurrent reports a CURRENT that names no MANIFEST as
// corruption.
func TestRecovery_BadCurrent(t *testing.T) {
	o := &Options{}
	d, fs := openMem(t, o)
	must(t, d.Close())
	writeFile(t, fs, "db/CURRENT", []byte("garbage"))
	if _, err := Open("db", o); !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "CURRENT") {
		t.Fatalf("Open with a bad CURRENT: %v", err)
	}
}

// TestRecovery_ManifestTornTail ignores a half-written last MANIFEST
// record: the edit was never acknowledged.
func TestRecovery_ManifestTornTail(t *testing.T) {
	o := &Options{}
	d, fs := openMem(t, o)
	must(t, d.Set([]byte("a"), []byte("1"), Sync))
	must(t, d.Flush())
	must(t, d.Close())
	name := currentManifest(t, fs)
	data := readFile(t, fs, name)
	writeFile(t, fs, name, append(data, 0x01, 0x02, 0x03))
	d, err := Open("db", o)
	if err != nil {
		t.Fatalf("Open with a torn MANIFEST tail: %v", err)
	}
	defer mustClose(t, d)
	mustGet(t, d, "a", "1")
}

// TestOpen_ErrorIfExists runs Open with ErrorIfExists or ErrorIfNotExists
// against a missing directory, an empty one, a store and a file, and checks
// the outcome, the sentinel, and that a refused Open leaves the directory
// as it was.
func TestOpen_ErrorIfExists(t *testing.T) {
	setups := map[string]func(t *testing.T, fs vfs.FS){
		"missing": func(t *testing.T, fs vfs.FS) {},
		"empty": func(t *testing.T, fs vfs.FS) {
			if err := fs.MkdirAll("db", 0o755); err != nil {
				t.Fatal(err)
			}
		},
		"store": func(t *testing.T, fs vfs.FS) {
			d, err := Open("db", &Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Set([]byte("k"), []byte("v"), Sync); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		},
		"file": func(t *testing.T, fs vfs.FS) {
			f, err := fs.Create("db")
			if err != nil {
				t.Fatal(err)
			}
			must(t, f.Close())
		},
	}
	tests := []struct {
		setup     string
		opts      Options
		wantErr   error  // sentinel, nil for success or wantMsg
		wantMsg   string // a substring of the error
		wantValue bool   // the store opened holds k=v
	}{
		{setup: "missing", opts: Options{ErrorIfNotExists: true}, wantErr: ErrDBDoesNotExist},
		{setup: "empty", opts: Options{ErrorIfNotExists: true}, wantErr: ErrDBDoesNotExist},
		{setup: "store", opts: Options{ErrorIfNotExists: true}, wantValue: true},
		{setup: "file", opts: Options{ErrorIfNotExists: true}, wantMsg: "db"},
		{setup: "missing", opts: Options{ErrorIfExists: true}},
		{setup: "empty", opts: Options{ErrorIfExists: true}},
		{setup: "store", opts: Options{ErrorIfExists: true}, wantErr: ErrDBAlreadyExists},
		{setup: "file", opts: Options{ErrorIfExists: true}, wantMsg: "db is not a directory"},
		{setup: "file", opts: Options{}, wantMsg: "db is not a directory"},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%s/ErrorIfExists=%v/ErrorIfNotExists=%v", tc.setup, tc.opts.ErrorIfExists, tc.opts.ErrorIfNotExists)
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			setups[tc.setup](t, fs)
			before := listTree(t, fs, "db")
			o := tc.opts
			o.FS = fs
			d, err := Open("db", &o)
			if tc.wantErr == nil && tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer mustClose(t, d)
				if tc.wantValue {
					mustGet(t, d, "k", "v")
				}
				return
			}
			if err == nil {
				must(t, d.Close())
				t.Fatalf("Open succeeded, want an error")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("Open: %v, want an error wrapping %v", err, tc.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "kv: ") || !strings.Contains(err.Error(), "db") || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Open: %q, want a kv: error naming the directory and saying %q", err, tc.wantMsg)
			}
			if after := listTree(t, fs, "db"); after != before {
				t.Errorf("a refused Open changed the directory from %q to %q", before, after)
			}
		})
	}
}

// listTree names the files in dir, or says that dir is missing or a file.
func listTree(t *testing.T, fs vfs.FS, dir string) string {
	t.Helper()
	fi, err := fs.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "(missing)"
	case err != nil:
		t.Fatal(err)
	case !fi.IsDir():
		return "(file)"
	}
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// must fails the test on a non-nil error: for the calls whose error the
// test does not itself expect.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mustClose closes c, failing the test on an error, for defer.
func mustClose(t testing.TB, c io.Closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}
