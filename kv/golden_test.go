package kv

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
)

// The golden WALs and MANIFEST in ../testdata/golden (see its README.md)
// pin what recovery must read, and seed the fuzz targets of this package,
// internal/record and internal/manifest. Regenerate them with
//
//	go test ./kv -run Golden -rewrite
const (
	goldenWALDir      = "../testdata/golden/wal"
	goldenManifestDir = "../testdata/golden/manifest"
)

// goldenWALNames are the golden WALs, in replay order.
var goldenWALNames = []string{"000001.log", "000002.log"}

// rewriting reports whether the tests run with -rewrite (the flag the
// datadriven package defines).
func rewriting() bool {
	f := flag.Lookup("rewrite")
	return f != nil && f.Value.String() == "true"
}

// goldenWALs returns the golden WALs' bytes and the store they hold. The
// first WAL holds single writes, deletions and multi-key batches; the
// second continues its sequence numbers. They are kept small, a few KiB,
// so the fuzzer's minimization of inputs derived from them stays quick
// (records spanning blocks are covered by internal/record's own tests).
func goldenWALs(t testing.TB) (wals [][]byte, model map[string]string) {
	rng := rand.New(rand.NewPCG(7, 11))
	model = map[string]string{}
	seq := base.SeqNum(1)
	batches := []int{40, 12}
	for _, n := range batches {
		var buf bytes.Buffer
		w := record.NewWriter(&buf)
		for i := range n {
			var b Batch
			for j := range 1 + rng.IntN(4) {
				k := fmt.Sprintf("key%03d", rng.IntN(80))
				if rng.IntN(5) == 0 {
					must(t, b.Delete([]byte(k)))
					delete(model, k)
					continue
				}
				v := fmt.Sprintf("v%d.%d.%s", seq, j, bytes.Repeat([]byte{'a' + byte(i%26)}, rng.IntN(64)))
				must(t, b.Set([]byte(k), []byte(v)))
				model[k] = v
			}
			b.setSeqNum(seq)
			seq += base.SeqNum(b.Count())
			_, err := w.WriteRecord(b.data)
			must(t, err)
		}
		must(t, w.Flush())
		wals = append(wals, buf.Bytes())
	}
	return wals, model
}

