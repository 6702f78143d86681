package kv_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// pcStoreKeys and pcStoreSize shape pcClosedStore: half the keys in a
// table, half in the WAL.
const pcStoreKeys, pcStoreSize = 100, 100

// pcClosedStore returns a closed store of Build's keys 0..pcStoreKeys-1,
// the first half flushed to a table, the rest in its WAL.
func pcClosedStore(t *testing.T) vfs.FS {
	t.Helper()
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	pcBuild(t, db, 0, pcStoreKeys/2, pcStoreSize)
	ldbFlush(t, db)
	pcBuild(t, db, pcStoreKeys/2, pcStoreKeys, pcStoreSize)
	ldbClose(t, db)
	return fs
}

// pcWantWhole opens the store in fs and fails the test unless it holds
// exactly pcClosedStore's keys, and goes on doing so through a write, a
// flush, a compaction and a reopen.
func pcWantWhole(t *testing.T, fs vfs.FS, what string) {
	t.Helper()
	db := ldbOpen(t, fs, nil)
	want := func(n int) {
		t.Helper()
		if c, err := pcScan(t, db, pcStoreSize); c != n || err != nil {
			t.Fatalf("%s: %d keys, %v; want %d", what, c, err, n)
		}
	}
	want(pcStoreKeys)
	pcBuild(t, db, pcStoreKeys, pcStoreKeys+10, pcStoreSize)
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	db = ldbReopen(t, db, fs, nil)
	want(pcStoreKeys + 10)
	ldbClose(t, db)
}

// pcWholeOrRefused opens the store in fs: Open may refuse it with a
// corruption naming file; if it opens, it must hold exactly
// pcClosedStore's keys (pcWantWhole).
func pcWholeOrRefused(t *testing.T, fs vfs.FS, file, what string) {
	t.Helper()
	db, err := kv.Open("db", &kv.Options{FS: fs})
	if err != nil {
		pcWantCorruption(t, what+": Open", err, file)
		return
	}
	ldbClose(t, db)
	pcWantWhole(t, fs, what)
}

// TestPortCorruption_MissingDescriptor ports MissingDescriptor (LevelDB)
// and goleveldb's CorruptDB_MissingManifest without their RepairDB: the
// MANIFEST deleted, Open refuses the store naming it (CURRENT names a
// MANIFEST that does not exist); with CURRENT deleted too, Open refuses a
// directory that holds tables, rather than open it as a new store that
// would delete them.
func TestPortCorruption_MissingDescriptor(t *testing.T) {
	fs := pcClosedStore(t)
	manifest := pcFile(t, fs, "MANIFEST-")
	for _, also := range []string{"", "CURRENT"} {
		damaged := copyDir(t, fs, "db")
		if err := damaged.Remove("db/" + manifest); err != nil {
			t.Fatal(err)
		}
		name := manifest
		if also != "" {
			if err := damaged.Remove("db/" + also); err != nil {
				t.Fatal(err)
			}
			name = ".sst"
		}
		pcOpenRefused(t, damaged, nil, name)
	}
	pcWantWhole(t, fs, "undamaged")
}

// TestPortCorruption_CorruptedDescriptor ports CorruptedDescriptor
// (LevelDB, RocksDB) and goleveldb's CorruptDB_CorruptedManifest without
// their repair: the first 1,000 bytes of the MANIFEST damaged (the whole
// of it, here), Open refuses the store naming it.
func TestPortCorruption_CorruptedDescriptor(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	ldbSet(t, db, "foo", "hello")
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	ldbClose(t, db)
	damaged := copyDir(t, fs, "db")
	manifest := pcFile(t, damaged, "MANIFEST-")
	pcCorrupt(t, damaged, manifest, 0, 1000)
	pcOpenRefused(t, damaged, nil, manifest)
	db = ldbOpen(t, fs, nil)
	ldbWant(t, db, "foo", "hello")
	ldbClose(t, db)
}

// TestPortCorruption_TruncatedManifest cuts a closed store's MANIFEST (one
// edit, the whole Version, then its seal) at each tenth of its length and
// at each of its last bytes: Open refuses the store naming it, or, cut
// within the seal alone, opens it whole.
func TestPortCorruption_TruncatedManifest(t *testing.T) {
	fs := pcClosedStore(t)
	manifest := pcFile(t, fs, "MANIFEST-")
	length := len(readFSFile(t, fs, "db/"+manifest))
	cuts := []int{}
	for tenth := range 10 {
		cuts = append(cuts, length*tenth/10)
	}
	step := 1
	if testing.Short() {
		step = 3
	}
	for cut := max(0, length-40); cut < length; cut += step {
		cuts = append(cuts, cut)
	}
	for _, cut := range cuts {
		damaged := copyDir(t, fs, "db")
		pcCut(t, damaged, manifest, cut)
		pcWholeOrRefused(t, damaged, manifest, fmt.Sprintf("MANIFEST cut at %d of %d", cut, length))
	}
}

