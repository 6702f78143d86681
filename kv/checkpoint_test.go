package kv_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// readDir opens the store in dir of fs (which must exist), reads it all
// and closes it.
func readDir(fs vfs.FS, dir string) (map[string]string, error) {
	db, err := kv.Open(dir, &kv.Options{FS: fs, ErrorIfNotExists: true})
	if err != nil {
		return nil, err
	}
	got, err := readAll(db.NewIter)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return got, err
}

// checkDir checks that the store in dir of fs holds want, what naming it
// in the failure.
func checkDir(t *testing.T, fs vfs.FS, dir string, want map[string]string, what string) {
	t.Helper()
	got, err := readDir(fs, dir)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if d := diffMaps(got, want); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
}

// checkpointFixture opens a store in db of fs with tables in several
// levels, flushed and unflushed memtables' writes, and returns it with its
// contents.
func checkpointFixture(t *testing.T, fs vfs.FS, bgWAL bool) (*kv.DB, map[string]string) {
	t.Helper()
	db, err := kv.Open("db", &kv.Options{FS: fs, MemTableSize: 16 << 10, BackgroundWALWrites: bgWAL,
		DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	set := func(from, to int, tag string, opts *kv.WriteOptions) {
		for i := from; i < to; i++ {
			k, v := fmt.Sprintf("k%04d", i), fmt.Sprintf("%s%d", tag, i)
			if err := db.Set([]byte(k), []byte(v), opts); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
	}
	set(0, 300, "a", kv.NoSync)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	set(100, 200, "b", kv.NoSync)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	set(150, 250, "c", kv.NoSync) // in the WAL alone
	if err := db.Delete([]byte("k0001"), kv.Sync); err != nil {
		t.Fatal(err)
	}
	delete(want, "k0001")
	return db, want
}

// TestDB_Checkpoint copies a store with tables and a WAL; the copy opens
// with the same contents, and later writes to the store do not reach it.
func TestDB_Checkpoint(t *testing.T) {
	for _, bgWAL := range []bool{false, true} {
		t.Run(fmt.Sprintf("BackgroundWALWrites=%v", bgWAL), func(t *testing.T) {
			fs := vfs.NewMem()
			db, want := checkpointFixture(t, fs, bgWAL)
			defer db.Close()
			if err := db.Checkpoint("backups/ckpt"); err != nil {
				t.Fatal(err)
			}
			if err := db.Set([]byte("k0002"), []byte("after"), kv.Sync); err != nil {
				t.Fatal(err)
			}
			checkDir(t, fs, "backups/ckpt", want, "checkpoint")
			if _, err := fs.Stat("backups/ckpt.checkpoint-tmp"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("temporary directory left behind: %v", err)
			}
			want["k0002"] = "after"
			checkContents(t, db, want, "the store after the checkpoint")
		})
	}
}

// TestDB_Checkpoint_ConcurrentWrites takes checkpoints while writers
// write: each holds every write acknowledged before it was called, and
// of each writer's later writes a prefix.
func TestDB_Checkpoint_ConcurrentWrites(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs, MemTableSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const writers, perWriter = 3, 400
	var acked [writers]atomic.Int64 // per writer, the writes acknowledged
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				k := fmt.Sprintf("w%d-%04d", w, i)
				if err := db.Set([]byte(k), []byte(k), kv.NoSync); err != nil {
					t.Error(err)
					return
				}
				acked[w].Store(int64(i + 1))
			}
		}()
	}
	checked := 0
	for c := 0; c < 8; c++ {
		var before [writers]int64
		for w := range writers {
			before[w] = acked[w].Load()
		}
		dir := fmt.Sprintf("ckpt%d", c)
		if err := db.Checkpoint(dir); err != nil {
			t.Fatal(err)
		}
		got, err := readDir(fs, dir)
		if err != nil {
			t.Fatal(err)
		}
		for w := range writers {
			n := 0
			for ; n < perWriter; n++ {
				if _, ok := got[fmt.Sprintf("w%d-%04d", w, n)]; !ok {
					break
				}
			}
			if int64(n) < before[w] {
				t.Fatalf("checkpoint %d holds %d writes of writer %d, %d were acknowledged before it", c, n, w, before[w])
			}
			for i := n; i < perWriter; i++ {
				if _, ok := got[fmt.Sprintf("w%d-%04d", w, i)]; ok {
					t.Fatalf("checkpoint %d holds write %d of writer %d but not write %d", c, i, w, n)
				}
			}
			checked++
		}
	}
	wg.Wait()
	if checked != 8*writers {
		t.Fatalf("%d checks ran, want %d", checked, 8*writers)
	}
}

