package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

func TestFilterBlock_RoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 2, 50} {
		w := newFilterBlockWriter(hashSetPolicy{})
		for i := 0; i < n; i++ {
			for j := 0; j < i%7; j++ { // some filters are empty
				w.addKey(fmt.Appendf(nil, "k%d.%d", i, j))
			}
			w.finishFilter()
		}
		fb, err := decodeFilterBlock(w.finish(), n)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			f := fb.filter(i)
			if len(f) != 4*(i%7) {
				t.Fatalf("filter %d has %d bytes", i, len(f))
			}
			for j := 0; j < i%7; j++ {
				if !(hashSetPolicy{}).MayContain(f, fmt.Appendf(nil, "k%d.%d", i, j)) {
					t.Fatalf("filter %d lost key %d", i, j)
				}
			}
		}
	}
}

func TestFilterBlock_Bad(t *testing.T) {
	block := func(filters []byte, lengths ...byte) []byte {
		b := append(bytes.Clone(filters), lengths...)
		return binary.LittleEndian.AppendUint32(b, uint32(len(filters)))
	}
	tests := []struct {
		name string
		data []byte
		want int
	}{
		{"short", []byte{0, 0}, 0},
		{"offset beyond", binary.LittleEndian.AppendUint32(nil, 10), 0},
		{"too few lengths", block([]byte("abcd"), 4), 2},
		{"too many lengths", block([]byte("abcd"), 2, 2), 1},
		{"lengths overrun", block([]byte("abcd"), 3, 3), 2},
		{"lengths short", block([]byte("abcd"), 1, 1), 2},
		{"bad varint", block([]byte("abcd"), 0x80), 1},
		{"huge count", block(nil), 1 << 30},
	}
	for _, tt := range tests {
		if _, err := decodeFilterBlock(tt.data, tt.want); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}
