package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/pebble/vfs"
)

func newMemWriter(t *testing.T, opts WriterOptions) (*Writer, vfs.FS) {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.Create("t.sst")
	if err != nil {
		t.Fatal(err)
	}
	return NewWriter(f, opts), fs
}

// TestWriter_EstimatedSize checks that the estimate grows with every entry
// and, without compression, counts the data blocks exactly: what compaction
// cuts output tables by.
func TestWriter_EstimatedSize(t *testing.T) {
	w, _ := newMemWriter(t, WriterOptions{BlockSize: 64, Compression: NoCompression})
	if got := w.EstimatedSize(); got != 0 {
		t.Fatalf("empty writer: EstimatedSize = %d, want 0", got)
	}
	var last uint64
	for i := range 50 {
		key := base.MakeInternalKey([]byte(fmt.Sprintf("key%03d", i)), 1, base.KindSet)
		if err := w.Add(key, []byte("value")); err != nil {
			t.Fatal(err)
		}
		got := w.EstimatedSize()
		if got <= last {
			t.Fatalf("after entry %d: EstimatedSize = %d, was %d", i, got, last)
		}
		last = got
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	m := w.Metadata()
	if m.Properties.NumDataBlocks < 2 {
		t.Fatalf("%d data blocks, want several", m.Properties.NumDataBlocks)
	}
	if last != m.Properties.DataSize {
		t.Fatalf("EstimatedSize before Close = %d, data blocks hold %d", last, m.Properties.DataSize)
	}
}

// TestWriter_Add_Rejects checks that a rejected entry leaves the Writer
// usable, and that a closed Writer refuses everything.
func TestWriter_Add_Rejects(t *testing.T) {
	w, fs := newMemWriter(t, WriterOptions{})
	b2 := base.MakeInternalKey([]byte("b"), 2, base.KindSet)
	if err := w.Add(b2, []byte("v")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		key  base.InternalKey
		want string
	}{
		{base.InternalKey{UserKey: []byte("c"), Trailer: base.MakeTrailer(1, base.KindMax+1)}, "unknown kind"},
		{base.MakeInternalKey([]byte("a"), 3, base.KindSet), "keys must increase"},
		{b2, "keys must increase"},
	} {
		if err := w.Add(tt.key, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Add(%s) = %v, want an error containing %q", tt.key, err, tt.want)
		}
	}
	if err := w.Add(base.MakeInternalKey([]byte("c"), 1, base.KindDelete), nil); err != nil {
		t.Fatalf("Add after a rejected entry: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if p := w.Metadata().Properties; p.NumEntries != 2 || p.NumDeletions != 1 {
		t.Fatalf("table holds %d entries, %d deletions; want 2, 1", p.NumEntries, p.NumDeletions)
	}
	if err := w.Add(base.MakeInternalKey([]byte("d"), 1, base.KindSet), nil); !errors.Is(err, errWriterClosed) {
		t.Fatalf("Add after Close = %v, want %v", err, errWriterClosed)
	}
	if err := w.Close(); !errors.Is(err, errWriterClosed) {
		t.Fatalf("second Close = %v, want %v", err, errWriterClosed)
	}
	data, err := readAll(fs, "t.sst")
	if err != nil {
		t.Fatal(err)
	}
	r := openTable(t, data, ReaderOptions{})
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestCompression_String(t *testing.T) {
	for c, want := range map[Compression]string{SnappyCompression: "snappy", NoCompression: "none", 7: "Compression(7)"} {
		if got := c.String(); got != want {
			t.Errorf("Compression(%d).String() = %q, want %q", uint8(c), got, want)
		}
	}
}

// TestWriter_AddRangeDel_Rejects checks that tombstones out of fragmented
// order, empty ones and point keys of kind RANGEDEL are refused, and that
// the Writer stays usable after each refusal.
func TestWriter_AddRangeDel_Rejects(t *testing.T) {
	rd := func(start, end string, seq base.SeqNum) RangeTombstone {
		return RangeTombstone{Start: []byte(start), End: []byte(end), Seq: seq}
	}
	tests := []struct {
		name  string
		first RangeTombstone
		next  RangeTombstone
		want  string
	}{
		{"overlap", rd("b", "d", 5), rd("c", "e", 4), "overlaps"},
		{"before", rd("c", "d", 5), rd("a", "b", 4), "overlaps"},
		{"same span, seqnum not below", rd("b", "d", 5), rd("b", "d", 5), "must descend"},
		{"empty", rd("a", "b", 5), rd("e", "e", 4), "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := newMemWriter(t, WriterOptions{})
			if err := w.AddRangeDel(tt.first); err != nil {
				t.Fatal(err)
			}
			if err := w.AddRangeDel(tt.next); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("AddRangeDel(%s) after %s = %v, want %q", tt.next, tt.first, err, tt.want)
			}
			if err := w.Add(base.MakeInternalKey([]byte("x"), 1, base.KindRangeDelete), []byte("y")); err == nil {
				t.Fatal("Add took a RANGEDEL key")
			}
			if err := w.AddRangeDel(rd("x", "y", 3)); err != nil {
				t.Fatalf("writer unusable after a refusal: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.AddRangeDel(rd("y", "z", 2)); err == nil {
				t.Fatal("AddRangeDel after Close succeeded")
			}
		})
	}
}

// TestWriter_SeparatorBreaksContract writes tables with comparers whose
// Separator or Successor return keys outside their contract (at or past
// the next key, below the last, longer than it): the writer falls back
// to the last key, so every key is found by Get and by a seek, and the
// table checks whole.
func TestWriter_SeparatorBreaksContract(t *testing.T) {
	var entries []testEntry
	for i := range 500 {
		k := fmt.Appendf(nil, "p%03d/%05d", i/5, i)
		entries = append(entries, testEntry{base.MakeInternalKey(k, 1, base.KindSet), k})
	}
	for name, bad := range map[string]func(c *base.Comparer){
		"separator at or past next": func(c *base.Comparer) {
			c.Separator = func(dst, a, b []byte) []byte { return append(dst, "p9"...) }
		},
		"separator below last": func(c *base.Comparer) {
			c.Separator = func(dst, a, b []byte) []byte { return append(dst, "a"...) }
		},
		"successor below last": func(c *base.Comparer) {
			c.Successor = func(dst, a []byte) []byte { return append(dst, "a"...) }
		},
	} {
		c := *base.DefaultComparer
		c.Name = "test.bad"
		bad(&c)
		r := openTable(t, buildBytes(t, entries, WriterOptions{BlockSize: 256, Comparer: &c}), ReaderOptions{Comparer: &c})
		if err := r.Check(); err != nil {
			t.Fatalf("%s: Check: %v", name, err)
		}
		it, err := r.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			v, _, found, err := r.Get(e.key.UserKey, base.SeqNumMax, nil)
			if err != nil || !found || !bytes.Equal(v, e.value) {
				t.Fatalf("%s: Get(%s) = %q, %v, %v", name, e.key.UserKey, v, found, err)
			}
			if !it.SeekGE(e.key.UserKey) || !bytes.Equal(it.Key().UserKey, e.key.UserKey) {
				t.Fatalf("%s: SeekGE(%s) lands on %s", name, e.key.UserKey, it.Key().UserKey)
			}
		}
		it.Close()
		r.Close()
	}
}

// TestWriterOptions_BlockSizeBound: a BlockSize above MaxBlockSize is
// taken as MaxBlockSize, so that no block outgrows its restart points'
// 32-bit offsets; the bound itself and smaller sizes stand.
func TestWriterOptions_BlockSizeBound(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{0, DefaultBlockSize}, {1, 1}, {MaxBlockSize, MaxBlockSize},
		{MaxBlockSize + 1, MaxBlockSize}, {1 << 40, MaxBlockSize},
	} {
		if got := (WriterOptions{BlockSize: tc.in}).withDefaults().BlockSize; got != tc.want {
			t.Errorf("BlockSize %d: writer cuts at %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestWriter_SingleBlockBounds: the index and range-deletion blocks are
// one block each, whatever the table holds, and their restart points are
// 32-bit offsets, so the Writer refuses the entry that could take either
// past maxBlockLen (lowered here), naming the block, and stays usable:
// the table it closes holds everything added before, and reads back.
func TestWriter_SingleBlockBounds(t *testing.T) {
	t.Run("index", func(t *testing.T) {
		w, fs := newMemWriter(t, WriterOptions{BlockSize: 1, Compression: NoCompression}) // a block an entry
		w.blockLimit = 400
		added := 0
		var err error
		for ; added < 1000; added++ {
			if err = w.Add(base.MakeInternalKey(fmt.Appendf(nil, "key%04d", added), 1, base.KindSet), []byte("v")); err != nil {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), "index block would pass 400 bytes") {
			t.Fatalf("after %d entries: %v, want the index block's bound", added, err)
		}
		if added < 5 {
			t.Fatalf("refused at entry %d: the bound leaves room for more", added)
		}
		checkClosedTable(t, w, fs, added, 0)
	})
	t.Run("range deletions", func(t *testing.T) {
		w, fs := newMemWriter(t, WriterOptions{})
		w.blockLimit = 400
		added := 0
		var err error
		for ; added < 1000; added++ {
			del := RangeTombstone{Start: fmt.Appendf(nil, "a%04d", added), End: fmt.Appendf(nil, "a%04d~", added), Seq: 5}
			if err = w.AddRangeDel(del); err != nil {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), "range-deletion block would pass 400 bytes") {
			t.Fatalf("after %d tombstones: %v, want the range-deletion block's bound", added, err)
		}
		if added < 5 {
			t.Fatalf("refused at tombstone %d: the bound leaves room for more", added)
		}
		checkClosedTable(t, w, fs, 0, added)
	})
}

// checkClosedTable closes w and reads its table back from fs: points
// entries and tombstones tombstones, and a clean Check.
func checkClosedTable(t *testing.T, w *Writer, fs vfs.FS, points, tombstones int) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open("t.sst")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(f, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	it, err := r.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n != points || len(r.RangeDels()) != tombstones {
		t.Fatalf("table holds %d entries and %d tombstones, want %d and %d", n, len(r.RangeDels()), points, tombstones)
	}
}
