package bloompolicy

import (
	"encoding/binary"
	"testing"
)

// TestWriter_LayoutBoundary pins where the plain layout ends: up to
// plainMaxKeys keys, the most whose body at the textbook (or the fixed) bits
// per key fits plainMaxBytes, a filter is plain; one key more makes it
// blocked. (Sized exactly for a target, the plain body may come out a few
// bytes larger than the textbook's.)
func TestWriter_LayoutBoundary(t *testing.T) {
	for _, c := range []struct {
		name       string
		new        func() (*Bloom, error)
		bitsPerKey float64 // the bits per key plainMaxBytes is measured at
	}{
		{"fpr=0.01", func() (*Bloom, error) { return New(0.01) }, TextbookBitsPerKey(0.01)},
		{"fpr=0.0001", func() (*Bloom, error) { return New(0.0001) }, TextbookBitsPerKey(0.0001)},
		{"bits=8", func() (*Bloom, error) { return NewBitsPerKey(8) }, 8},
		{"bits=10", func() (*Bloom, error) { return NewBitsPerKey(10) }, 10},
	} {
		p, err := c.new()
		if err != nil {
			t.Fatal(err)
		}
		last := p.plainMaxKeys
		if c.bitsPerKey*float64(last) > 8*plainMaxBytes || c.bitsPerKey*float64(last+1) <= 8*plainMaxBytes {
			t.Errorf("%s: plainMaxKeys %d; at %.2f bits/key it is not the last count within %d bytes", c.name, last, c.bitsPerKey, plainMaxBytes)
		}
		for n, wantBlocked := range map[int]bool{last: false, last + 1: true} {
			w := p.NewWriter()
			for i := range n {
				w.AddKey(binary.BigEndian.AppendUint64(nil, uint64(i)))
			}
			info, err := Inspect(w.Finish(nil))
			if err != nil || info.Blocked != wantBlocked {
				t.Errorf("%s: %d keys: %+v, %v; want blocked %v", c.name, n, info, err, wantBlocked)
			}
		}
	}
}

// TestWriter_DuplicateAtChunkEnd checks that a key repeated right after it
// filled a chunk counts once, and that the key added last before Finish
// counts again after it.
func TestWriter_DuplicateAtChunkEnd(t *testing.T) {
	p, err := NewBitsPerKey(10)
	if err != nil {
		t.Fatal(err)
	}
	w := p.NewWriter().(*writer)
	key := func(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }
	for i := range chunkLen {
		w.AddKey(key(i))
	}
	w.AddKey(key(chunkLen - 1))
	if got := w.count(); got != chunkLen {
		t.Errorf("%d keys, the last repeated: count %d", chunkLen, got)
	}
	w.AddKey(key(chunkLen))
	w.AddKey(key(chunkLen))
	if got := w.count(); got != chunkLen+1 {
		t.Errorf("one more key, repeated, in a new chunk: count %d; want %d", got, chunkLen+1)
	}
	w.Finish(nil)
	w.AddKey(key(chunkLen))
	if got := w.count(); got != 1 {
		t.Errorf("after Finish, the last key again: count %d; want 1", got)
	}
}
