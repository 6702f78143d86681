package kv

import (
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestBitFlip_Table sweeps the bits of an L0 table holding point keys,
// point tombstones and range tombstones over the keys of an older table
// below it: every bit of its footer, metaindex, index, properties and
// range-deletion blocks (trailers included), and a sample of the bits of
// its data and filter blocks (every bit with -sweep=full). A flipped bit
// must never hide a present key, show a wrong value or bring back a
// deleted one.
func TestBitFlip_Table(t *testing.T) {
	s := buildTableFlipStore(t)
	name := s.newestTable(t)
	l := tableLayout(t, s.fs, "db/"+name)
	if l.RangeDel.Length == 0 || l.Filter.Length == 0 || len(l.Data) < 3 {
		t.Fatalf("%s: want range tombstones, a filter and several data blocks: %+v", name, l)
	}
	every := make(map[int64]bool) // bytes whose every bit is flipped
	sampled := make(map[int64]bool)
	mark := func(m map[int64]bool, h sstable.BlockHandle) {
		for off := h.Offset; off < h.Offset+h.Length; off++ {
			m[int64(off)] = true
		}
		for off := h.Offset + h.Length; off < h.Offset+h.Length+sstableBlockTrailerLen; off++ {
			every[int64(off)] = true
		}
	}
	for _, h := range []sstable.BlockHandle{l.Metaindex, l.Index, l.Properties, l.RangeDel} {
		mark(every, h)
	}
	for off := l.Footer.Offset; off < l.Footer.Offset+sstable.FooterLen; off++ {
		every[int64(off)] = true
	}
	for _, d := range l.Data {
		mark(sampled, d.Handle)
	}
	mark(sampled, l.Filter)
	// A stride prime to 8 samples every bit position of the sampled
	// bytes, and every byte but a few.
	stride := int64(13)
	if fullSweep() {
		stride = 1
	}
	want := func(bit int64) bool { return every[bit/8] || sampled[bit/8] && bit%stride == 0 }
	min := 8*len(every) + 8*len(sampled)/int(stride)
	s.sweepBits(t, name, want, min)
}

// sstableBlockTrailerLen is the size of a block trailer: compression type
// and checksum (see sstable/doc.go).
const sstableBlockTrailerLen = 5

// buildTableFlipStore builds a store of two tables: an older one, in the
// deepest level, of keys k0000 on; and a newer one in L0 that overwrites
// some, adds others and deletes some of the older keys by point and range
// tombstones. Every write is synced; the WAL holds none once it is closed.
func buildTableFlipStore(t *testing.T) *sweepStore {
	t.Helper()
	bloom, err := bloompolicy.New(0.01)
	if err != nil {
		t.Fatal(err)
	}
	s := &sweepStore{
		fs: vfs.NewMem(),
		opts: Options{MemTableSize: 64 << 10, BlockSize: 256, DisableAutomaticCompactions: true,
			FilterPolicy: bloom},
		values: make(map[string]string),
	}
	o := s.opts
	o.FS = s.fs
	d, err := Open("db", &o)
	if err != nil {
		t.Fatal(err)
	}
	n := 40
	if fullSweep() {
		n = 400
	}
	set := func(i int, v string) {
		if err := d.Set([]byte(sweepKey(i)), []byte(v), Sync); err != nil {
			t.Fatal(err)
		}
		s.values[sweepKey(i)] = v
	}
	for i := range n {
		set(i, strings.Repeat("old.", 6))
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Compact([]byte("a"), []byte("z")); err != nil {
		t.Fatal(err)
	}
	for i := n; i < 2*n; i++ {
		set(i, strings.Repeat("new.", 6))
	}
	for i := 0; i < n; i += 5 {
		set(i, strings.Repeat("upd.", 5))
	}
	for i := 3; i < n; i += 9 {
		if err := d.Delete([]byte(sweepKey(i)), Sync); err != nil {
			t.Fatal(err)
		}
		s.forget(sweepKey(i), sweepKey(i)+"\x00")
	}
	for i := 6; i+3 < n; i += 13 {
		lo, hi := sweepKey(i), sweepKey(i+3)
		if err := d.DeleteRange([]byte(lo), []byte(hi), Sync); err != nil {
			t.Fatal(err)
		}
		s.forget(lo, hi)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return s
}

// forget removes the keys in [lo, hi) from the model, as deleted.
func (s *sweepStore) forget(lo, hi string) {
	for k := range s.values {
		if lo <= k && k < hi {
			delete(s.values, k)
			s.gone = append(s.gone, k)
		}
	}
}

// newestTable returns the name of the store's table with the highest
// number.
func (s *sweepStore) newestTable(t *testing.T) string {
	t.Helper()
	names, err := s.fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") {
			tables = append(tables, n)
		}
	}
	if len(tables) < 2 {
		t.Fatalf("want two tables, have %q", names)
	}
	slices.Sort(tables)
	return tables[len(tables)-1]
}

// tableLayout returns the layout of the table at path.
func tableLayout(t *testing.T, fs vfs.FS, path string) *sstable.Layout {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	bloom, _ := bloompolicy.New(0.01)
	r, err := sstable.NewReader(f, sstable.ReaderOptions{
		FileName: path,
		Filters:  map[string]bloompolicy.FilterPolicy{bloom.Name(): bloom},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l
}
