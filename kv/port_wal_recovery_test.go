package kv_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// WAL-recovery consequences of the log-format scenarios ported to
// internal/record (port_*_test.go there: Pebble's record tests, LevelDB's
// log_test.cc, goleveldb's journal tests), end to end: a store crashed
// (its files copied while open: a process crash) or closed, its WAL
// changed as the scenario says, then opened.

// pwHdr is the header of a recyclable chunk, the format of every WAL a
// store of this version writes.
const pwHdr = 11

// pwWAL returns the name of the store's newest WAL and its bytes.
func pwWAL(t *testing.T, fs vfs.FS) (string, []byte) {
	t.Helper()
	name := pcFile(t, fs, ".log")
	return name, readFSFile(t, fs, "db/"+name)
}

// pwNum returns the number of WAL name.
func pwNum(t *testing.T, name string) uint32 {
	t.Helper()
	_, num, ok := base.ParseFilename(name)
	if !ok {
		t.Fatalf("%s is not a store's file", name)
	}
	return uint32(num)
}

// pwSettle waits for db's flushes, so that a copy of its files taken
// file by file is one a crash could leave (a MANIFEST copied after a
// table it names was listed is not).
func pwSettle(t *testing.T, db *kv.DB) {
	t.Helper()
	if err := db.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// pwPrefix returns n such that keys pcKey(0..n-1) hold their values
// (value(i)) and no other of the total does: what recovered must be a
// prefix of the writes.
func pwPrefix(t *testing.T, db *kv.DB, total int, value func(int) string) int {
	t.Helper()
	n := 0
	for n < total && ldbGet(t, db, pcKey(n)) == value(n) {
		n++
	}
	for i := n; i < total; i++ {
		if got := ldbGet(t, db, pcKey(i)); got != "NOT_FOUND" {
			t.Fatalf("%d writes recovered, but write %d reads %s: not a prefix", n, i, ldbShort(got))
		}
	}
	return n
}

// TestPortWAL_RecycledStaleTail (Pebble's TestRecycleLog and
// TestInvalidLogNum): a store whose WAL is a recycled file, crashed with
// a few records in it. Past them the file holds the earlier log's
// records, valid for its number; Open replays the new log's records
// alone, every acknowledged write reads, and the store reopens.
func TestPortWAL_RecycledStaleTail(t *testing.T) {
	fs := vfs.NewMem()
	o := kv.FullSizeMemTables(&kv.Options{MemTableSize: 8 << 10})
	db := ldbOpen(t, fs, o)
	value := func(i int) string { return pcValue(i, 300) }
	n, after := 0, -1
	for ; n < 400 && (after < 0 || n < after); n++ {
		ldbSet(t, db, pcKey(n), value(n))
		// The store's first WAL holds no mark of a switch at its start, so
		// a WAL recycled from it has its chunks elsewhere; the second
		// recycled is of a WAL that began with one, as the new log does,
		// and past the new log's last record lies a chunk of the old.
		if after < 0 && db.Metrics().WAL.Recycled > 1 {
			after = n + 5 // a few records into the recycled WAL
		}
	}
	if after < 0 {
		t.Fatal("no WAL was recycled")
	}
	pwSettle(t, db)
	crashed := copyDir(t, fs, "db")
	ldbClose(t, db)
	name, data := pwWAL(t, crashed)
	r := record.NewLogReader(bytes.NewReader(data), name, pwNum(t, name), record.RecyclableFormat)
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	old, off, ok := r.EndedAtLog()
	if !ok || old >= pwNum(t, name) {
		t.Fatalf("%s ends at %d, EndedAtLog %d, %v: want the valid chunks of an earlier log", name, r.End(), old, ok)
	}
	t.Logf("%s: %d bytes of records, then log %d's at %d of %d", name, r.End(), old, off, len(data))
	db = ldbOpen(t, crashed, o)
	if got := pwPrefix(t, db, n+1, value); got != n {
		t.Fatalf("recovered %d of %d writes", got, n)
	}
	db = ldbReopen(t, db, crashed, o)
	if got := pwPrefix(t, db, n+1, value); got != n {
		t.Fatalf("reopened: %d of %d writes", got, n)
	}
	ldbClose(t, db)
}

// TestPortWAL_RecycledUnwrittenBlock: the same store crashed with its
// machine, the recycled WAL's block 1 never written: the file holds the
// earlier log's block there, a middle chunk filling it, and the new
// log's chunks after it. That is unwritten pages, a torn tail: Open
// keeps a prefix of the writes (those of the new log's records before
// the block were never synced, and may go) and reopens. (It read as
// corruption, record's mendable taking the earlier log's chunk for one
// of the new log whose length alone was damaged.)
func TestPortWAL_RecycledUnwrittenBlock(t *testing.T) {
	fs := vfs.NewMem()
	o := kv.FullSizeMemTables(&kv.Options{MemTableSize: 256 << 10})
	db := ldbOpen(t, fs, o)
	value := func(i int) string { return pcValue(i, 70_000) } // a record of 3 blocks
	seen := map[string][]byte{}                               // each WAL's last contents
	n, after := 0, -1
	for ; n < 60 && (after < 0 || n < after); n++ {
		ldbSet(t, db, pcKey(n), value(n))
		for _, name := range pcLogs(t, fs) {
			seen[name] = readFSFile(t, fs, "db/"+name)
		}
		if after < 0 && db.Metrics().WAL.Recycled > 0 {
			after = n + 2
		}
	}
	pwSettle(t, db)
	crashed := copyDir(t, fs, "db")
	ldbClose(t, db)
	name, data := pwWAL(t, crashed)
	r := record.NewLogReader(bytes.NewReader(data), name, pwNum(t, name), record.RecyclableFormat)
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	var old []byte // the earlier log's, whose bytes lie past the new one's
	for n, c := range seen {
		if n != name && len(c) == len(data) && bytes.Equal(c[r.End():], data[r.End():]) {
			old = c
		}
	}
	const block = pcWALBlock
	fills := func(b []byte) bool { // a middle chunk fills block 1
		return len(b) >= 2*block && b[block+6] == 7 && binary.LittleEndian.Uint16(b[block+4:]) == block-pwHdr
	}
	if r.End() < 3*block || !fills(data) || !fills(old) {
		t.Fatalf("%s (%d bytes of records) over an earlier log of %d bytes: want a middle chunk filling block 1 of both",
			name, r.End(), len(old))
	}
	copy(data[block:2*block], old[block:2*block])
	writeFSFile(t, crashed, "db/"+name, data)
	var logged []string
	o.Logger = kv.LoggerFunc(func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) })
	db = ldbOpen(t, crashed, o)
	got := pwPrefix(t, db, n+1, value)
	if got == 0 || got >= n || len(logged) != 1 || !strings.Contains(logged[0], "never written") {
		t.Fatalf("recovered %d of %d writes, logged %q; want those before %s, and a message on its unwritten pages", got, n, logged, name)
	}
	db = ldbReopen(t, db, crashed, o)
	if again := pwPrefix(t, db, n+1, value); again != got {
		t.Fatalf("reopened: %d writes, want %d", again, got)
	}
	ldbClose(t, db)
}

