package sstable

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/vfs"
)

// hashSetPolicy is a test-only filter: the sorted 32-bit xxhashes of the
// keys. It is exact up to hash collisions, so tests can predict its
// verdicts.
type hashSetPolicy struct{}

func (hashSetPolicy) Name() string { return "test.hashset" }

func (hashSetPolicy) NewWriter() bloompolicy.FilterWriter { return &hashSetWriter{} }

func (hashSetPolicy) MayContain(filter, key []byte) bool {
	if len(filter)%4 != 0 {
		return true
	}
	h := uint32(xxhash.Sum64(key))
	n := len(filter) / 4
	lo, hi := 0, n
	for lo < hi {
		m := (lo + hi) / 2
		if binary.LittleEndian.Uint32(filter[4*m:]) < h {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < n && binary.LittleEndian.Uint32(filter[4*lo:]) == h
}

// alwaysPolicy is a test-only filter that never rules a key out, to
// provoke false positives.
type alwaysPolicy struct{}

func (alwaysPolicy) Name() string                        { return "test.always" }
func (alwaysPolicy) NewWriter() bloompolicy.FilterWriter { return alwaysWriter{} }
func (alwaysPolicy) MayContain(filter, key []byte) bool  { return true }

type alwaysWriter struct{}

func (alwaysWriter) AddKey([]byte)            {}
func (alwaysWriter) Finish(dst []byte) []byte { return append(dst, 0) }

type hashSetWriter struct{ hashes []uint32 }

func (w *hashSetWriter) AddKey(key []byte) { w.hashes = append(w.hashes, uint32(xxhash.Sum64(key))) }

func (w *hashSetWriter) Finish(dst []byte) []byte {
	slices.Sort(w.hashes)
	for _, h := range slices.Compact(w.hashes) {
		dst = binary.LittleEndian.AppendUint32(dst, h)
	}
	w.hashes = w.hashes[:0]
	return dst
}

// testEntry is one table entry of a test.
type testEntry struct {
	key   base.InternalKey
	value []byte
}

// parseEntry parses "a#3,SET:value", "a#2,DEL", or "a#4,RANGEDEL:e", the
// range tombstone [a, e)#4: an internal key as base.ParseInternalKey reads
// it, then the value after the first colon.
func parseEntry(s string) (testEntry, error) {
	k, v, _ := strings.Cut(s, ":")
	key, err := base.ParseInternalKey(k)
	return testEntry{key: key, value: []byte(v)}, err
}

// buildBytes writes entries as a table in memory and returns its bytes.
func buildBytes(t testing.TB, entries []testEntry, opts WriterOptions) []byte {
	t.Helper()
	data, err := writeBytes(entries, opts)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// tombstone returns the range tombstone a RANGEDEL entry stands for.
func (e testEntry) tombstone() RangeTombstone {
	return RangeTombstone{Start: e.key.UserKey, End: e.value, Seq: e.key.SeqNum()}
}

// isRangeDel reports whether the entry is a range tombstone.
func (e testEntry) isRangeDel() bool { return e.key.Kind() == base.KindRangeDelete }

// addTo adds the entry to w: a RANGEDEL entry to the range-deletion block.
func (e testEntry) addTo(w *Writer) error {
	if e.isRangeDel() {
		return w.AddRangeDel(e.tombstone())
	}
	return w.Add(e.key, e.value)
}

// writeBytes writes entries as a table in memory and returns its bytes.
// RANGEDEL entries go to the range-deletion block.
func writeBytes(entries []testEntry, opts WriterOptions) ([]byte, error) {
	fs := vfs.NewMem()
	f, err := fs.Create("t.sst")
	if err != nil {
		return nil, err
	}
	w := NewWriter(f, opts)
	for _, e := range entries {
		if err := e.addTo(w); err != nil {
			w.Close()
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return readAll(fs, "t.sst")
}

func readAll(fs vfs.FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(f)
	return buf.Bytes(), err
}

// openBytes opens a Reader over a copy of data in a fresh memory FS. (It
// writes a copy: vfs.File.Write may scribble on its argument, and under
// the race detector Pebble's MemFS does.)
func openBytes(data []byte, opts ReaderOptions) (*Reader, error) {
	fs := vfs.NewMem()
	f, err := fs.Create("t.sst")
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(bytes.Clone(data)); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if f, err = fs.Open("t.sst"); err != nil {
		return nil, err
	}
	if opts.FileName == "" {
		opts.FileName = "t.sst"
	}
	return NewReader(f, opts)
}

// openTable is openBytes for a test that needs the table open: it fails
// the test if the table does not open and closes the Reader when the test
// ends.
func openTable(t testing.TB, data []byte, opts ReaderOptions) *Reader {
	t.Helper()
	r, err := openBytes(data, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// filters returns ReaderOptions.Filters holding p.
func filters(p bloompolicy.FilterPolicy) map[string]bloompolicy.FilterPolicy {
	if p == nil {
		return nil
	}
	return map[string]bloompolicy.FilterPolicy{p.Name(): p}
}
