package kv_test

// The port_corruption_*_test.go files port the scenarios of LevelDB's
// db/corruption_test.cc, goleveldb's leveldb/corrupt_test.go and, where
// they apply, RocksDB's db/corruption_test.cc, to bloomkv's API, with a
// few of bloomkv's own (files cut short, CURRENT naming nothing, WALs
// emptied or copied in, file names with odd numbers).
//
// Those engines read damage leniently by default: LevelDB drops the log
// records it cannot read and goes on, skips a table block that fails its
// checksum (reads see fewer keys), and repairs a store (RepairDB) that
// lost its MANIFEST. bloomkv promises instead (kv/doc.go, "Failures" and
// "Recovery") that damage is an error wrapping kv.ErrCorruption that names
// the file, never a panic and never wrong data, and that only a torn tail
// after a crash is dropped without one. So each port keeps its scenario
// and asserts bloomkv's rule, saying where it differs from the original:
// where LevelDB expects "some keys lost", bloomkv must give every key it
// gives right, and refuse the rest (or Open) with a named corruption.
// bloomkv has no repair: the repair tests (TableFileRepair, the RepairDB
// steps of MissingDescriptor and CorruptedDescriptor, goleveldb's
// recover()) become "Open refuses the store, naming the damage", or a
// plain reopen where the scenario (sequence numbers, L0 order) does not
// need the damage.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// pcKey is LevelDB's corruption_test Key: the number, 16 digits.
func pcKey(i int) string { return fmt.Sprintf("%016d", i) }

// pcValue is the value Build writes under key i: size bytes drawn from a
// generator seeded by i, as LevelDB's Value (random, so incompressible).
func pcValue(i, size int) string {
	rng := rand.New(rand.NewPCG(uint64(i), 0x9e3779b97f4a7c15))
	b := make([]byte, size)
	for j := range b {
		b[j] = ' ' + byte(rng.IntN(95))
	}
	return string(b)
}

// pcBuild is LevelDB's Build: keys from..to-1, one write each, every one
// NoSync but the last, which is synced (and so syncs them all).
func pcBuild(t *testing.T, db *kv.DB, from, to, size int) {
	t.Helper()
	for i := from; i < to; i++ {
		wo := kv.NoSync
		if i == to-1 {
			wo = kv.Sync
		}
		if err := db.Set([]byte(pcKey(i)), []byte(pcValue(i, size)), wo); err != nil {
			t.Fatalf("Set(%d): %v", i, err)
		}
	}
}

// pcScan is LevelDB's Check without its bounds: it scans db forward and
// returns how many keys of Build read right, failing the test on a key
// Build did not write, a wrong value or keys out of order (wrong data,
// which bloomkv never gives). The iterator's error is returned: nil, or
// one the caller checks.
func pcScan(t *testing.T, db *kv.DB, size int) (correct int, err error) {
	t.Helper()
	it, err := db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	prev := -1
	for ok := it.First(); ok; ok = it.Next() {
		var n int
		if _, err := fmt.Sscanf(string(it.Key()), "%d", &n); err != nil || pcKey(n) != string(it.Key()) || n <= prev {
			t.Fatalf("scan: key %q after %d", it.Key(), prev)
		}
		prev = n
		if string(it.Value()) != pcValue(n, size) {
			t.Fatalf("scan: wrong value for %s", pcKey(n))
		}
		correct++
	}
	return correct, errors.Join(it.Error(), it.Close())
}

// pcGets reads keys lo..hi-1, each of which Build wrote, and returns how
// many read right. Any other outcome must be a corruption naming a file
// ending in suffix; a key not found, or a wrong value, fails the test.
func pcGets(t *testing.T, db *kv.DB, lo, hi, size int, suffix string) (correct int) {
	t.Helper()
	for i := lo; i < hi; i++ {
		v, err := db.Get([]byte(pcKey(i)))
		switch {
		case err == nil && string(v) == pcValue(i, size):
			correct++
		case err == nil:
			t.Fatalf("Get(%s): wrong value", pcKey(i))
		default:
			pcWantCorruption(t, fmt.Sprintf("Get(%s)", pcKey(i)), err, suffix)
		}
	}
	return correct
}

// pcWantCorruption fails the test unless err wraps kv.ErrCorruption and
// names a file whose name holds file (a whole name, or a suffix such as
// ".sst" when any of a kind will do).
func pcWantCorruption(t *testing.T, what string, err error, file string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want a corruption naming %s", what, file)
	}
	if !errors.Is(err, kv.ErrCorruption) || !pcNames(err.Error(), file) {
		t.Fatalf("%s: %v, want an error wrapping ErrCorruption naming %s", what, err, file)
	}
}

// pcNames reports whether msg names file: as a whole name, not the end
// of a longer one ("000003.log" does not name "3.log"), unless file is a
// suffix such as ".sst".
func pcNames(msg, file string) bool {
	if strings.HasPrefix(file, ".") {
		return strings.Contains(msg, file)
	}
	for i := 0; ; {
		j := strings.Index(msg[i:], file)
		if j < 0 {
			return false
		}
		if at := i + j; at == 0 || !strings.ContainsRune("0123456789-", rune(msg[at-1])) && !unicode.IsLetter(rune(msg[at-1])) {
			return true
		}
		i += j + 1
	}
}

