package kv_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// pcWALBlock is the log block size of LevelDB's log format, and of
// internal/record's.
const pcWALBlock = 32 << 10

// TestPortCorruption_Recovery ports Recovery (LevelDB, RocksDB) and
// goleveldb's CorruptDB_Journal: 100 writes of 1,000 bytes, one byte of
// the WAL's first record (offset 19) and one in its second block damaged.
// LevelDB drops the records of the two damaged blocks and opens with the
// other 36 keys. bloomkv's rule differs: damage followed by a valid record
// of the same log is corruption, not a torn tail, as the writes it would
// drop were acknowledged (the last one synced them all), so Open refuses
// the store naming the WAL, whether it was closed or crashed (the WAL
// then unsealed), and whichever of the two bytes is damaged. The store
// undamaged opens with all 100 keys.
func TestPortCorruption_Recovery(t *testing.T) {
	const n, size = 100, 1000
	for _, crashed := range []bool{false, true} {
		fs := vfs.NewMem()
		db := ldbOpen(t, fs, nil)
		pcBuild(t, db, 0, n, size)
		if c, err := pcScan(t, db, size); c != n || err != nil {
			t.Fatalf("before the damage: %d keys, %v", c, err)
		}
		var store vfs.FS = fs
		if crashed {
			store = copyDir(t, fs, "db")
		}
		ldbClose(t, db)
		wal := pcFile(t, store, ".log")
		for _, offs := range [][]int{{19}, {pcWALBlock + 1000}, {19, pcWALBlock + 1000}} {
			t.Run(fmt.Sprintf("crashed=%v/at%v", crashed, offs), func(t *testing.T) {
				damaged := copyDir(t, store, "db")
				for _, off := range offs {
					pcCorrupt(t, damaged, wal, off, 1)
				}
				pcOpenRefused(t, damaged, nil, wal)
			})
		}
		db = ldbOpen(t, store, nil)
		if c, err := pcScan(t, db, size); c != n || err != nil {
			t.Fatalf("undamaged, crashed=%v: %d keys, %v", crashed, c, err)
		}
		ldbClose(t, db)
	}
}

// TestPortCorruption_TornWALTail is the case LevelDB's rule and bloomkv's
// share: a crash in mid-append leaves the last record of the WAL cut
// short, which Open drops without an error, keeping the others.
func TestPortCorruption_TornWALTail(t *testing.T) {
	const n, size = 20, 100
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	for i := range n {
		ldbSet(t, db, pcKey(i), pcValue(i, size))
	}
	crashed := copyDir(t, fs, "db")
	ldbClose(t, db)
	wal := pcFile(t, crashed, ".log")
	data := readFSFile(t, crashed, "db/"+wal)
	for _, cut := range []int{1, 5, size / 2} {
		store := copyDir(t, crashed, "db")
		pcCut(t, store, wal, len(data)-cut)
		db := ldbOpen(t, store, nil)
		if c, err := pcScan(t, db, size); c != n-1 || err != nil {
			t.Fatalf("WAL cut %d bytes short: %d keys, %v; want %d", cut, c, err, n-1)
		}
		ldbWant(t, db, pcKey(n-1), "NOT_FOUND")
		ldbClose(t, db)
	}
}

// pcCreateErrors returns fs wrapped so that, while the returned flag is
// set, every file creation fails (LevelDB's writable_file_error_), and a
// counter of the creations failed.
func pcCreateErrors(fs vfs.FS) (vfs.FS, *atomic.Bool, *atomic.Int32) {
	var on atomic.Bool
	var failed atomic.Int32
	inj := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if on.Load() && (op == errorfs.OpCreate || op == errorfs.OpReuseForRewrite) {
			failed.Add(1)
			return errorfs.ErrInjected
		}
		return nil
	})
	return errorfs.Wrap(fs, inj), &on, &failed
}

// TestPortCorruption_RecoverWriteError ports RecoverWriteError: Open
// cannot create files. LevelDB's Open always writes a new log and fails;
// bloomkv's Open of a cleanly closed store may continue its WAL and
// MANIFEST, so it may succeed, but an error must be the injected one, and
// either way the store then opens whole. A new store cannot be made.
func TestPortCorruption_RecoverWriteError(t *testing.T) {
	mem := vfs.NewMem()
	fs, on, _ := pcCreateErrors(mem)
	on.Store(true)
	if db, err := kv.Open("db", &kv.Options{FS: fs}); err == nil {
		db.Close()
		t.Fatal("Open of a new store succeeded with every file creation failing")
	} else if !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Open of a new store: %v, want the injected error", err)
	}
	on.Store(false)
	db := ldbOpen(t, fs, nil)
	pcBuild(t, db, 0, 10, 100)
	ldbClose(t, db)
	on.Store(true)
	if db, err := kv.Open("db", &kv.Options{FS: fs}); err == nil {
		if c, err := pcScan(t, db, 100); c != 10 || err != nil {
			t.Fatalf("opened without creating files: %d keys, %v", c, err)
		}
		db.Close()
	} else if !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Open: %v, want the injected error", err)
	}
	on.Store(false)
	db = ldbOpen(t, fs, nil)
	if c, err := pcScan(t, db, 100); c != 10 || err != nil {
		t.Fatalf("reopened: %d keys, %v", c, err)
	}
	ldbClose(t, db)
}