// goldenStore builds, in a new MemFS, the store whose MANIFEST is golden:
// tables flushed and compacted into L0 and deeper levels, deletions
// included, every edit in one MANIFEST. It returns the filesystem, the
// MANIFEST's name and the store's contents.
func goldenStore(t *testing.T) (vfs.FS, string, map[string]string) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, DisableAutomaticCompactions: true, BlockSize: 512, TargetFileSize: 4 << 10}
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	model := map[string]string{}
	for round := range 4 {
		for range 150 {
			k := fmt.Sprintf("m%03d", rng.IntN(400))
			if rng.IntN(6) == 0 {
				must(t, d.Delete([]byte(k), NoSync))
				delete(model, k)
				continue
			}
			v := fmt.Sprintf("r%d.%x", round, rng.Uint64())
			must(t, d.Set([]byte(k), []byte(v), NoSync))
			model[k] = v
		}
		if round == 1 {
			err = d.Compact(nil, nil)
		} else {
			err = d.Flush()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	name := base.MakeFilename(base.FileTypeManifest, d.mu.versions.manifestNum)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return fs, name, model
}

// copyFile copies a file between filesystems.
func copyFile(t testing.TB, from vfs.FS, fromName string, to vfs.FS, toName string) {
	t.Helper()
	data, err := readFS(from, fromName)
	if err != nil {
		t.Fatal(err)
	}
	f, err := to.Create(toName)
	if err == nil {
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

func readFS(fs vfs.FS, name string) (_ []byte, err error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	return io.ReadAll(f)
}

// goldenManifestFiles returns the names in the golden MANIFEST directory:
// the MANIFEST and the tables it names.
func goldenManifestFiles(t testing.TB) (manifestName string, tables []string) {
	names, err := vfs.Default.List(goldenManifestDir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	for _, n := range names {
		switch typ, _, _ := base.ParseFilename(n); typ {
		case base.FileTypeManifest:
			manifestName = n
		case base.FileTypeTable:
			tables = append(tables, n)
		}
	}
	if manifestName == "" {
		t.Fatalf("no MANIFEST in %s", goldenManifestDir)
	}
	return manifestName, tables
}

// TestGolden_WAL checks the golden WALs are what the batch and record
// encoders write, and that Open replays them into the store they hold.
func TestGolden_WAL(t *testing.T) {
	wals, model := goldenWALs(t)
	fs := vfs.NewMem()
	fs.MkdirAll("db", 0o755)
	for i, name := range goldenWALNames {
		path := vfs.Default.PathJoin(goldenWALDir, name)
		if rewriting() {
			if err := vfs.Default.MkdirAll(goldenWALDir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, vfs.Default, path, wals[i])
		}
		got, err := readFS(vfs.Default, path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, wals[i]) {
			t.Fatalf("%s differs from what the encoders write (rerun with -rewrite if the format changed on purpose)", path)
		}
		copyFile(t, vfs.Default, path, fs, "db/"+name)
	}
	checkStoreHolds(t, fs, model)
}

// TestGolden_Manifest checks that Open reads the golden MANIFEST and its
// tables into the store they describe. With -rewrite it regenerates them.
func TestGolden_Manifest(t *testing.T) {
	if rewriting() {
		src, name, model := goldenStore(t)
		vfs.Default.RemoveAll(goldenManifestDir)
		if err := vfs.Default.MkdirAll(goldenManifestDir, 0o755); err != nil {
			t.Fatal(err)
		}
		names, _ := src.List("db")
		for _, n := range names {
			if typ, _, _ := base.ParseFilename(n); typ == base.FileTypeTable || n == name {
				copyFile(t, src, "db/"+n, vfs.Default, vfs.Default.PathJoin(goldenManifestDir, n))
			}
		}
		writeFile(t, vfs.Default, vfs.Default.PathJoin(goldenManifestDir, "contents.txt"), []byte(formatModel(model)))
	}
	manifestName, tables := goldenManifestFiles(t)
	fs := goldenManifestFS(t, manifestName, tables)
	copyFile(t, vfs.Default, vfs.Default.PathJoin(goldenManifestDir, manifestName), fs, "db/"+manifestName)
	want, err := readFS(vfs.Default, vfs.Default.PathJoin(goldenManifestDir, "contents.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// No compactions: the store is read as the golden MANIFEST left it (its
	// L0, with no writes coming, would settle).
	d, err := Open("db", &Options{FS: fs, DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	got, err := iterAll(d)
	if err != nil {
		t.Fatal(err)
	}
	if formatModel(got) != string(want) {
		t.Fatalf("the golden store reads back as\n%s\nwant\n%s", formatModel(got), want)
	}
	if m := d.Metrics(); m.Levels[0].NumFiles == 0 || m.Levels[0].NumFiles == len(tables) {
		t.Fatalf("the golden store should hold tables in L0 and deeper:\n%s", m)
	}
}

// goldenManifestFS returns a MemFS holding the golden tables in db and a
// CURRENT naming manifestName, which the caller writes.
func goldenManifestFS(t testing.TB, manifestName string, tables []string) vfs.FS {
	fs := vfs.NewMem()
	fs.MkdirAll("db", 0o755)
	for _, n := range tables {
		copyFile(t, vfs.Default, vfs.Default.PathJoin(goldenManifestDir, n), fs, "db/"+n)
	}
	writeFile(t, fs, "db/CURRENT", []byte(manifestName+"\n"))
	return fs
}

// checkStoreHolds opens the store in fs and checks it holds model.
func checkStoreHolds(t *testing.T, fs vfs.FS, model map[string]string) {
	t.Helper()
	d, err := Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	got, err := iterAll(d)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, model) {
		t.Fatalf("the store holds\n%s\nwant\n%s", formatModel(got), formatModel(model))
	}
}

// iterAll returns the store's contents by iterating it.
func iterAll(d *DB) (map[string]string, error) {
	it, err := d.NewIter(nil)
	if err != nil {
		return nil, err
	}
	got := map[string]string{}
	for it.First(); it.Valid(); it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		return nil, errors.Join(err, it.Close())
	}
	return got, it.Close()
}

// formatModel prints a store's contents one "key value" line per key,
// sorted.
func formatModel(m map[string]string) string {
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s %s\n", k, m[k])
	}
	return b.String()
}
