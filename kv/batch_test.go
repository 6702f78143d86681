package kv

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// TestBatch_Encoding pins the exact bytes of small batches.
func TestBatch_Encoding(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *Batch) error
		seq   base.SeqNum
		want  string // hex
	}{
		{"empty", func(b *Batch) error { return nil }, 0, ""},
		{
			"one set", func(b *Batch) error { return b.Set([]byte("a"), []byte("xy")) }, 7,
			"0700000000000000" + "01000000" + "01" + "01" + "61" + "02" + "7879",
		},
		{
			"set and delete", func(b *Batch) error {
				return errors.Join(b.Set([]byte("k"), nil), b.Delete([]byte("kk")))
			}, 0x0102,
			"0201000000000000" + "02000000" + "01016b00" + "00026b6b00",
		},
		{
			"range deletion: start as key, end as value", func(b *Batch) error { return b.DeleteRange([]byte("a"), []byte("cd")) }, 3,
			"0300000000000000" + "01000000" + "02" + "01" + "61" + "02" + "6364",
		},
		{
			"long key uses two varint bytes", func(b *Batch) error { return b.Set(bytes.Repeat([]byte("z"), 200), nil) }, 1,
			"0100000000000000" + "01000000" + "01" + "c801" + strings.Repeat("7a", 200) + "00",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b Batch
			must(t, tc.build(&b))
			if !b.Empty() {
				b.setSeqNum(tc.seq)
			}
			if got := hex.EncodeToString(b.data); got != tc.want {
				t.Fatalf("encoding\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestBatch_RoundTrip decodes what the batch encoded.
func TestBatch_RoundTrip(t *testing.T) {
	var b Batch
	want := []batchRecord{
		{base.KindSet, []byte("apple"), []byte("red")},
		{base.KindDelete, []byte("pear"), nil},
		{base.KindSet, []byte(""), []byte("empty key")},
		{base.KindSet, []byte("big"), bytes.Repeat([]byte{0xff}, 1000)},
		{base.KindRangeDelete, []byte("a"), []byte("z")},
		{base.KindRangeDelete, []byte("z"), []byte("a")},
	}
	for _, r := range want {
		var err error
		switch r.Kind {
		case base.KindSet:
			err = b.Set(r.Key, r.Value)
		case base.KindDelete:
			err = b.Delete(r.Key)
		default:
			err = b.DeleteRange(r.Key, r.Value)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	b.setSeqNum(100)
	if b.Count() != len(want) {
		t.Fatalf("Count = %d, want %d", b.Count(), len(want))
	}
	got, err := decodeBatch(b.data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("decoded %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != fmt.Sprintf("%d %s %q %q", 100+i, want[i].Kind, want[i].Key, want[i].Value) {
			t.Errorf("record %d = %s", i, got[i])
		}
	}
}

// TestBatch_Reset makes a batch reusable and clears its error.
func TestBatch_Reset(t *testing.T) {
	var b Batch
	must(t, b.Set([]byte("a"), []byte("1")))
	if err := b.Set(make([]byte, MaxKeySize+1), nil); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("oversized key: err = %v", err)
	}
	if err := b.Set([]byte("b"), nil); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("spoiled batch accepted a write: err = %v", err)
	}
	b.Reset()
	if !b.Empty() || b.Count() != 0 || b.Len() != batchHeaderLen || b.err != nil {
		t.Fatalf("after Reset: count %d len %d err %v", b.Count(), b.Len(), b.err)
	}
	if err := b.Set([]byte("c"), nil); err != nil {
		t.Fatal(err)
	}
}

// TestBatch_Close empties a batch and passes its buffer on: batches made
// after it, and the closed batch used again, hold their own writes only,
// however the buffers went round.
func TestBatch_Close(t *testing.T) {
	d, _ := openMem(t, nil)
	defer mustClose(t, d)
	b1 := d.NewBatch()
	must(t, b1.Set([]byte("a"), []byte("1")))
	must(t, b1.Set([]byte("b"), []byte("2")))
	if err := d.Apply(b1, NoSync); err != nil {
		t.Fatal(err)
	}
	b1.Close()
	if !b1.Empty() || b1.Len() != batchHeaderLen || b1.err != nil {
		t.Fatalf("after Close: count %d len %d err %v", b1.Count(), b1.Len(), b1.err)
	}
	for i := range 3 {
		b := d.NewBatch()
		must(t, b.Set(fmt.Appendf(nil, "c%d", i), []byte("3")))
		must(t, b1.Set(fmt.Appendf(nil, "d%d", i), []byte("4")))
		if b.Count() != 1 || b1.Count() != 1 {
			t.Fatalf("round %d: batches of %d and %d writes, want 1 each", i, b.Count(), b1.Count())
		}
		if err := d.Apply(b, NoSync); err != nil {
			t.Fatal(err)
		}
		if err := d.Apply(b1, NoSync); err != nil {
			t.Fatal(err)
		}
		b.Close()
		b1.Close()
	}
	for _, k := range []string{"a", "b", "c0", "c1", "c2", "d0", "d1", "d2"} {
		if _, err := d.Get([]byte(k)); err != nil {
			t.Fatalf("Get(%q): %v", k, err)
		}
	}
}

// TestBatch_Limits checks each limit at its edge.
func TestBatch_Limits(t *testing.T) {
	var b Batch
	if err := b.Set(make([]byte, MaxKeySize), nil); err != nil {
		t.Fatalf("key of MaxKeySize: %v", err)
	}
	if err := b.Delete(make([]byte, MaxKeySize+1)); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("key of MaxKeySize+1: %v", err)
	}
	for _, tc := range []struct{ start, end int }{{MaxKeySize + 1, 1}, {1, MaxKeySize + 1}} {
		b.Reset()
		if err := b.DeleteRange(make([]byte, tc.start), make([]byte, tc.end)); !errors.Is(err, ErrKeyTooLarge) {
			t.Fatalf("range of %d and %d bytes: %v", tc.start, tc.end, err)
		}
		if err := b.Set([]byte("x"), nil); !errors.Is(err, ErrKeyTooLarge) {
			t.Fatalf("batch spoiled by an oversized range accepted a write: %v", err)
		}
	}
	b.Reset()
	if err := b.DeleteRange(make([]byte, MaxKeySize), make([]byte, MaxKeySize)); err != nil {
		t.Fatalf("range of MaxKeySize keys: %v", err)
	}
	b.Reset()
	if err := b.Set(nil, make([]byte, MaxValueSize+1)); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("value of MaxValueSize+1: %v", err)
	}
	if testing.Short() {
		return
	}
	b.Reset()
	big := make([]byte, MaxValueSize)
	var err error
	for i := 0; err == nil && i < MaxBatchSize/MaxValueSize+1; i++ {
		err = b.Set(nil, big)
	}
	if !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("filling a batch: err = %v", err)
	}
	if b.Len() > MaxBatchSize {
		t.Fatalf("batch grew to %d bytes", b.Len())
	}
	// A batch of exactly MaxBatchSize bytes is taken, and not a byte more.
	b.Reset()
	for range 3 {
		must(t, b.Set(nil, big))
	}
	rest := MaxBatchSize - b.Len() - 1 - 1 // the kind, the empty key's length
	last := rest - uvarintLen(rest)
	if uvarintLen(last) != uvarintLen(rest) || last > MaxValueSize {
		t.Fatalf("no value fills the batch to MaxBatchSize exactly (rest %d)", rest)
	}
	must(t, b.Set(nil, big[:last]))
	if b.Len() != MaxBatchSize {
		t.Fatalf("batch of %d bytes, want MaxBatchSize (%d)", b.Len(), MaxBatchSize)
	}
	if err := b.Set(nil, nil); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("a byte past MaxBatchSize: %v", err)
	}
}

