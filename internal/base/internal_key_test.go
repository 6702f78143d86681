package base

import (
	"bytes"
	"testing"
)

func TestInternalKey_EncodeDecode(t *testing.T) {
	tests := []struct {
		name string
		key  InternalKey
		enc  []byte
	}{
		{"empty user key", MakeInternalKey(nil, 0, KindDelete), []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{"set", MakeInternalKey([]byte("a"), 1, KindSet), []byte{'a', 1, 1, 0, 0, 0, 0, 0, 0}},
		{"max seqnum", MakeInternalKey([]byte("k"), SeqNumMax, KindSet),
			[]byte{'k', 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"delete", MakeInternalKey([]byte("xy"), 0x0102, KindDelete), []byte{'x', 'y', 0, 2, 1, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.key.AppendEncoded(nil); !bytes.Equal(got, tt.enc) {
				t.Fatalf("AppendEncoded = %x, want %x", got, tt.enc)
			}
			buf := make([]byte, tt.key.Size())
			tt.key.Encode(buf)
			if !bytes.Equal(buf, tt.enc) {
				t.Fatalf("Encode = %x, want %x", buf, tt.enc)
			}
			got, ok := DecodeInternalKey(tt.enc)
			if !ok || !bytes.Equal(got.UserKey, tt.key.UserKey) || got.Trailer != tt.key.Trailer {
				t.Fatalf("DecodeInternalKey = %v, %v; want %v", got, ok, tt.key)
			}
		})
	}
}

func TestDecodeInternalKey_Rejects(t *testing.T) {
	tests := []struct {
		name string
		enc  []byte
	}{
		{"empty", nil},
		{"short trailer", []byte{1, 2, 3, 4, 5, 6, 7}},
		{"unknown kind", []byte{'a', 7, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := DecodeInternalKey(tt.enc); ok {
				t.Fatalf("DecodeInternalKey(%x) accepted", tt.enc)
			}
		})
	}
}

func TestInternalCompare(t *testing.T) {
	a1 := MakeInternalKey([]byte("a"), 1, KindSet)
	a2 := MakeInternalKey([]byte("a"), 2, KindSet)
	a2del := MakeInternalKey([]byte("a"), 2, KindDelete)
	b0 := MakeInternalKey([]byte("b"), 0, KindDelete)
	// In order: newer versions first, then the next user key.
	ordered := []InternalKey{MakeSearchKey([]byte("a")), a2, a2del, a1, b0}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := InternalCompare(DefaultComparer.Compare, ordered[i], ordered[j]); got != want {
				t.Errorf("InternalCompare(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}

func TestInternalKey_Visible(t *testing.T) {
	k := MakeInternalKey([]byte("a"), 5, KindSet)
	if k.Visible(4) || !k.Visible(5) || !k.Visible(SeqNumMax) {
		t.Fatal("a version is visible exactly to reads at its sequence number or later")
	}
}

func TestComparer_SeparatorSuccessor(t *testing.T) {
	sep := []struct{ a, b, want string }{
		{"abc", "abe", "abd"},
		{"abc", "abd", "abc"},        // no room between them
		{"abc", "abcd", "abc"},       // a is a prefix of b
		{"a\xff", "b", "a\xff"},      // no byte to increment
		{"apple", "banana", "apple"}, // 'a'+1 is 'b', not below "banana": a stays whole
		{"apple", "cherry", "b"},     // shortened to one byte
	}
	for _, tt := range sep {
		got := string(DefaultComparer.Separator(nil, []byte(tt.a), []byte(tt.b)))
		if got != tt.want {
			t.Errorf("Separator(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
		if got < tt.a || got >= tt.b {
			t.Errorf("Separator(%q, %q) = %q, not in [a, b)", tt.a, tt.b, got)
		}
	}
	succ := []struct{ a, want string }{
		{"abc", "b"},
		{"\xff\xffz", "\xff\xff{"},
		{"\xff\xff", "\xff\xff"},
		{"", ""},
	}
	for _, tt := range succ {
		if got := string(DefaultComparer.Successor(nil, []byte(tt.a))); got != tt.want {
			t.Errorf("Successor(%q) = %q, want %q", tt.a, got, tt.want)
		}
	}
}
