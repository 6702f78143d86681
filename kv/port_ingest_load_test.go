package kv_test

// Scenarios of Pebble v1.1.5's ingest_test.go (TestIngestLoad,
// TestIngestLoadInvalid, TestIngestSortAndVerify, TestIngestLink,
// TestIngestValidation) and testdata/ingest_load and
// testdata/ingest_sort_and_verify, ported to bloomkv's Ingest: what
// tables it refuses, and that a refused Ingest changes nothing.

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// writePortTable writes a table to path of fs from entries, in the order
// given: "k=v" sets k, "k!" deletes it, "k@7=v" sets it at sequence number
// 7 (else 0), "[s,e)" is a range tombstone at sequence number 0.
func writePortTable(t testing.TB, fs vfs.FS, path string, opts sstable.WriterOptions, entries ...string) {
	t.Helper()
	must(t, fs.MkdirAll(fs.PathDir(path), 0o755))
	f, err := fs.Create(path)
	must(t, err)
	w := sstable.NewWriter(f, opts)
	for _, e := range entries {
		if strings.HasPrefix(e, "[") {
			s, end, _ := strings.Cut(strings.Trim(e, "[)"), ",")
			must(t, w.AddRangeDel(sstable.RangeTombstone{Start: []byte(s), End: []byte(end)}))
			continue
		}
		kind, k, v := sstable.KindSet, e, ""
		if strings.HasSuffix(e, "!") {
			kind, k = sstable.KindDelete, strings.TrimSuffix(e, "!")
		} else {
			k, v, _ = strings.Cut(e, "=")
		}
		var seq uint64
		if key, s, ok := strings.Cut(k, "@"); ok {
			k = key
			seq, err = strconv.ParseUint(s, 10, 64)
			must(t, err)
		}
		must(t, w.Add(sstable.MakeInternalKey([]byte(k), sstable.SeqNum(seq), kind), []byte(v)))
	}
	must(t, w.Close())
}

// checkRefused fails unless Ingest(paths) fails with an error prefixed
// "kv: ", containing want and wrapping is (when not nil), leaving the
// store's files, their bytes included, and its contents as they were.
func checkRefused(t *testing.T, db *kv.DB, fs vfs.FS, paths []string, want string, is error, contents map[string]string) {
	t.Helper()
	before := storeFiles(t, fs, "db")
	err := db.Ingest(paths)
	if err == nil || !strings.HasPrefix(err.Error(), "kv: ") || !strings.Contains(err.Error(), want) {
		t.Fatalf("Ingest(%v) = %v, want an error naming %q", paths, err, want)
	}
	if is != nil && !errors.Is(err, is) {
		t.Fatalf("Ingest(%v) = %v, want errors.Is %v", paths, err, is)
	}
	if got := storeFiles(t, fs, "db"); !maps.Equal(got, before) {
		t.Fatalf("Ingest(%v) changed the store's files", paths)
	}
	checkContents(t, db, contents, fmt.Sprintf("after Ingest(%v)", paths))
}