// TestUvarintLen checks uvarintLen against binary.PutUvarint at each
// length's bounds.
func TestUvarintLen(t *testing.T) {
	var buf [binary.MaxVarintLen64]byte
	for _, n := range []int{0, 1, 127, 128, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, 1<<35 - 1, 1 << 35, math.MaxInt} {
		if got, want := uvarintLen(n), binary.PutUvarint(buf[:], uint64(n)); got != want {
			t.Errorf("uvarintLen(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestBatchReader_Corrupt feeds damaged batches to the decoder.
func TestBatchReader_Corrupt(t *testing.T) {
	var b Batch
	must(t, b.Set([]byte("key"), []byte("value")))
	must(t, b.Delete([]byte("gone")))
	good := b.data
	mutate := func(f func(p []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"short header", good[:11], "shorter than its header"},
		{"truncated record", good[:len(good)-3], "batch record 1"},
		{"missing record", good[:batchHeaderLen+1+1+3+1+5], "ends after 1 of 2 records"},
		{"trailing bytes", append(append([]byte(nil), good...), 0), "trailing bytes"},
		{"unknown kind", mutate(func(p []byte) []byte { p[12] = 7; return p }), "unknown kind 7"},
		{"key overruns", mutate(func(p []byte) []byte { p[13] = 0x7f; return p }), "overruns"},
		{"bad varint", mutate(func(p []byte) []byte {
			return append(p[:13], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		}), "bad key length"},
		{"delete with value", mutate(func(p []byte) []byte { p[len(p)-1] = 1; return append(p, 'x') }), "DEL with a value"},
		{"seqnum overflow", mutate(func(p []byte) []byte {
			copy(p, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00})
			return p
		}), "overflows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeBatch(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// decodeBatch formats every record of data as "seq KIND key value".
func decodeBatch(data []byte) ([]string, error) {
	r, err := newBatchReader(data)
	if err != nil {
		return nil, err
	}
	var out []string
	for {
		rec, seq, ok, err := r.Next()
		if err != nil {
			return out, err
		}
		if !ok {
			return out, nil
		}
		out = append(out, fmt.Sprintf("%d %s %q %q", seq, rec.Kind, rec.Key, rec.Value))
	}
}

// FuzzBatchDecode checks that no bytes make the decoder panic, and that what
// decodes re-encodes to a batch that decodes to the same records (the
// encoding may differ: a non-minimal varint decodes fine).
func FuzzBatchDecode(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/batch-corpus/*")
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	var b Batch
	must(f, b.Set([]byte("a"), []byte("1")))
	must(f, b.Delete([]byte("b")))
	must(f, b.DeleteRange([]byte("c"), []byte("d")))
	f.Add(append([]byte(nil), b.data...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := decodeBatch(data)
		if err != nil {
			return
		}
		r, _ := newBatchReader(data)
		var re Batch
		for {
			rec, _, ok, err := r.Next()
			if err != nil {
				t.Fatalf("second decode failed: %v", err)
			}
			if !ok {
				break
			}
			if err := re.add(rec.Kind, rec.Key, rec.Value); err != nil {
				return
			}
		}
		if re.Empty() {
			return
		}
		re.setSeqNum(r.SeqNum())
		again, err := decodeBatch(re.data)
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		if fmt.Sprint(again) != fmt.Sprint(recs) {
			t.Fatalf("round trip differs:\n got %q\nwant %q", again, recs)
		}
	})
}