// TestDB_Checkpoint_BadInput refuses an existing directory or file, and
// Checkpoint after Close, writing nothing.
func TestDB_Checkpoint_BadInput(t *testing.T) {
	fs := vfs.NewMem()
	db, want := checkpointFixture(t, fs, false)
	if err := fs.MkdirAll("exists", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create("file")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, dir := range []string{"exists", "file", "db"} {
		err := db.Checkpoint(dir)
		if !errors.Is(err, os.ErrExist) || !strings.Contains(err.Error(), "kv: checkpoint: "+dir) {
			t.Fatalf("Checkpoint(%q) = %v, want an error naming it wrapping os.ErrExist", dir, err)
		}
		if _, err := fs.Stat(dir + ".checkpoint-tmp"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Checkpoint(%q) wrote a temporary directory", dir)
		}
	}
	if names, _ := fs.List("exists"); len(names) != 0 {
		t.Fatalf("existing directory now holds %v", names)
	}
	checkContents(t, db, want, "after the refused checkpoints")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint("late"); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Checkpoint after Close = %v, want ErrClosed", err)
	}
	if _, err := fs.Stat("late"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("Checkpoint after Close wrote its directory")
	}
	got, err := readDir(fs, "db")
	if err != nil || diffMaps(got, want) != "" {
		t.Fatalf("store after the refused checkpoints: %v %s", err, diffMaps(got, want))
	}
}