// TestPortIngest_Load ports TestIngestLoad, TestIngestLoadInvalid and
// testdata/ingest_load: a table is refused when it is empty, not a table,
// cut short, of another comparer, or holds a point key or a range
// tombstone above sequence number 0; a table of only range tombstones, or
// of tombstones and sets, is taken.
func TestPortIngest_Load(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs})
	must(t, err)
	want := map[string]string{"z": "store"}
	must(t, db.Set([]byte("z"), []byte("store"), kv.NoSync))

	other := *sstable.DefaultComparer
	other.Name = "other.Comparer"
	writePortTable(t, fs, "ext/empty.sst", sstable.WriterOptions{})
	writeFSFile(t, fs, "ext/invalid.sst", []byte("invalid"))
	writeFSFile(t, fs, "ext/zero.sst", nil)
	writePortTable(t, fs, "ext/cmp.sst", sstable.WriterOptions{Comparer: &other}, "a=1")
	writePortTable(t, fs, "ext/seq.sst", sstable.WriterOptions{}, "a=1", "b@1=2")
	f, err := fs.Create("ext/seqdel.sst")
	must(t, err)
	w := sstable.NewWriter(f, sstable.WriterOptions{})
	must(t, w.AddRangeDel(sstable.RangeTombstone{Start: []byte("a"), End: []byte("b"), Seq: 3}))
	must(t, w.Close())
	writePortTable(t, fs, "ext/whole.sst", sstable.WriterOptions{}, "a=1", "b=2", "c=3")
	whole := readFSFile(t, fs, "ext/whole.sst")
	writeFSFile(t, fs, "ext/short.sst", whole[:len(whole)-5])

	for _, c := range []struct {
		path, want string
		is         error
	}{
		{"ext/empty.sst", "holds no keys", nil},
		{"ext/invalid.sst", "ext/invalid.sst", kv.ErrCorruption},
		{"ext/zero.sst", "ext/zero.sst", kv.ErrCorruption},
		{"ext/short.sst", "ext/short.sst", kv.ErrCorruption},
		{"ext/cmp.sst", "other.Comparer", nil},
		{"ext/seq.sst", "sequence numbers", nil},
		{"ext/seqdel.sst", "sequence numbers", nil},
		{"ext/missing.sst", "ext/missing.sst", nil},
	} {
		checkRefused(t, db, fs, []string{c.path}, c.want, c.is, want)
	}

	// Range tombstones alone, and with points: the table's bounds span
	// both, and the tombstones delete the store's older keys.
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		must(t, db.Set([]byte(k), []byte("old"), kv.NoSync))
		want[k] = "old"
	}
	writePortTable(t, fs, "ext/dels.sst", sstable.WriterOptions{}, "[a,c)")
	writePortTable(t, fs, "ext/mixed.sst", sstable.WriterOptions{}, "[c,e)", "d=new")
	must(t, db.Ingest([]string{"ext/dels.sst", "ext/mixed.sst"}))
	delete(want, "a")
	delete(want, "b")
	delete(want, "c")
	want["d"] = "new"
	checkContents(t, db, want, "after ingesting range tombstones")
	checkReopened(t, db, fs, want)
}

// TestPortIngest_SortAndVerify ports TestIngestSortAndVerify and
// testdata/ingest_sort_and_verify. Pebble sorts the paths itself; bloomkv
// wants them in key order, so unsorted paths are refused like
// overlapping ones (ErrIngestOverlap). A range tombstone's end is
// exclusive: a table may start where another's tombstone ends.
func TestPortIngest_SortAndVerify(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs})
	must(t, err)
	defer mustClose(t, db)
	writePortTable(t, fs, "ext/ab.sst", sstable.WriterOptions{}, "a=1", "b=1")
	writePortTable(t, fs, "ext/bc.sst", sstable.WriterOptions{}, "b=2", "c=2")
	writePortTable(t, fs, "ext/cd.sst", sstable.WriterOptions{}, "c=3", "d=3")
	writePortTable(t, fs, "ext/ef.sst", sstable.WriterOptions{}, "e=4", "f=4")
	writePortTable(t, fs, "ext/del-ac.sst", sstable.WriterOptions{}, "[a,c)")
	writePortTable(t, fs, "ext/del-ad.sst", sstable.WriterOptions{}, "[a,d)")
	empty := map[string]string{}
	for _, paths := range [][]string{
		{"ext/ab.sst", "ext/bc.sst"},               // a shared key
		{"ext/cd.sst", "ext/ab.sst"},               // disjoint, unsorted
		{"ext/ab.sst", "ext/ef.sst", "ext/cd.sst"}, // the last out of order
		{"ext/ab.sst", "ext/ab.sst"},               // the same table twice
		{"ext/del-ad.sst", "ext/cd.sst"},           // c under the tombstone
		{"ext/ef.sst", "ext/del-ac.sst"},           // tombstone before e
	} {
		checkRefused(t, db, fs, paths, paths[len(paths)-1], kv.ErrIngestOverlap, empty)
	}
	must(t, db.Ingest([]string{"ext/del-ac.sst", "ext/cd.sst", "ext/ef.sst"}))
	checkContents(t, db, map[string]string{"c": "3", "d": "3", "e": "4", "f": "4"}, "after ingesting sorted tables")
}