// pwSize returns the size of the store's newest WAL file.
func pwSize(t *testing.T, fs vfs.FS) int {
	t.Helper()
	st, err := fs.Stat("db/" + pcFile(t, fs, ".log"))
	if err != nil {
		t.Fatal(err)
	}
	return int(st.Size())
}

// pwValueFor returns the length of a value that makes a batch setting
// key to it encode to n bytes: the 12-byte header, the kind, the two
// lengths (uvarints) and the key and value.
func pwValueFor(key string, n int) int {
	for v := n - 13 - len(key) - 2*binary.MaxVarintLen32; v <= n; v++ {
		if 13+binary.PutUvarint(make([]byte, 10), uint64(len(key)))+len(key)+
			binary.PutUvarint(make([]byte, 10), uint64(v))+v == n {
			return v
		}
	}
	panic("no value length fits")
}

// TestPortWAL_RecordFillsBlock (LevelDB's MarginalTrailer, ShortTrailer
// and AlignedEof; Pebble's TestBoundary): a batch whose record ends
// exactly at the WAL's first block end, or a header short of it, or
// less, then another batch. Crashed, closed, or cut just after the
// first record, the store opens with what the WAL holds whole.
func TestPortWAL_RecordFillsBlock(t *testing.T) {
	for _, tail := range []int{0, pwHdr, pwHdr - 1} {
		t.Run(fmt.Sprintf("tail=%d", tail), func(t *testing.T) {
			fs := vfs.NewMem()
			db := ldbOpen(t, fs, nil)
			ldbSet(t, db, "first", "x")
			start := pwSize(t, fs)
			fill := strings.Repeat("f", pwValueFor("fill", pcWALBlock-tail-start-pwHdr))
			ldbSet(t, db, "fill", fill)
			if got := pwSize(t, fs); got != pcWALBlock-tail {
				t.Fatalf("the record ends at %d, want %d", got, pcWALBlock-tail)
			}
			ldbSet(t, db, "after", "y")
			crashed := copyDir(t, fs, "db")
			ldbClose(t, db)
			name, data := pwWAL(t, crashed)
			cut := copyDir(t, crashed, "db")
			pcCut(t, cut, name, pcWALBlock-tail)
			for _, c := range []struct {
				what  string
				fs    vfs.FS
				after string
			}{{"crashed", crashed, "y"}, {"closed", fs, "y"}, {fmt.Sprintf("cut at %d of %d", pcWALBlock-tail, len(data)), cut, "NOT_FOUND"}} {
				db := ldbOpen(t, c.fs, nil)
				ldbWant(t, db, "first", "x")
				ldbWant(t, db, "fill", fill)
				ldbWant(t, db, "after", c.after)
				ldbSet(t, db, "later", "z")
				db = ldbReopen(t, db, c.fs, nil)
				ldbWant(t, db, "fill", fill)
				ldbWant(t, db, "later", "z")
				ldbClose(t, db)
			}
		})
	}
}