// pcOpenRefused opens the store in fs and fails the test unless Open
// refuses it with a corruption naming file.
func pcOpenRefused(t *testing.T, fs vfs.FS, o *kv.Options, file string) {
	t.Helper()
	opts := kv.Options{}
	if o != nil {
		opts = *o
	}
	opts.FS = fs
	db, err := kv.Open("db", &opts)
	if err == nil {
		db.Close()
		t.Fatalf("Open succeeded, want a corruption naming %s", file)
	}
	pcWantCorruption(t, "Open", err, file)
}

// pcFile returns the name of the store's file of the given kind (".log",
// ".sst" or "MANIFEST-") with the highest number, as LevelDB's Corrupt
// picks the file to damage.
func pcFile(t *testing.T, fs vfs.FS, kind string) string {
	t.Helper()
	var found []string
	for _, n := range ldbFiles(t, fs) {
		if strings.HasSuffix(n, kind) || strings.HasPrefix(n, kind) {
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		t.Fatalf("no %s file in %v", kind, ldbFiles(t, fs))
	}
	// Zero-padded to six digits at least: longer names are larger numbers.
	slices.SortFunc(found, func(a, b string) int {
		return cmpInts(len(a), len(b), strings.Compare(a, b))
	})
	return found[len(found)-1]
}

func cmpInts(a, b, then int) int {
	if a != b {
		return a - b
	}
	return then
}

// pcCorrupt is LevelDB's Corrupt: it flips the top bit of n bytes of file
// name from offset (from the end when negative), clamped to the file.
func pcCorrupt(t *testing.T, fs vfs.FS, name string, offset, n int) {
	t.Helper()
	data := readFSFile(t, fs, "db/"+name)
	if offset < 0 {
		offset = max(0, len(data)+offset)
	}
	offset = min(offset, len(data))
	n = min(n, len(data)-offset)
	for i := offset; i < offset+n; i++ {
		data[i] ^= 0x80
	}
	writeFSFile(t, fs, "db/"+name, data)
}

// pcCut cuts file name of fs to its first n bytes.
func pcCut(t *testing.T, fs vfs.FS, name string, n int) {
	t.Helper()
	data := readFSFile(t, fs, "db/"+name)
	writeFSFile(t, fs, "db/"+name, data[:n])
}

// TestPortCorruption_SequenceNumberRecovery ports SequenceNumberRecovery
// (LevelDB, RocksDB) and goleveldb's CorruptDB_SequenceNumberRecovery and
// CorruptDB_SequenceNumberRecoveryTable, without their RepairDB: five
// versions of a key, in the WAL alone or each in a table of its own, and
// a reopen; the last one reads, and a sixth written after the reopen is
// not hidden by an earlier one (as it would be under a sequence number
// recovered too low), nor after another reopen.
func TestPortCorruption_SequenceNumberRecovery(t *testing.T) {
	for _, tables := range []bool{false, true} {
		t.Run(fmt.Sprintf("tables=%v", tables), func(t *testing.T) {
			fs := vfs.NewMem()
			db := ldbOpen(t, fs, nil)
			for i := 1; i <= 5; i++ {
				ldbSet(t, db, "foo", fmt.Sprintf("v%d", i))
				if tables {
					ldbFlush(t, db)
				}
			}
			db = ldbReopen(t, db, fs, nil)
			ldbWant(t, db, "foo", "v5")
			ldbSet(t, db, "foo", "v6")
			ldbWant(t, db, "foo", "v6")
			db = ldbReopen(t, db, fs, nil)
			ldbWant(t, db, "foo", "v6")
			if tables {
				ldbCompact(t, db, "", "")
				ldbWant(t, db, "foo", "v6")
			}
			ldbClose(t, db)
		})
	}
}

// TestPortCorruption_Level0NewerFileHasOlderSeqnum ports goleveldb's
// CorruptDB_Level0NewerFileHasOlderSeqnum and
// CorruptDB_RecoverInvalidSeq_Issue53 without their recover() (a repair,
// which rebuilds L0's order from the tables): versions of a and b in
// three L0 tables, c and d in a fourth, a compaction, a reopen; the
// newest version of each key reads, before and after compacting again.
func TestPortCorruption_Level0NewerFileHasOlderSeqnum(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{DisableAutomaticCompactions: true}
	db := ldbOpen(t, fs, o)
	for v := 1; v <= 3; v++ {
		ldbSet(t, db, "a", fmt.Sprintf("v%d", v))
		ldbSet(t, db, "b", fmt.Sprintf("v%d", v))
		ldbFlush(t, db)
		if v == 2 {
			// Issue 53's store: two tables, closed and reopened.
			db = ldbReopen(t, db, fs, o)
			ldbWant(t, db, "a", "v2")
			ldbWant(t, db, "b", "v2")
		}
	}
	ldbSet(t, db, "c", "v4")
	ldbSet(t, db, "d", "v4")
	ldbFlush(t, db)
	ldbCompact(t, db, "c", "d")
	db = ldbReopen(t, db, fs, o)
	want := func() {
		t.Helper()
		for k, v := range map[string]string{"a": "v3", "b": "v3", "c": "v4", "d": "v4"} {
			ldbWant(t, db, k, v)
		}
	}
	want()
	ldbCompact(t, db, "", "")
	want()
	db = ldbReopen(t, db, fs, o)
	want()
	ldbClose(t, db)
}