// TestDB_Checkpoint_EmptyName refuses an empty destination on disk, as
// Open refuses an empty directory name, before it copies anything: it
// used to build the whole copy in the current directory, then fail to
// rename it to "" with an error that named neither.
func TestDB_Checkpoint_EmptyName(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	db, err := kv.Open("db", &kv.Options{FS: vfs.Default})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("a"), []byte("1"), kv.Sync); err != nil {
		t.Fatal(err)
	}
	err = db.Checkpoint("")
	if err == nil || err.Error() != "kv: checkpoint: empty directory name" {
		t.Fatalf("Checkpoint(\"\") = %v, want an error naming the empty directory name", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "db" {
		t.Fatalf("the current directory holds %v, want the store alone", entries)
	}
	if got := pbGet(t, db, "a"); got != "1" {
		t.Fatalf("Get(a) after the refused checkpoint = %q", got)
	}
}

// TestDB_Checkpoint_DuringManifestRollovers takes checkpoints while
// flushes start a new MANIFEST with every edit: the checkpoint reads
// what the MANIFEST's writer changes (under -race, a data race before
// it waited for the writer), and each copy opens with every write
// acknowledged before it.
func TestDB_Checkpoint_DuringManifestRollovers(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs, MemTableSize: 8 << 10, MaxManifestFileSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var acked atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			k := fmt.Sprintf("k%05d", i)
			if err := db.Set([]byte(k), []byte(k), kv.NoSync); err != nil {
				done <- err
				return
			}
			acked.Store(int64(i + 1))
			if i%20 == 19 {
				if err := db.Flush(); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	const checkpoints = 20
	for c := range checkpoints {
		// Each checkpoint after a flush of its own, so that they meet
		// rollovers however the scheduler runs the writer.
		waitForFlushes(t, db, int64(c+1))
		before := acked.Load()
		dir := fmt.Sprintf("ckpt%d", c)
		if err := db.Checkpoint(dir); err != nil {
			t.Fatal(err)
		}
		got, err := readDir(fs, dir)
		if err != nil {
			t.Fatalf("checkpoint %d: %v", c, err)
		}
		for i := range before {
			if k := fmt.Sprintf("k%05d", i); got[k] != k {
				t.Fatalf("checkpoint %d: %s = %q, acknowledged before it", c, k, got[k])
			}
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.Flush.Count < checkpoints {
		t.Fatalf("%d flushes during %d checkpoints: too few MANIFEST rollovers to meet", m.Flush.Count, checkpoints)
	}
}

// waitForFlushes waits until db has made n flushes, failing the test if
// they take more than 10 seconds.
func waitForFlushes(t *testing.T, db *kv.DB, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); db.Metrics().Flush.Count < n; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d flushes after 10 s, want %d", db.Metrics().Flush.Count, n)
		}
	}
}

// TestDB_Checkpoint_TrailingSlash names the target directory with a
// trailing separator: the copy is built beside it, not inside it, and
// opens with the store's contents.
func TestDB_Checkpoint_TrailingSlash(t *testing.T) {
	fs := vfs.NewMem()
	db, want := checkpointFixture(t, fs, false)
	defer db.Close()
	if err := db.Checkpoint("backups/ckpt/"); err != nil {
		t.Fatal(err)
	}
	checkDir(t, fs, "backups/ckpt", want, "checkpoint")
	names, err := fs.List("backups")
	if err != nil || len(names) != 1 || names[0] != "ckpt" {
		t.Fatalf("backups holds %v (%v), want the checkpoint alone", names, err)
	}
	if _, err := fs.Stat("backups/ckpt/.checkpoint-tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary directory inside the checkpoint: %v", err)
	}
}

// checkpointGateFS stalls the first file created in a checkpoint's
// temporary directory once armed: it signals stalled and waits for resume.
type checkpointGateFS struct {
	vfs.FS
	armed           atomic.Bool
	stalled, resume chan struct{}
}

func (fs *checkpointGateFS) Create(name string) (vfs.File, error) {
	if strings.Contains(name, ".checkpoint-tmp") && fs.armed.CompareAndSwap(true, false) {
		close(fs.stalled)
		<-fs.resume
	}
	return fs.FS.Create(name)
}

// TestDB_Checkpoint_SameTargetAtOnce starts a second Checkpoint to a
// target while the first is building it: the second is refused with an
// error wrapping os.ErrExist and touches nothing (the two would build in
// one temporary directory), and the first completes a checkpoint that
// opens with the store's contents.
func TestDB_Checkpoint_SameTargetAtOnce(t *testing.T) {
	fs := &checkpointGateFS{FS: vfs.NewMem(), stalled: make(chan struct{}), resume: make(chan struct{})}
	db, want := checkpointFixture(t, fs, false)
	defer db.Close()
	fs.armed.Store(true)
	first := make(chan error, 1)
	go func() { first <- db.Checkpoint("ckpt") }()
	<-fs.stalled
	if err := db.Checkpoint("ckpt/"); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second Checkpoint while the first writes = %v, want an error wrapping os.ErrExist", err)
	}
	close(fs.resume)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	checkDir(t, fs, "ckpt", want, "checkpoint")
	if err := db.Checkpoint("ckpt"); !errors.Is(err, os.ErrExist) {
		t.Fatalf("Checkpoint to the finished checkpoint = %v, want an error wrapping os.ErrExist", err)
	}
}