// TestPortCorruption_Current: CURRENT naming a MANIFEST that does not
// exist, or one that is empty, holds garbage, or CURRENT itself empty,
// are refused as corruption naming the file at fault.
func TestPortCorruption_Current(t *testing.T) {
	fs := pcClosedStore(t)
	manifest := pcFile(t, fs, "MANIFEST-")
	for _, c := range []struct {
		what, current, create, blame string
	}{
		{"names a missing MANIFEST", "MANIFEST-000999\n", "", "MANIFEST-000999"},
		{"names an empty MANIFEST", "MANIFEST-000999\n", "MANIFEST-000999", "MANIFEST-000999"},
		{"names a table", "000004.sst\n", "", "CURRENT"},
		{"is empty", "", "", "CURRENT"},
		{"is a newline", "\n", "", "CURRENT"},
		{"holds garbage", "\x00\xff\x80garbage", "", "CURRENT"},
	} {
		t.Run(c.what, func(t *testing.T) {
			damaged := copyDir(t, fs, "db")
			writeFSFile(t, damaged, "db/CURRENT", []byte(c.current))
			if c.create != "" {
				writeFSFile(t, damaged, "db/"+c.create, nil)
			}
			pcOpenRefused(t, damaged, nil, c.blame)
		})
	}
	// Without its newline, CURRENT still names the MANIFEST: open or
	// refused, never wrong.
	damaged := copyDir(t, fs, "db")
	writeFSFile(t, damaged, "db/CURRENT", []byte(manifest))
	pcWholeOrRefused(t, damaged, "CURRENT", "CURRENT without its newline")
}

// TestPortCorruption_ForeignWAL copies the WAL of another store into a
// closed store: over its own WAL, Open must refuse the store naming it
// (its own synced writes are gone); beside it, under a higher or a lower
// number, Open may refuse the store naming the copy, or open it holding
// its own keys alone, never the other store's.
func TestPortCorruption_ForeignWAL(t *testing.T) {
	fs := pcClosedStore(t)
	wal := pcFile(t, fs, ".log")
	other := vfs.NewMem()
	db := ldbOpen(t, other, nil)
	for i := range 30 {
		ldbSet(t, db, fmt.Sprintf("other%03d", i), strings.Repeat("o", 50))
	}
	ldbClose(t, db)
	otherWAL := readFSFile(t, other, "db/"+pcFile(t, other, ".log"))

	damaged := copyDir(t, fs, "db")
	writeFSFile(t, damaged, "db/"+wal, otherWAL)
	pcOpenRefused(t, damaged, nil, wal)

	for _, name := range []string{"000999.log", "000000.log", "000002.log"} {
		if name == wal {
			continue
		}
		damaged := copyDir(t, fs, "db")
		writeFSFile(t, damaged, "db/"+name, otherWAL)
		pcWholeOrRefused(t, damaged, name, "another store's WAL as "+name)
	}
}

// TestPortCorruption_UnexpectedFileNumbers puts files with unexpected
// numbers beside a closed store's: copies of its WAL, table and MANIFEST
// under unpadded or longer names (names the store never makes, which
// Open once took for a second file of the same number, replaying the WAL
// twice and refusing the store as if a WAL were missing), and garbage
// under numbers above the store's next file number, up to the top of the
// range (which once wrapped the file counter around to 0, so that the
// store reused its files' numbers and could not be opened again). Open
// may refuse the store naming the odd file, or open it whole; it must not
// replay a copy, mix the copies up, or lose the store's files to them.
// A table or WAL of the store renamed to another number is missing, and
// refused.
func TestPortCorruption_UnexpectedFileNumbers(t *testing.T) {
	fs := pcClosedStore(t)
	wal, table, manifest := pcFile(t, fs, ".log"), pcFile(t, fs, ".sst"), pcFile(t, fs, "MANIFEST-")
	unpad := func(name string) string {
		stem, ext, _ := strings.Cut(name, ".")
		return strings.TrimLeft(stem, "0") + "." + ext
	}
	for _, c := range []struct{ name, from string }{
		{unpad(wal), wal},
		{"0" + wal, wal},
		{unpad(table), table},
		{"0" + table, table},
		{"MANIFEST-" + strings.TrimLeft(strings.TrimPrefix(manifest, "MANIFEST-"), "0"), manifest},
		{"999999.log", ""},
		{"999999.sst", ""},
		{"MANIFEST-999999", ""},
		{"999999.tmp", ""},
		{"99999999999999999999.log", ""},
		// Numbers that leave the counter no room: it must not wrap
		// around to reuse the numbers of the store's files.
		{"18446744073709551615.log", ""},
		{"18446744073709551615.sst", ""},
		{"18446744073709551614.log", ""},
		{"18446744073709551614.tmp", ""},
		{"MANIFEST-18446744073709551614", ""},
		{"9223372036854775808.sst", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			damaged := copyDir(t, fs, "db")
			data := []byte("garbage: not a file of any store")
			if c.from != "" {
				data = readFSFile(t, fs, "db/"+c.from)
			}
			writeFSFile(t, damaged, "db/"+c.name, data)
			pcWholeOrRefused(t, damaged, c.name, "with "+c.name)
		})
	}
	for _, name := range []string{wal, table} {
		damaged := copyDir(t, fs, "db")
		if err := damaged.Rename("db/"+name, "db/000998"+name[6:]); err != nil {
			t.Fatal(err)
		}
		pcOpenRefused(t, damaged, nil, name)
	}
}
