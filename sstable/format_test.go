package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

func TestBlockHandle_RoundTrip(t *testing.T) {
	for _, h := range []BlockHandle{{0, 0}, {1, 127}, {128, 16384}, {math.MaxUint64, math.MaxUint64}} {
		enc := appendHandle(nil, h)
		got, n := decodeHandle(enc)
		if n != len(enc) || got != h {
			t.Errorf("decode(encode(%v)) = %v, %d", h, got, n)
		}
		if len(enc) > maxHandleLen {
			t.Errorf("%v encodes to %d bytes", h, len(enc))
		}
	}
}

func TestBlockHandle_Bad(t *testing.T) {
	for _, b := range [][]byte{nil, {0x80}, {0x01}, {0x01, 0x80}, bytes.Repeat([]byte{0xff}, 11)} {
		if _, n := decodeHandle(b); n > 0 {
			t.Errorf("decodeHandle(%x) accepted %d bytes", b, n)
		}
	}
}

func TestFooter_RoundTrip(t *testing.T) {
	f := footer{metaindex: BlockHandle{1000, 50}, index: BlockHandle{1055, 300}, version: FormatVersion}
	enc := f.encode()
	if len(enc) != FooterLen || string(enc[48:]) != "bloomkv1" {
		t.Fatalf("footer %x", enc)
	}
	got, err := decodeFooter(enc)
	if err != nil || got != f {
		t.Fatalf("decodeFooter = %+v, %v", got, err)
	}
}

func TestFooter_Bad(t *testing.T) {
	good := footer{metaindex: BlockHandle{1, 2}, index: BlockHandle{3, 4}, version: FormatVersion}.encode()
	resum := func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[44:], checksum(b[:44]))
		return b
	}
	tests := []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"short", func(b []byte) []byte { return b[1:] }, "footer is 55 bytes"},
		{"magic", func(b []byte) []byte { b[55] ^= 1; return b }, "bad magic"},
		{"checksum", func(b []byte) []byte { b[0] ^= 1; return b }, "footer checksum"},
		{"version 0", func(b []byte) []byte { b[40] = 0; return resum(b) }, "unsupported format version 0"},
		{"padding", func(b []byte) []byte { b[39] = 1; return resum(b) }, "nonzero footer padding"},
		{"handle", func(b []byte) []byte {
			for i := range 40 {
				b[i] = 0xff
			}
			return resum(b)
		}, "bad metaindex handle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeFooter(tt.edit(bytes.Clone(good)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestReader_RangeDelsContradicted checks that a table whose range
// tombstones contradict the rest of it is refused as corrupt rather than
// read without them: a version 1 footer over a range-deletion block, and
// properties counting tombstones the metaindex does not name.
func TestReader_RangeDelsContradicted(t *testing.T) {
	withDels := buildBytes(t, []testEntry{
		{base.MakeInternalKey([]byte("a"), 5, base.KindSet), []byte("x")},
		{base.MakeInternalKey([]byte("b"), 4, base.KindRangeDelete), []byte("d")},
	}, WriterOptions{})
	asV1 := bytes.Clone(withDels)
	ft := asV1[len(asV1)-FooterLen:]
	binary.LittleEndian.PutUint32(ft[footerHandlesLen:], 1)
	binary.LittleEndian.PutUint32(ft[footerHandlesLen+4:], checksum(ft[:footerHandlesLen+4]))

	r := openTable(t, withDels, ReaderOptions{})
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	// Rename the metaindex's range-deletion entry, which readers then skip
	// as unknown, while the properties still count one tombstone.
	noEntry := bytes.Clone(withDels)
	h := l.Metaindex
	block := noEntry[h.Offset : h.Offset+h.Length+blockTrailerLen]
	i := bytes.Index(block, []byte(metaRangeDel))
	if i < 0 || block[h.Length] != byte(blockTypeNone) {
		t.Fatal("metaindex is compressed or lacks the range-deletion entry")
	}
	block[i+len(metaRangeDel)-1] = 'x'
	binary.LittleEndian.PutUint32(block[h.Length+1:], checksum(block[:h.Length+1]))

	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"version 1 with a range-deletion block": {asV1, "format version 1 table has a range-deletion block"},
		"counted tombstones missing":            {noEntry, "the metaindex has no block"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := openBytes(tc.data, ReaderOptions{})
			if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want corruption %q", err, tc.want)
			}
		})
	}
}

// TestNewReader_NotTable opens files that are no table at all: each error
// wraps ErrNotTable (for tools to say so) and ErrCorruption (a store whose
// table reads so is damaged), and names the file. A table whose footer is
// damaged elsewhere is corruption only.
func TestNewReader_NotTable(t *testing.T) {
	table := buildBytes(t, []testEntry{{MakeInternalKey([]byte("a"), 1, KindSet), []byte("x")}}, WriterOptions{})
	badSum := bytes.Clone(table)
	badSum[len(badSum)-10] ^= 1
	tests := []struct {
		name     string
		data     []byte
		notTable bool
	}{
		{"empty", nil, true},
		{"CURRENT", []byte("MANIFEST-000002\n"), true},
		{"text", bytes.Repeat([]byte("not a table "), 10), true},
		{"bad magic", append(bytes.Clone(table[:len(table)-1]), table[len(table)-1]^1), true},
		{"bad footer checksum", badSum, false},
	}
	for _, tt := range tests {
		_, err := openBytes(tt.data, ReaderOptions{FileName: "f.sst"})
		if !errors.Is(err, ErrCorruption) || errors.Is(err, ErrNotTable) != tt.notTable || !strings.Contains(err.Error(), "f.sst") {
			t.Errorf("%s: %v; want ErrCorruption, ErrNotTable %v, and the file name", tt.name, err, tt.notTable)
		}
	}
}