// TestPortCorruption_NewFileErrorDuringWrite ports NewFileErrorDuringWrite:
// once file creation fails, enough writes to switch the memtable (a new
// WAL, an L0 table) must fail, with the injected error; the store then
// reopens with every acknowledged write. LevelDB's writes all set one key;
// here each sets a value of its own, so the reopen shows which survived:
// the last acknowledged, or the one refused (which may reach the WAL).
func TestPortCorruption_NewFileErrorDuringWrite(t *testing.T) {
	const size = 100
	mem := vfs.NewMem()
	fs, on, failed := pcCreateErrors(mem)
	o := kv.FullSizeMemTables(&kv.Options{MemTableSize: 16 << 10})
	db := ldbOpen(t, fs, o)
	on.Store(true)
	acked, refused := -1, -1
	for i := 0; i < 3+int(o.MemTableSize)/size; i++ {
		if err := db.Set([]byte("a"), []byte(pcValue(i, size)), kv.NoSync); err != nil {
			if !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("Set %d: %v, want the injected error", i, err)
			}
			refused = i
			break
		}
		acked = i
	}
	if refused < 0 {
		if err := db.Flush(); !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("%d writes past the memtable, then Flush: %v, want the injected error", acked+1, err)
		}
	}
	if failed.Load() < 1 {
		t.Fatal("no file creation was failed")
	}
	on.Store(false)
	if err := db.Set([]byte("b"), []byte("v"), kv.NoSync); err == nil {
		t.Fatal("a write succeeded after a failed one")
	}
	db.Close() // reports the failure
	db = ldbOpen(t, fs, o)
	got := ldbGet(t, db, "a")
	if got != pcValue(acked, size) && (refused < 0 || got != pcValue(refused, size)) {
		t.Fatalf("a = %s, want write %d's value (the last acknowledged) or %d's (refused)",
			ldbShort(got), acked, refused)
	}
	ldbSet(t, db, "a", "after")
	db = ldbReopen(t, db, fs, o)
	ldbWant(t, db, "a", "after")
	ldbClose(t, db)
}

// pcLogs returns the names of the store's WALs, oldest first.
func pcLogs(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	var logs []string
	for _, n := range ldbFiles(t, fs) {
		if strings.HasSuffix(n, ".log") {
			logs = append(logs, n)
		}
	}
	return logs
}

// TestPortCorruption_EmptyWALInTheMiddle: a store whose first memtables
// wait to be flushed together keeps several WALs, crashed or closed. Any
// of them but the last emptied (a zero-length file) loses acknowledged,
// synced writes; Open must refuse the store naming it, not replay the
// WALs around it (LevelDB would read the empty log as one without
// records and go on).
func TestPortCorruption_EmptyWALInTheMiddle(t *testing.T) {
	const size = 1000
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: 4 << 20}
	db := ldbOpen(t, fs, o)
	n := 0
	for ; len(pcLogs(t, fs)) < 3 && n < 4000; n += 100 {
		pcBuild(t, db, n, n+100, size)
	}
	if len(pcLogs(t, fs)) < 3 {
		t.Skipf("%d writes left WALs %v, want 3 at least", n, pcLogs(t, fs))
	}
	crashed := copyDir(t, fs, "db")
	ldbClose(t, db)
	for name, store := range map[string]vfs.FS{"closed": fs, "crashed": crashed} {
		logs := pcLogs(t, store)
		if len(logs) < 3 {
			t.Fatalf("%s: WALs %v, want 3 at least", name, logs)
		}
		for _, wal := range logs[:len(logs)-1] {
			t.Run(name+"/"+wal, func(t *testing.T) {
				damaged := copyDir(t, store, "db")
				pcCut(t, damaged, wal, 0)
				pcOpenRefused(t, damaged, o, wal)
			})
		}
		db := ldbOpen(t, copyDir(t, store, "db"), o)
		if c, err := pcScan(t, db, size); c != n || err != nil {
			t.Fatalf("%s, undamaged: %d keys, %v; want %d", name, c, err, n)
		}
		ldbClose(t, db)
	}
}
