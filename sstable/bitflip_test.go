package sstable

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

var sweepMode = flag.String("sweep", "short", "bit-flip sweeps: short (a sample of the data blocks' bits) or full (every bit)")

// TestBitFlip_TableRegions flips single bits of a table holding point
// keys, tombstones and range tombstones: every bit of its footer,
// metaindex, index, properties, range-deletion and filter blocks
// (trailers included), and a sample of its data blocks' bits (every bit
// with -sweep=full). After each flip the table is opened and read whole
// (iteration both ways, a compaction pass, range tombstones, Get of every
// key, Check): the damage must be reported as corruption naming the file
// and offset, at NewReader or at a read, and nothing read may be wrong.
func TestBitFlip_TableRegions(t *testing.T) {
	policy := newBloom(t, 0.01)
	entries, data := smallTable(t, policy)
	l, err := openTable(t, data, ReaderOptions{Filters: filters(policy)}).Layout()
	if err != nil {
		t.Fatal(err)
	}
	if l.RangeDel.Length == 0 || l.Filter.Length == 0 {
		t.Fatalf("the test table has no range tombstones or no filter: %+v", l)
	}
	stride := 5 // prime to 8: every bit position, most bytes
	if *sweepMode == "full" {
		stride = 1
	}
	regions := []struct {
		name    string
		handles []BlockHandle
		stride  int
	}{
		{"footer", []BlockHandle{{Offset: l.Footer.Offset, Length: FooterLen - blockTrailerLen}}, 1},
		{"metaindex", []BlockHandle{l.Metaindex}, 1},
		{"index", []BlockHandle{l.Index}, 1},
		{"properties", []BlockHandle{l.Properties}, 1},
		{"range-del", []BlockHandle{l.RangeDel}, 1},
		{"filter", []BlockHandle{l.Filter}, 1},
		{"data", dataHandles(l), stride},
	}
	for _, rg := range regions {
		var atOpen, atRead, flips int
		for _, h := range rg.handles {
			// A block's trailer follows it; the footer is FooterLen long.
			for bit := 8 * h.Offset; bit < 8*(h.Offset+h.Length+blockTrailerLen); bit += uint64(rg.stride) {
				bad := bytes.Clone(data)
				bad[bit/8] ^= 1 << (bit % 8)
				where := fmt.Sprintf("%s: bit %d of byte %d", rg.name, bit%8, bit/8)
				if _, err := openBytes(bad, ReaderOptions{Filters: filters(policy)}); err != nil {
					requireTableCorruption(t, where, err)
					atOpen++
				} else if err := verifyTable(entries, bad, policy); err != nil {
					requireTableCorruption(t, where, err)
					atRead++
				} else {
					t.Fatalf("%s: the damage went unnoticed", where)
				}
				flips++
			}
		}
		want := 0
		for _, h := range rg.handles {
			want += 8 * int(h.Length+blockTrailerLen) / rg.stride
		}
		t.Logf("%s: %d flips tried: %d ErrCorruption at NewReader, %d ErrCorruption at a read, 0 unnoticed",
			rg.name, flips, atOpen, atRead)
		if flips < want || flips == 0 {
			t.Fatalf("%s: %d flips tried, want %d", rg.name, flips, want)
		}
	}
}

// TestBitFlip_FilterBitCleared clears, one at a time, every set bit of the
// filter block's contents, the damage that would make a filter answer
// "absent" for a present key. The filter block's trailer checksum
// (xxhash64 over the whole block, every filter in it, as any block's) must
// catch each at NewReader, which reads the filter block whole: no lookup
// ever consults a damaged filter.
func TestBitFlip_FilterBitCleared(t *testing.T) {
	policy := newBloom(t, 0.01)
	_, data := smallTable(t, policy)
	l, err := openTable(t, data, ReaderOptions{Filters: filters(policy)}).Layout()
	if err != nil {
		t.Fatal(err)
	}
	h := l.Filter
	cleared := 0
	for off := h.Offset; off < h.Offset+h.Length; off++ {
		for b := range 8 {
			if data[off]&(1<<b) == 0 {
				continue
			}
			bad := bytes.Clone(data)
			bad[off] &^= 1 << b
			_, err := openBytes(bad, ReaderOptions{Filters: filters(policy)})
			want := fmt.Sprintf("t.sst: offset %d: block checksum", h.Offset)
			if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), want) {
				t.Fatalf("bit %d of byte %d cleared: NewReader: %v, want an error containing %q", b, off, err, want)
			}
			cleared++
		}
	}
	t.Logf("filter block of %d bytes: %d set bits cleared, each caught by its trailer checksum", h.Length, cleared)
	if cleared < int(h.Length) {
		t.Fatalf("only %d bits cleared in a %d-byte filter block", cleared, h.Length)
	}
}

// dataHandles returns the handles of the table's data blocks.
func dataHandles(l *Layout) []BlockHandle {
	var hs []BlockHandle
	for _, d := range l.Data {
		hs = append(hs, d.Handle)
	}
	return hs
}

// requireTableCorruption fails the test unless err wraps ErrCorruption
// and names the table and an offset.
func requireTableCorruption(t *testing.T, where string, err error) {
	t.Helper()
	if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "t.sst") || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("%s: %v, want corruption naming t.sst and an offset", where, err)
	}
}
