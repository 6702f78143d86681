package kv

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// The single-bit sweeps (bitflip_*_test.go) flip one bit at a time of one
// file of a closed store, reopen the store and read everything. Each flip
// must end one of two ways:
//
//   - an error wrapping ErrCorruption that names the file and an offset,
//     from Open or from the read that meets the damage; or
//   - every synced write present with its value, and no deleted or
//     range-deleted key back.
//
// A panic, a wrong value, a missing key without an error, or a key back
// from the dead fails the test. By default each sweep covers a small
// store in a few seconds; -sweep=full sweeps every bit of larger files.

var sweepMode = flag.String("sweep", "short", "bit-flip sweeps: short (a small store, seconds) or full (every bit of larger files, minutes)")

// fullSweep reports whether -sweep=full was given.
func fullSweep() bool { return *sweepMode == "full" }

// sweepStore is a closed store in a MemFS and what it must read back.
type sweepStore struct {
	fs   vfs.FS
	opts Options
	// values holds every key written with Sync and not deleted since,
	// with its value; gone the keys deleted or range-deleted since they
	// were written.
	values map[string]string
	gone   []string
}

// flipOutcome is how a store read after one flip ended.
type flipOutcome int

const (
	flipCorruptAtOpen flipOutcome = iota
	flipCorruptAtRead
	flipRecovered
	numFlipOutcomes
)

// sweepCounts counts flips by outcome.
type sweepCounts [numFlipOutcomes]int

func (c *sweepCounts) tried() int { return c[0] + c[1] + c[2] }

func (c *sweepCounts) String() string {
	return fmt.Sprintf("%d flips tried: %d ErrCorruption at Open, %d ErrCorruption at a read, %d recovered everything",
		c.tried(), c[flipCorruptAtOpen], c[flipCorruptAtRead], c[flipRecovered])
}

// sweepBits flips, one at a time, each bit i of file (a name in "db")
// for which want(i) holds, checking the store after each, and returns
// the counts. It fails the test when fewer than min flips were tried.
func (s *sweepStore) sweepBits(t *testing.T, file string, want func(bit int64) bool, min int) *sweepCounts {
	t.Helper()
	data := readFile(t, s.fs, "db/"+file)
	var c sweepCounts
	for bit := int64(0); bit < 8*int64(len(data)); bit++ {
		if !want(bit) {
			continue
		}
		c[s.checkFlip(t, file, data, bit)]++
	}
	t.Logf("%s (%d bytes): %s", file, len(data), &c)
	if c.tried() < min {
		t.Fatalf("%s: only %d flips tried, want at least %d", file, c.tried(), min)
	}
	return &c
}

// checkFlip reopens a copy of the store whose file data has bit flipped,
// reads everything and returns the outcome; any other outcome fails the
// test.
func (s *sweepStore) checkFlip(t *testing.T, file string, data []byte, bit int64) (out flipOutcome) {
	t.Helper()
	where := fmt.Sprintf("%s: bit %d of byte %d", file, bit%8, bit/8)
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v", where, r)
		}
	}()
	fs := cloneStore(t, s.fs)
	damaged := slices.Clone(data)
	damaged[bit/8] ^= 1 << (bit % 8)
	writeFile(t, fs, "db/"+file, damaged)
	o := s.opts
	o.FS = fs
	d, err := Open("db", &o)
	if err != nil {
		requireNamedCorruption(t, err, where, file)
		return flipCorruptAtOpen
	}
	err = s.checkContents(t, d, where)
	if cerr := d.Close(); cerr != nil && !errors.Is(cerr, ErrCorruption) {
		t.Fatalf("%s: Close: %v", where, cerr)
	}
	if err != nil {
		requireNamedCorruption(t, err, where, file)
		return flipCorruptAtRead
	}
	return flipRecovered
}

// checkContents reads every key of the model by Get and the whole store by
// iteration, forward and backward. It returns the first read error; a
// wrong answer fails the test.
func (s *sweepStore) checkContents(t *testing.T, d *DB, where string) error {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(s.values)) {
		v, err := d.Get([]byte(k))
		switch {
		case err != nil:
			return err
		case string(v) != s.values[k]:
			t.Fatalf("%s: Get(%q) = %q, want %q", where, k, v, s.values[k])
		}
	}
	for _, k := range s.gone {
		if v, err := d.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			if err != nil {
				return err
			}
			t.Fatalf("%s: deleted key %q is back with value %q", where, k, v)
		}
	}
	for _, backward := range []bool{false, true} {
		got, err := scanInOrder(t, d, backward, where)
		if err != nil {
			return err
		}
		if !maps.Equal(got, s.values) {
			t.Fatalf("%s: the store iterates (backward: %v) as\n%s\nwant\n%s", where, backward, formatModel(got), formatModel(s.values))
		}
	}
	return nil
}

// scanInOrder reads the whole store in one direction, with First and
// Next or Last and Prev, and returns what it read, or the iterator's
// error. A key out of that direction's order fails the test.
func scanInOrder(t *testing.T, d *DB, backward bool, where string) (map[string]string, error) {
	t.Helper()
	it, err := d.NewIter(nil)
	if err != nil {
		return nil, err
	}
	first, next, step := it.First, it.Next, 1
	if backward {
		first, next, step = it.Last, it.Prev, -1
	}
	got := map[string]string{}
	var last string
	for ok := first(); ok; ok = next() {
		k := string(it.Key())
		if len(got) > 0 && strings.Compare(k, last) != step {
			t.Fatalf("%s: key %q follows %q (backward: %v)", where, k, last, backward)
		}
		got[k], last = string(it.Value()), k
	}
	if err := it.Error(); err != nil {
		return nil, errors.Join(err, it.Close())
	}
	return got, it.Close()
}

// requireNamedCorruption fails the test unless err wraps ErrCorruption
// and names file and an offset.
func requireNamedCorruption(t *testing.T, err error, where, file string) {
	t.Helper()
	msg := err.Error()
	if !errors.Is(err, ErrCorruption) || !strings.Contains(msg, file) || !strings.Contains(msg, "offset") {
		t.Fatalf("%s: error %q does not wrap ErrCorruption naming %s and an offset", where, msg, file)
	}
}

// cloneStore copies the files of the store in src's "db" to a new MemFS.
func cloneStore(t testing.TB, src vfs.FS) vfs.FS {
	t.Helper()
	fs := vfs.NewMem()
	if err := fs.MkdirAll("db", 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := src.List("db")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == "LOCK" {
			continue
		}
		copyFile(t, src, "db/"+n, fs, "db/"+n)
	}
	return fs
}

// storeFile returns the name of the one file in the store's directory
// whose name ends with suffix (".log", "MANIFEST-" prefixed names by
// their prefix), failing the test unless there is exactly one.
func (s *sweepStore) storeFile(t *testing.T, match func(string) bool) string {
	t.Helper()
	names, err := s.fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, n := range names {
		if match(n) {
			found = append(found, n)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one such file in the store, have %q (of %q)", found, names)
	}
	return found[0]
}

// allBits selects every bit of a file.
func allBits(int64) bool { return true }