// TestPortWAL_PartialLastRecord (LevelDB's TruncatedTrailingRecordIsIgnored,
// BadLengthAtEndIsIgnored, MissingLastIsIgnored, PartialLastIsIgnored;
// Pebble's TestTruncatedLog; goleveldb's TestCorrupt_MissingLastBlock): a
// crash leaves the last record, of two blocks, cut anywhere: in its
// first header, its first fragment, at the block end (its last fragment
// missing), in its last fragment. Open drops it without an error, keeps
// the writes before it, and the store takes new writes and reopens.
func TestPortWAL_PartialLastRecord(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	for i := range 3 {
		ldbSet(t, db, pcKey(i), pcValue(i, 100))
	}
	start := pwSize(t, fs)
	ldbSet(t, db, pcKey(3), pcValue(3, 40_000))
	end := pwSize(t, fs)
	crashed := copyDir(t, fs, "db")
	ldbClose(t, db)
	name := pcFile(t, crashed, ".log")
	for _, cut := range []int{start + 1, start + pwHdr - 1, start + pwHdr + 100, pcWALBlock, pcWALBlock + 5, pcWALBlock + pwHdr + 7, end - 1} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			store := copyDir(t, crashed, "db")
			pcCut(t, store, name, cut)
			db := ldbOpen(t, store, nil)
			value := func(i int) string { return pcValue(i, 100) }
			if got := pwPrefix(t, db, 4, value); got != 3 {
				t.Fatalf("recovered %d writes, want 3", got)
			}
			ldbSet(t, db, "later", "z")
			db = ldbReopen(t, db, store, nil)
			ldbWant(t, db, "later", "z")
			ldbWant(t, db, pcKey(3), "NOT_FOUND")
			ldbClose(t, db)
		})
	}
}

// TestPortWAL_DamagedMiddleChunk (LevelDB's ErrorJoinsRecords and
// BadLength, Pebble's TestRecoverSingleBlock, goleveldb's
// TestCorrupt_CorruptedMiddleBlock): a batch of four blocks whose middle
// chunk is damaged, valid records after it. LevelDB and goleveldb drop
// the damaged block and replay the rest; bloomkv refuses the store with
// corruption naming the WAL, crashed or closed, since the records after
// the damage were acknowledged. A page of zeros within the chunk is no
// page a crash left unwritten: a record may hold zeros.
func TestPortWAL_DamagedMiddleChunk(t *testing.T) {
	const block = pcWALBlock
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	ldbSet(t, db, pcKey(0), "small")
	ldbSet(t, db, pcKey(1), pcValue(1, 100_000))
	for i := 2; i < 10; i++ {
		ldbSet(t, db, pcKey(i), pcValue(i, 100))
	}
	crashed := copyDir(t, fs, "db")
	ldbClose(t, db)
	for _, store := range []struct {
		what string
		fs   vfs.FS
	}{{"crashed", crashed}, {"closed", fs}} {
		name, data := pwWAL(t, store.fs)
		if data[block+6] != 7 || data[2*block+6] != 7 {
			t.Fatalf("%s: blocks 1 and 2 of %s are not middle chunks", store.what, name)
		}
		for _, d := range []struct {
			what   string
			damage func([]byte)
		}{
			{"payload", func(b []byte) { b[block+pwHdr+500] ^= 1 }},
			{"length", func(b []byte) { b[block+5] ^= 0x10 }},
			{"zero-page", func(b []byte) { clear(b[block+4096 : block+2*4096]) }},
		} {
			t.Run(store.what+"/"+d.what, func(t *testing.T) {
				damaged := copyDir(t, store.fs, "db")
				b := bytes.Clone(data)
				d.damage(b)
				writeFSFile(t, damaged, "db/"+name, b)
				pcOpenRefused(t, damaged, nil, name)
			})
		}
	}
}