// createFailsFS fails the creation of the store's table files once fail
// is set, and every hard link, so that a copy is tried and fails.
type createFailsFS struct {
	linkFailsFS
	fail    atomic.Bool
	created atomic.Int32
}

func (fs *createFailsFS) Create(name string) (vfs.File, error) {
	if strings.HasPrefix(name, "db/") && strings.HasSuffix(name, ".sst") {
		if fs.created.Add(1) > 2 && fs.fail.Load() {
			return nil, &os.PathError{Op: "create", Path: name, Err: errors.New("injected")}
		}
	}
	return fs.linkFailsFS.Create(name)
}

// TestPortIngest_Link ports TestIngestLink: when linking (here: copying)
// the third of five tables fails, Ingest fails and removes the two copies
// it made; the files given stay in place, and the store is unchanged.
func TestPortIngest_Link(t *testing.T) {
	mem := vfs.NewMem()
	fs := &createFailsFS{linkFailsFS: linkFailsFS{mem}}
	db, err := kv.Open("db", &kv.Options{FS: fs})
	must(t, err)
	defer mustClose(t, db)
	var paths []string
	for i := range 5 {
		p := fmt.Sprintf("ext/%d.sst", i)
		writePortTable(t, mem, p, sstable.WriterOptions{}, fmt.Sprintf("k%d=v", i))
		paths = append(paths, p)
	}
	fs.fail.Store(true)
	checkRefused(t, db, mem, paths, "ext/2.sst", nil, map[string]string{})
	for _, p := range paths {
		if _, err := mem.Stat(p); err != nil {
			t.Fatalf("%s gone after a failed Ingest: %v", p, err)
		}
	}
	fs.fail.Store(false)
	must(t, db.Ingest(paths))
	checkContents(t, db, map[string]string{"k0": "v", "k1": "v", "k2": "v", "k3": "v", "k4": "v"}, "after the Ingest")
}

// TestPortIngest_Validation ports TestIngestValidation (Pebble validates
// the blocks of an ingested table after the fact and reports corruption
// to the listener; bloomkv checks every checksum before the table is
// taken): with each of a sample of bytes of a table flipped in turn,
// Ingest refuses the table with ErrCorruption, or takes it and reads
// every key right.
func TestPortIngest_Validation(t *testing.T) {
	fs := vfs.NewMem()
	var entries []string
	want := map[string]string{}
	for i := range 60 {
		k, v := fmt.Sprintf("key%03d", i), fmt.Sprintf("value%03d", i)
		entries = append(entries, k+"="+v)
		want[k] = v
	}
	writePortTable(t, fs, "ext/t.sst", sstable.WriterOptions{BlockSize: 256}, entries...)
	orig := readFSFile(t, fs, "ext/t.sst")
	stride := 7
	if testing.Short() {
		stride = 41
	}
	refused, taken := 0, 0
	for off := 0; off < len(orig); off += stride {
		damaged := slices.Clone(orig)
		damaged[off] ^= 0x10
		writeFSFile(t, fs, "ext/d.sst", damaged)
		db, err := kv.Open(fmt.Sprintf("db%d", off), &kv.Options{FS: fs})
		must(t, err)
		err = db.Ingest([]string{"ext/d.sst"})
		switch {
		case err == nil:
			checkContents(t, db, want, fmt.Sprintf("byte %d of %d flipped, table taken", off, len(orig)))
			taken++
		case !errors.Is(err, kv.ErrCorruption) && !strings.Contains(err.Error(), "sequence numbers"):
			t.Fatalf("byte %d of %d flipped: Ingest = %v, want ErrCorruption", off, len(orig), err)
		default:
			refused++
		}
		must(t, db.Close())
		must(t, fs.RemoveAll(fmt.Sprintf("db%d", off)))
	}
	t.Logf("%d damaged tables refused, %d taken and read right", refused, taken)
}
