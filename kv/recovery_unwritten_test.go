package kv

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
)

// crashWithUnwrittenPage writes keys with NoSync until the WAL holds
// several pages, copies the store as a crash of the machine would leave
// it if one page of the WAL never reached the disk (zeros where the file
// system never wrote it), and returns the copy, the WAL's name, the
// number of keys written, how many of their records, one each, end
// before the page, and where the last of those ends.
func crashWithUnwrittenPage(t *testing.T) (crashed vfs.FS, wal string, keys, before int, end int64) {
	t.Helper()
	fs := vfs.NewMem()
	d, err := Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	wal = "db/" + base.MakeFilename(base.FileTypeLog, d.commit.log.num)
	const page = 4096
	n := 0
	for ; d.commit.log.w.Size() < 6*page; n++ {
		if err := d.Set(fmt.Appendf(nil, "key%05d", n), []byte(strings.Repeat("v", 100)), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	crashed = cloneStore(t, fs)
	data := readFile(t, crashed, wal)
	r := record.NewLogReader(bytes.NewReader(data), wal, uint32(d.commit.log.num), record.RecyclableFormat)
	for {
		if _, err := r.Next(); err != nil {
			break
		}
		if r.End() <= 3*page {
			before, end = before+1, r.End()
		}
	}
	clear(data[3*page : 4*page])
	writeFile(t, crashed, wal, data)
	return crashed, wal, n, before, end
}

// TestRecover_UnwrittenWALPage: a page of the WAL being written that the
// file system never wrote, at a crash of the machine, ends the replay
// there, as a torn tail does: Open succeeds with the writes before it (a
// prefix of the history), says so through Options.Logger, and the store
// reopens cleanly after new writes.
func TestRecover_UnwrittenWALPage(t *testing.T) {
	fs, wal, n, before, end := crashWithUnwrittenPage(t)
	var logged []string
	logger := LoggerFunc(func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) })
	d, err := Open("db", &Options{FS: fs, Logger: logger})
	if err != nil {
		t.Fatalf("Open after the crash: %v", err)
	}
	prefix := func(d *DB) int {
		t.Helper()
		k := 0
		for i := range n {
			_, err := d.Get(fmt.Appendf(nil, "key%05d", i))
			switch {
			case err == nil && k == i:
				k++
			case err == nil:
				t.Fatalf("key%05d is there, key%05d is not: not a prefix", i, k)
			case !errors.Is(err, ErrNotFound):
				t.Fatal(err)
			}
		}
		return k
	}
	k := prefix(d)
	t.Logf("%d of %d keys recovered; logged %q", k, n, logged)
	if k != before || k == 0 || k == n {
		t.Fatalf("recovered %d of %d keys, want the %d whose records end before the unwritten page", k, n, before)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "never written") ||
		!strings.Contains(logged[0], fmt.Sprintf("%s: offset %d:", wal[len("db/"):], end)) {
		t.Fatalf("logged %q, want one message on the unwritten pages of %s, after the record ending at %d", logged, wal, end)
	}
	if err := d.Set([]byte("after"), []byte("crash"), Sync); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(wal); err == nil {
		t.Fatalf("%s, replayed up to its unwritten page, outlived the Open that flushed it", wal)
	}
	d, err = Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer d.Close()
	if got := prefix(d); got != k {
		t.Fatalf("reopen: %d keys, want %d", got, k)
	}
	mustGet(t, d, "after", "crash")
}

// TestRecover_UnwrittenWALPageThenRecords: a WAL with an unwritten page
// followed by a WAL with records of its own is corruption: a WAL is
// synced before the next one is written, so its damage is no crash's.
func TestRecover_UnwrittenWALPageThenRecords(t *testing.T) {
	fs, wal, _, _, _ := crashWithUnwrittenPage(t)
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	var num base.FileNum
	for _, name := range names {
		if _, n, ok := base.ParseFilename(name); ok {
			num = max(num, n)
		}
	}
	var b Batch
	if err := b.Set([]byte("later"), []byte("value")); err != nil {
		t.Fatal(err)
	}
	b.setSeqNum(base.SeqNum(1) << 40)
	later := base.MakeFilename(base.FileTypeLog, num+1)
	f, err := fs.Create("db/" + later)
	if err != nil {
		t.Fatal(err)
	}
	w := record.NewRecyclableWriterAt(f, 0, uint32(num+1))
	if _, err := w.WriteRecord(b.data); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	mustClose(t, f)
	_, err = Open("db", &Options{FS: fs})
	if err == nil {
		t.Fatalf("Open succeeded with a record in %s after the unwritten page of %s", later, wal)
	}
	requireNamedCorruption(t, err, "a later WAL's record", later)
	if !strings.Contains(err.Error(), wal[len("db/"):]) {
		t.Fatalf("error %q does not name %s", err, wal)
	}
}

// TestRecover_UnwrittenPageBeforeSeal: a page of zeros in a WAL that a
// seal follows is damage, not a page a crash left unwritten: the seal was
// synced with every page before it. Open refuses it with corruption naming
// the WAL, rather than drop the synced writes after the page.
func TestRecover_UnwrittenPageBeforeSeal(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	wal := "db/" + base.MakeFilename(base.FileTypeLog, d.commit.log.num)
	const page = 4096
	for n := 0; d.commit.log.w.Size() < 6*page; n++ {
		if err := d.Set(fmt.Appendf(nil, "key%05d", n), []byte(strings.Repeat("v", 100)), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	must(t, d.Close()) // seals the WAL
	data := readFile(t, fs, wal)
	clear(data[3*page : 4*page])
	writeFile(t, fs, wal, data)
	_, err = Open("db", &Options{FS: fs})
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), fs.PathBase(wal)) || !strings.Contains(err.Error(), "before the seal") {
		t.Fatalf("Open with a page of zeros before the WAL's seal: %v, want corruption naming %s", err, wal)
	}
}