// TestDB_Checkpoint_MissingWAL removes the first WAL of a checkpoint,
// whose writes are in no table: Open reports the checkpoint corrupt, as
// it would the store, rather than open it without those writes.
func TestDB_Checkpoint_MissingWAL(t *testing.T) {
	fs := vfs.NewMem()
	db, _ := checkpointFixture(t, fs, false)
	defer db.Close()
	if err := db.Checkpoint("ckpt"); err != nil {
		t.Fatal(err)
	}
	names, err := fs.List("ckpt")
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, name := range names {
		if strings.HasSuffix(name, ".log") {
			logs = append(logs, name)
		}
	}
	slices.Sort(logs)
	if len(logs) == 0 {
		t.Fatalf("the checkpoint holds no WAL: %v", names)
	}
	if err := fs.Remove(fs.PathJoin("ckpt", logs[0])); err != nil {
		t.Fatal(err)
	}
	if _, err := readDir(fs, "ckpt"); !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("Open of a checkpoint missing WAL %s = %v, want an error wrapping ErrCorruption", logs[0], err)
	}
}

// TestDB_Checkpoint_TempNameTaken: a Checkpoint removes what an
// interrupted one left at its temporary name (destDir + ".checkpoint-tmp")
// only when that is an empty directory or one marked as a checkpoint's;
// anything else there is the user's and refuses the Checkpoint with an
// error wrapping os.ErrExist, untouched. It used to remove whatever was
// there: checkpointing a store named "s.checkpoint-tmp" to "s" deleted
// the store itself.
func TestDB_Checkpoint_TempNameTaken(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("s.checkpoint-tmp", &kv.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("k"), []byte("v"), kv.Sync); err != nil {
		t.Fatal(err)
	}
	before, err := fs.List("s.checkpoint-tmp")
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll("u.checkpoint-tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create("u.checkpoint-tmp/notes")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if f, err = fs.Create("f.checkpoint-tmp"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, dest := range []string{"s", "u", "f"} {
		err := db.Checkpoint(dest)
		if !errors.Is(err, os.ErrExist) || !strings.Contains(err.Error(), dest+".checkpoint-tmp") {
			t.Fatalf("Checkpoint(%q) over a %s.checkpoint-tmp of the user's: %v, want os.ErrExist naming it", dest, dest, err)
		}
		if _, err := fs.Stat(dest); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Checkpoint(%q) refused, but wrote it", dest)
		}
	}
	after, err := fs.List("s.checkpoint-tmp")
	slices.Sort(before)
	slices.Sort(after)
	if err != nil || !slices.Equal(after, before) {
		t.Fatalf("the store's directory: %v (%v), was %v", after, err, before)
	}
	if names, err := fs.List("u.checkpoint-tmp"); err != nil || !slices.Equal(names, []string{"notes"}) {
		t.Fatalf("the user's directory: %v (%v)", names, err)
	}
	checkContents(t, db, map[string]string{"k": "v"}, "after the refused checkpoints")

	// Leftovers of interrupted checkpoints, empty or marked, are removed.
	for _, leftover := range [][]string{nil, {"CHECKPOINT-INCOMPLETE", "000004.sst"}} {
		if err := fs.MkdirAll("c.checkpoint-tmp", 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range leftover {
			f, err := fs.Create("c.checkpoint-tmp/" + name)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		if err := db.Checkpoint("c"); err != nil {
			t.Fatalf("Checkpoint over the leftover %v: %v", leftover, err)
		}
		if _, err := fs.Stat("c.checkpoint-tmp"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the leftover %v stayed", leftover)
		}
		names, err := fs.List("c")
		if err != nil || slices.Contains(names, "CHECKPOINT-INCOMPLETE") {
			t.Fatalf("the checkpoint holds %v (%v): its mark stayed", names, err)
		}
		if got, err := readDir(fs, "c"); err != nil || got["k"] != "v" {
			t.Fatalf("the checkpoint: %v, %v", got, err)
		}
		if err := fs.RemoveAll("c"); err != nil {
			t.Fatal(err)
		}
	}
}
